// The steps of a lowered graph (graph/lower.hpp makes them), the units every backend runs. A step
// is one node, or a group of nodes one fused kernel (or a short fixed sequence of kernels)
// computes:
//
//   op          one node as it is; or, where the backend takes the experts steps, a router's softmax
//               and the top_k of it (node: the top_k), when only the top_k and the expert_weights
//               of its picks read the probabilities, led by the router's float mul_mat when the
//               softmax alone reads its logits; or the router's float mul_mat, the add of its bias
//               and the top_k of the biased logits (gpt-oss), read alike
//   norm        [s = a + b] -> n = rms_norm(s or x) -> [p = n ⊙ w]      (w: a one-column weight;
//               a grouped rms_norm (no add) with w one group long where the backend takes it,
//               else it stays an op step, as does a w of any other length)
//   matvec      the quantized mul_mats that read one activation x: x is rounded through Q8_1
//               once for all of them (by the step that produced x when it can, see `rounds`);
//               each with the add of its bias (a one-column f32 weight) where that add is the
//               product's only reader (the product then internal, the add's result the product)
//   rope_cache  q' = rope(q), k' = rope(k), K[pos] = k', V[pos] = v   (the inputs of one attention;
//               both ropes with the same parameters, YaRN's included, and frequency factors);
//               where the backend takes them, q and k may first be per-head RMS norms times a
//               head-long weight (qwen3's q/k norms), which only the ropes read
//   attention   one attention node (the CUDA backend splits it over the cache and combines)
//   experts     the quantized mul_mat_ids that read one activation x with one ids list (the
//               experts' gate and up), each with the add_id of its bias where that add_id is the
//               product's only reader: x is rounded through Q8_1 once for all of them
//   swiglu      one swiglu node, or one swiglu_oai node where the backend takes the experts steps
//
// A fused step carries every parameter of its nodes (a rope's YaRN terms, an attention's window
// and sinks): a backend that cannot compute one refuses the node when it prepares the plan,
// whatever step holds it, rather than run the step without it.
//
// Fusion never changes a value: every fused step computes the bits of its nodes run one by one
// (the CPU backend runs both forms, and the tests hold them against each other). What fusion
// changes is which results reach memory:
//
//   internal     a node that only its own step reads (rms_norm before its product, k' before its
//                cache write) is never written: storage::none in the plan
//   rounds       a step whose result is read only by quantized mul_mats writes the result's Q8_1
//                rounding for them (the backend's layout, backend::rounded_bytes) and, unless the
//                result is an output or read elsewhere, not the result itself; the same for the
//                quantized mul_mat_ids of one experts step (other readers, such as the float
//                router, then read the result itself, which stays written), whose slots are
//                whole Q8_1 blocks
//   stacked      a matvec step whose products are read only by steps that take columns further
//                apart (the rope_cache that takes q, k and v, or the grouped norms of q and k
//                before it; the swiglu that takes gate and up) writes them as one
//                block: column c of product i at block + c·rows_total + row_offset_i (floats),
//                which a backend may fill with one launch over the products' weights side by side;
//                the same for an experts step's two products (an add_id's result where the bias
//                is folded in, its mul_mat_id then internal) read by one swiglu step: a token's
//                column is gate's n_used slots, then up's
//   carries      a stacked gate/up matvec or experts step whose swiglu is the very next step, of
//                a length that is whole Q8_1 blocks (gate and up rows 32g .. 32g + 31 make block g
//                of the result, of each slot for experts): a backend may finish the swiglu in the
//                mat-vec kernel's epilogue, where the sums are; the plan places the carried step's
//                results with the carrier's, so they never share bytes with what the carrier reads;
//                a matvec step of one product (not stacked), or the weighted_sum step an experts
//                step carries, whose result only the very next step, a norm step, reads, as the
//                addend of its residual add: the launch's last CTA (of each token) adds, norms and
//                rounds there (an output projection before the next norm; a carried step's
//                results are written by the first carrier of the chain); and an op step
//                top_k carries a later op step expert_weights of the values it ranked, with the
//                ids it picked: both inputs exist when the picks are made, and the chosen values
//                are in hand there; and an experts step of one product (the experts' down) carries
//                the weighted_sum of its slots that alone reads it, when the weights come from an
//                earlier step: the last CTA of each row tile adds the slots there
//
// The lowering also collects the index checks every backend makes before a run (ids of get_rows,
// positions of rope, set_rows and attention), so that bad ids are an llmrt::error everywhere.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

namespace llmrt::graph {

enum class step_kind : uint8_t { op, norm, matvec, rope_cache, attention, swiglu, experts };

inline const char* to_string(step_kind k) noexcept {
    switch (k) {
        case step_kind::op: return "op";
        case step_kind::norm: return "norm";
        case step_kind::matvec: return "matvec";
        case step_kind::rope_cache: return "rope_cache";
        case step_kind::attention: return "attention";
        case step_kind::swiglu: return "swiglu";
        case step_kind::experts: return "experts";
    }
    return "unknown step";
}

// Which fusions a backend runs. All off gives one op step per node (the unfused reference).
struct lower_options {
    bool norms = true;            // add -> rms_norm -> mul as one norm step
    bool matvec_groups = true;    // the quantized mul_mats of one activation as one matvec step
    bool rope_cache = true;       // rope of q and k and both cache writes as one step
    bool fused_ops = true;        // attention and swiglu as steps of their own kind (rounding, stacks)
    bool round_in_producer = true;  // norm, attention and swiglu steps write x's Q8_1 rounding for the matvec step
    bool stack_products = true;   // matvec products read by one later step are stacked
    bool carry_swiglu = true;     // the gate/up matvec or experts step carries the swiglu after it (see above)
    bool carry_expert_weights = true;  // a top_k step carries the expert_weights of its picks (see above)
    bool grouped_norms = true;    // a grouped rms_norm (and its product with a group-long weight) as a norm step
    bool experts = true;          // experts steps, their roundings, and swiglu_oai as a swiglu step
    bool matvec_biases = true;    // a matvec step adds each product's one-column bias (see above)
    bool rope_norms = true;       // a rope_cache step takes the per-head q/k norms before its ropes
    bool carry_norm = true;       // a matvec step of one product carries the norm step that adds it (see above)

    static lower_options unfused() {
        return {false, false, false, false, false, false, false, false, false, false, false, false, false};
    }
};

// Every fusion by name, for code that takes them all (the intersection below, llmrt-bench-decode's
// --without). A field of lower_options missing here is a compile error.
inline constexpr std::array<std::pair<std::string_view, bool lower_options::*>, 13> fusions_by_name{{
    {"norms", &lower_options::norms},
    {"matvec_groups", &lower_options::matvec_groups},
    {"rope_cache", &lower_options::rope_cache},
    {"fused_ops", &lower_options::fused_ops},
    {"round_in_producer", &lower_options::round_in_producer},
    {"stack_products", &lower_options::stack_products},
    {"carry_swiglu", &lower_options::carry_swiglu},
    {"carry_expert_weights", &lower_options::carry_expert_weights},
    {"grouped_norms", &lower_options::grouped_norms},
    {"experts", &lower_options::experts},
    {"matvec_biases", &lower_options::matvec_biases},
    {"rope_norms", &lower_options::rope_norms},
    {"carry_norm", &lower_options::carry_norm},
}};
static_assert(sizeof(lower_options) == fusions_by_name.size() * sizeof(bool),
              "lower_options: every fusion must be named in fusions_by_name");

// The fusions both a and b run.
inline lower_options operator&(lower_options a, const lower_options& b) noexcept {
    for (const auto& f : fusions_by_name) a.*(f.second) = a.*(f.second) && b.*(f.second);
    return a;
}

struct step {
    step_kind kind = step_kind::op;
    std::vector<int32_t> nodes;  // every node the step computes, in order (internal ones included)

    int32_t node = -1;  // op, attention, swiglu: the node; norm: the rms_norm
    // norm: the residual add before the norm (-1: none) and the product with the norm's weight
    int32_t sum = -1, product = -1;
    // matvec, experts: the activation the mul_mats (nodes) read; rope_cache: its four nodes
    int32_t x = -1;
    int32_t q_rope = -1, k_rope = -1, k_write = -1, v_write = -1;
    // rope_cache: the per-head rms_norm of q (of k) that the step computes before the rope, its
    // product with the norm's weight right after it in nodes (-1: none)
    int32_t q_norm = -1, k_norm = -1;

    // The node whose Q8_1 rounding this step writes for a later matvec step (-1: none), and that
    // matvec step's index.
    int32_t rounds = -1;
    int32_t rounded_for = -1;
    // matvec, experts: the index of the step that rounded x for it (-1: it rounds x itself).
    int32_t rounded_by = -1;
    // matvec, experts: the products are stacked (see above); rows_total is the sum of their rows.
    bool stacked = false;
    int64_t rows_total = 0;
    // matvec, top_k: the index of the step it carries (-1: none); a carried step: its carrier.
    int32_t carries = -1;
    int32_t carried_by = -1;

    // The node whose result the step leaves last (for messages and per-kind accounting).
    int32_t last() const { return nodes.empty() ? -1 : nodes.back(); }
};

// Before a run: every live value v of input `input` must satisfy 0 <= v < limit.
struct index_check {
    int32_t input = -1;
    int64_t limit = std::numeric_limits<int64_t>::max();
    int32_t reader = -1;  // the node that reads it (for the message)
};

struct lowered {
    std::vector<step> steps;
    std::vector<int32_t> step_of;      // per node: the step that computes it (-1: a leaf or unplanned)
    std::vector<uint8_t> internal;     // per node: computed but never written (storage::none)
    std::vector<index_check> checks;
};

}  // namespace llmrt::graph
