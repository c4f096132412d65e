// The nodes of a compute graph: what each op computes, its parameters and its output shape.
//
// Every tensor is a matrix of ne1 columns of ne0 elements (column-major, ggml's ne[0] contiguous,
// a column is a token's vector). A quantized weight keeps one output's weights per column
// (ne0 = k, ne1 = rows), exactly GGUF's layout. A `batched` tensor has one column per token of the
// batch: ne1 is the largest batch the graph was built for, and each run says how many columns are
// live (1 <= n_tokens <= ne1).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "llmrt/core/qtype.hpp"

namespace llmrt::graph {

// Token ids, positions and argmax results are 32-bit integers: GGUF's type id for I32.
inline constexpr qtype i32_type = qtype(26);

// A handle to one node of a graph (each node produces exactly one tensor).
struct tensor {
    int32_t id = -1;
    bool valid() const noexcept { return id >= 0; }
    friend bool operator==(tensor, tensor) = default;
};

enum class op : uint8_t {
    input,      // written by the host before each run (batched)
    weight,     // constant, host bytes given at build time, uploaded at plan time
    state,      // persistent across runs (the KV cache); zeroed at plan time
    get_rows,   // y[:, t] = dequantize(table[:, ids[t]])
    rms_norm,   // y = x / sqrt(mean(x²) + eps), per column (or per group of `group` elements)
    mul,        // y = a ⊙ b, b broadcast over columns when it has one (and repeated when shorter)
    add,        // y = a + b, b broadcast over columns when it has one (and repeated when shorter)
    mul_mat,    // y[:, t] = W · x[:, t]
    rope,       // rotary position embedding, normal or NeoX pair order; src[2]: frequency factors
    attention,  // causal softmax(q·kᵀ·scale)·v over the KV cache, grouped-query heads
    softmax,    // y = exp(x − max) / Σ exp(x − max), per column
    silu,       // y = x · σ(x)
    swiglu,     // y = silu(gate) ⊙ up
    swiglu_oai,  // gpt-oss: g = min(gate, limit), u = clamp(up, ±limit), y = g·σ(alpha·g)·(u + 1)
    set_rows,   // cache[:, pos[t]] = src[:, t]; the result is the updated cache
    argmax,     // y[t] = first index of the largest element of x[:, t]
    top_probability,  // y[t] = max softmax(x[:, t]) = float(1 / Σ_i exp(x[i, t] − max)): softmax's value at the argmax
    // Mixture of experts (k slots per token, n_expert matrices stacked in one weight):
    top_k,           // y[j, t] = index of the j-th largest of x[:, t], j < k (i32; ties: lower index first)
    expert_weights,  // y[j, t] = p[ids[j, t], t], then y /= max(Σ_j y[j, t], 2⁻¹⁴) when norm = sum
    mul_mat_id,      // y[s·rows + r, t] = W[ids[s, t]·rows + r] · x_s[:, t]   (x_s: x's slot s, or x itself)
    weighted_sum,    // y[i, t] = Σ_s w[s, t] · x[s·n + i, t], added in slot order
    add_id,          // y[s·rows + r, t] = x[s·rows + r, t] + b[r, ids[s, t]]   (b: one column per expert)
    // Expert parallelism: a rank holds experts [e0, e0 + n_expert) (e0: node::expert0):
    shard_ids,       // y[s, t] = ids[s, t] − e0 where the rank holds it, else the first such slot's
                     // (0 if none): a slot the rank computes anyway, weighed by 0
    shard_weights,   // y[s, t] = w[s, t] where the rank holds ids[s, t], else 0
    // Collectives over the `ranks` ranks of a tensor-parallel group (every rank's graph holds the
    // node, each over its own x; see comm/communicator.hpp):
    all_reduce,  // y = Σ_ranks x, added in rank order ((x₀ + x₁) + x₂) + ...: the same bits on every rank
    all_gather,  // y[:, t] = x₀[:, t] ‖ x₁[:, t] ‖ ...: rank r's slice [shard_begin(r), shard_begin(r + 1)) of ne0
};

inline const char* to_string(op o) noexcept {
    switch (o) {
        case op::input: return "input";
        case op::weight: return "weight";
        case op::state: return "state";
        case op::get_rows: return "get_rows";
        case op::rms_norm: return "rms_norm";
        case op::mul: return "mul";
        case op::add: return "add";
        case op::mul_mat: return "mul_mat";
        case op::rope: return "rope";
        case op::attention: return "attention";
        case op::softmax: return "softmax";
        case op::silu: return "silu";
        case op::swiglu: return "swiglu";
        case op::swiglu_oai: return "swiglu_oai";
        case op::set_rows: return "set_rows";
        case op::argmax: return "argmax";
        case op::top_probability: return "top_probability";
        case op::top_k: return "top_k";
        case op::expert_weights: return "expert_weights";
        case op::mul_mat_id: return "mul_mat_id";
        case op::weighted_sum: return "weighted_sum";
        case op::add_id: return "add_id";
        case op::shard_ids: return "shard_ids";
        case op::shard_weights: return "shard_weights";
        case op::all_reduce: return "all_reduce";
        case op::all_gather: return "all_gather";
    }
    return "unknown op";
}

// Where rank r of `ranks` starts in a dimension of `total` split as evenly as it goes: slices
// [shard_begin(total, ranks, r), shard_begin(total, ranks, r + 1)) of floor or ceil(total / ranks)
// elements cover 0..total in rank order (all_gather's slices, a vocabulary split by rows).
inline int64_t shard_begin(int64_t total, int32_t ranks, int32_t rank) noexcept {
    return total / ranks * rank + std::min<int64_t>(total % ranks, rank);
}

// Which elements rope rotates together (d = n_rot):
//   normal: (2i, 2i+1)      — ggml's default; llama.cpp permutes llama's q/k rows for it
//   neox:   (i, i + d/2)    — GPT-NeoX, Qwen, ...
enum class rope_order : uint8_t { normal, neox };

// x holds n_head heads of head_dim elements per column; the first n_rot elements of each head
// rotate by angle θ_i = (pos · freq_base^(−2i/n_rot) / factor_i) · freq_scale for pair i, the
// rest pass through. factor_i comes from the rope node's optional third source (n_rot/2 floats,
// Llama 3's rope_freqs), else 1; freq_scale is 1/f for linear rope scaling by f. With both 1 the
// angle has the bits of pos · freq_base^(−2i/n_rot) (x/1 and x·1 are exact).
//
// YaRN (ggml's rope_yarn) mixes that interpolated angle with the extrapolated one and scales the
// rotation by a magnitude m:
//   θ_extrap = pos · freq_base^(−2i/n_rot) / factor_i,   θ_interp = freq_scale · θ_extrap
//   ramp_i   = (1 − min(1, max(0, (i − corr_low) / max(0.001, corr_high − corr_low)))) · ext_factor
//   θ        = θ_interp · (1 − ramp_i) + θ_extrap · ramp_i           (θ_interp when ext_factor = 0)
//   m        = attn_factor · (1 + 0.1 · ln(1/freq_scale))           (attn_factor when ext_factor = 0)
//   (a, b)  -> (a·cosθ·m − b·sinθ·m, a·sinθ·m + b·cosθ·m)
// corr_low and corr_high come from yarn_corr_dims (graph.hpp). ext_factor 0 and attn_factor 1
// give plain rope's bits.
struct rope_params {
    int32_t n_head = 0;
    int32_t head_dim = 0;
    int32_t n_rot = 0;
    float freq_base = 10000.0f;
    rope_order order = rope_order::normal;
    float freq_scale = 1.0f;
    float ext_factor = 0.0f;   // YaRN's extrapolation mix (1 for rope.scaling.type "yarn")
    float attn_factor = 1.0f;  // the rotation's magnitude before YaRN's own factor
    float corr_low = 0.0f;     // YaRN's correction dims: pairs below corr_low extrapolate, past
    float corr_high = 0.0f;    // corr_high interpolate, a linear ramp between

    bool yarn() const noexcept { return ext_factor != 0.0f || attn_factor != 1.0f; }
};

// q holds n_head heads, the caches n_head_kv heads of head_dim elements per column (one column
// per position); query head h reads kv head h / (n_head / n_head_kv). A query at position p sees
// cache columns 0..p, and with a window w > 0 only the columns j with p − j < w (gpt-oss's
// sliding layers). Optional sinks (the attention node's fifth source, n_head floats) add one
// logit per head that takes part in the softmax without a value:
//   m = max(max_j s_j, sink_h),  out_h = Σ_j exp(s_j − m)·v_j / (Σ_j exp(s_j − m) + exp(sink_h − m))
struct attention_params {
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
    float scale = 1.0f;   // usually 1/sqrt(head_dim)
    int32_t window = 0;   // keys visible to a query, its own included (0: all of 0..p)
};

// How expert_weights turns the chosen probabilities into the weights of the experts' outputs:
//   none     the probabilities as they are
//   sum      divided by their sum, clamped below at 2⁻¹⁴ (f16's smallest normal, as llama.cpp does
//            so that a sum of 0 divides by something); the sum is added in double and rounded to float
//   softmax  a softmax over the k chosen values (gpt-oss: the router's logits, no softmax before
//            top_k; llama.cpp's SOFTMAX_WEIGHT gating), as the softmax op computes it
enum class expert_norm : uint8_t { none, sum, softmax };

inline const char* to_string(expert_norm n) noexcept {
    switch (n) {
        case expert_norm::none: return "none";
        case expert_norm::sum: return "sum";
        case expert_norm::softmax: return "softmax";
    }
    return "unknown expert_norm";
}

struct node {
    llmrt::graph::op op = llmrt::graph::op::input;
    std::string name;
    qtype type = qtype::f32;  // element type of the output (i32_type for ids)
    int64_t ne0 = 0;          // elements per column
    int64_t ne1 = 0;          // columns (the largest batch when batched)
    bool batched = false;
    std::array<int32_t, 5> src{-1, -1, -1, -1, -1};  // input tensor ids, unused ones -1
    const void* data = nullptr;                    // weight bytes (host), for op::weight
    float eps = 0.0f;                              // rms_norm
    int64_t group = 0;                             // rms_norm: elements per normalized group (0: ne0)
    rope_params rope{};
    attention_params attention{};
    int64_t n_expert = 0;                 // mul_mat_id: matrices stacked in W (rows = W.ne1 / n_expert); add_id: b's columns;
                                          // shard_ids, shard_weights: the experts the rank holds
    int64_t expert0 = 0;                  // shard_ids, shard_weights: the first of them
    expert_norm norm = expert_norm::none;  // expert_weights
    float alpha = 0.0f;                    // swiglu_oai: the sigmoid's slope (gpt-oss: 1.702)
    float limit = 0.0f;                    // swiglu_oai: the clamp of gate and up (gpt-oss: 7)
    int32_t ranks = 0;                     // all_reduce, all_gather: the ranks of the group

    int n_src() const noexcept {
        int n = 0;
        while (n < int(src.size()) && src[std::size_t(n)] >= 0) ++n;
        return n;
    }
};

}  // namespace llmrt::graph
