// A compute graph under construction: typed nodes added in dependency order, shapes checked as
// they are added. Building allocates no tensor memory; the planner (plan.hpp) lays out memory and
// an executor (executor.hpp) runs the graph on a backend.
//
//   graph::graph g(/*max_batch=*/8);
//   auto ids = g.input("tokens", graph::i32_type, 1);
//   auto x = g.get_rows(g.weight("token_embd", qtype::q8_0, 256, 512, bytes), ids);
//   g.mark_output(g.argmax(g.mul_mat(w, g.rms_norm(x, 1e-5f))));
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/graph/node.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::graph {

// Bytes of one column of n elements of type t.
inline std::size_t column_bytes(qtype t, int64_t n) {
    if (t == i32_type) return std::size_t(n) * 4;
    return row_size(t, n);
}

inline const char* type_name(qtype t) { return t == i32_type ? "i32" : name(t); }

// Bytes a tensor takes with all its columns (the largest batch for batched tensors).
inline std::size_t tensor_bytes(const node& n) { return column_bytes(n.type, n.ne0) * std::size_t(n.ne1); }

// YaRN's correction dims for rope_params::corr_low/corr_high, in ggml's float arithmetic
// (ggml_rope_yarn_corr_dims): the pair index at which a rotation of n_rot dims turns `beta` times
// over the original context n_ctx_orig,
//   corr_dim(beta) = n_rot · ln(n_ctx_orig / (beta · 2π)) / (2 ln freq_base),
// low = max(0, floor(corr_dim(beta_fast))), high = min(n_rot − 1, ceil(corr_dim(beta_slow))).
struct yarn_dims {
    float low = 0.0f, high = 0.0f;
};
inline yarn_dims yarn_corr_dims(int32_t n_rot, int32_t n_ctx_orig, float freq_base, float beta_fast = 32.0f,
                                float beta_slow = 1.0f) {
    auto dim = [&](float beta) {
        return float(n_rot) * std::log(float(n_ctx_orig) / (beta * 2.0f * 3.14159265358979323846f)) /
               (2.0f * std::log(freq_base));
    };
    return {std::max(0.0f, std::floor(dim(beta_fast))), std::min(float(n_rot - 1), std::ceil(dim(beta_slow)))};
}

class graph {
public:
    explicit graph(int64_t max_batch) : max_batch_(max_batch) {
        check(max_batch >= 1, errc::invalid_argument,
              [&] { return "graph: max_batch must be >= 1, got " + std::to_string(max_batch); });
    }

    int64_t max_batch() const noexcept { return max_batch_; }
    std::size_t size() const noexcept { return nodes_.size(); }
    const std::vector<node>& nodes() const noexcept { return nodes_; }
    const node& operator[](tensor t) const { return at(t, "graph"); }
    const std::vector<tensor>& outputs() const noexcept { return outputs_; }

    // The first node called `name`, or an invalid tensor.
    tensor find(const std::string& name) const {
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (nodes_[i].name == name) return tensor{int32_t(i)};
        return tensor{};
    }

    void set_name(tensor t, std::string name) { mutable_at(t).name = std::move(name); }

    // Results the host reads after a run; they stay intact until the next run.
    void mark_output(tensor t) {
        at(t, "mark_output");
        for (tensor o : outputs_)
            if (o == t) return;
        outputs_.push_back(t);
    }

    // ---- Leaves ----

    // ne0 elements per token, one column per token of the batch (f32 or i32).
    tensor input(std::string name, qtype type, int64_t ne0) {
        check(type == qtype::f32 || type == i32_type, errc::unsupported_type,
              [&] { return "graph input '" + name + "': inputs are f32 or i32, got " + type_name(type); });
        check(ne0 >= 1, errc::invalid_argument,
              [&] { return "graph input '" + name + "': ne0 must be >= 1, got " + std::to_string(ne0); });
        node n;
        n.op = op::input;
        n.type = type;
        n.ne0 = ne0;
        n.ne1 = max_batch_;
        n.batched = true;
        n.name = std::move(name);
        return push(std::move(n));
    }

    // A constant of ne1 columns of ne0 elements of type; `data` (host bytes in GGUF's layout) must
    // stay valid for as long as the graph, its plans and executors are used.
    tensor weight(std::string name, qtype type, int64_t ne0, int64_t ne1, const void* data) {
        check(ne0 >= 1 && ne1 >= 1, errc::shape_mismatch, [&] {
            return "graph weight '" + name + "': shape " + std::to_string(ne0) + " x " + std::to_string(ne1) +
                   " has an empty dimension";
        });
        check(type == i32_type || is_in<all_types>(type), errc::unsupported_type, [&] {
            return "graph weight '" + name + "': type id " + std::to_string(uint32_t(type)) + " is not supported";
        });
        check(type == i32_type || ne0 % block_size(type) == 0, errc::shape_mismatch, [&] {
            return "graph weight '" + name + "': ne0 = " + std::to_string(ne0) + " is not a multiple of " +
                   type_name(type) + "'s block size " + std::to_string(block_size(type));
        });
        check(data != nullptr, errc::invalid_argument, [&] { return "graph weight '" + name + "': null data"; });
        node n;
        n.op = op::weight;
        n.type = type;
        n.ne0 = ne0;
        n.ne1 = ne1;
        n.data = data;
        n.name = std::move(name);
        return push(std::move(n));
    }

    // Persistent memory of ne1 columns of ne0 elements (f32 or f16), zeroed when planned.
    tensor state(std::string name, qtype type, int64_t ne0, int64_t ne1) {
        check(type == qtype::f32 || type == qtype::f16, errc::unsupported_type,
              [&] { return "graph state '" + name + "': states are f32 or f16, got " + type_name(type); });
        check(ne0 >= 1 && ne1 >= 1, errc::shape_mismatch, [&] {
            return "graph state '" + name + "': shape " + std::to_string(ne0) + " x " + std::to_string(ne1) +
                   " has an empty dimension";
        });
        node n;
        n.op = op::state;
        n.type = type;
        n.ne0 = ne0;
        n.ne1 = ne1;
        n.name = std::move(name);
        return push(std::move(n));
    }

    // ---- Ops ----

    tensor get_rows(tensor table, tensor ids) {
        const node& tb = at(table, "get_rows");
        const node& id = at(ids, "get_rows");
        check(!tb.batched && tb.type != i32_type, errc::shape_mismatch,
              [&] { return "get_rows: table " + describe(tb) + " must be a non-batched float or quantized tensor"; });
        require_ids(id, "get_rows");
        return push(derived(op::get_rows, qtype::f32, tb.ne0, id, {table.id, ids.id}));
    }

    // group > 0: each run of `group` elements of a column is normalized on its own (per-head
    // norms, as Qwen3's q and k have); group must divide the column length.
    tensor rms_norm(tensor x, float eps, int64_t group = 0) {
        const node& a = activation(x, "rms_norm");
        check(group >= 0 && (group == 0 || a.ne0 % group == 0), errc::shape_mismatch, [&] {
            return "rms_norm: group " + std::to_string(group) + " does not divide the columns of " + describe(a);
        });
        node n = derived(op::rms_norm, qtype::f32, a.ne0, a, {x.id});
        n.eps = eps;
        n.group = group == a.ne0 ? 0 : group;
        return push(std::move(n));
    }

    tensor mul(tensor a, tensor b) { return elementwise(op::mul, a, b); }
    tensor add(tensor a, tensor b) { return elementwise(op::add, a, b); }

    // w: a non-batched matrix of rows = w.ne1 columns of k = w.ne0; x: columns of k floats.
    tensor mul_mat(tensor w, tensor x) {
        const node& wn = at(w, "mul_mat");
        const node& xn = activation(x, "mul_mat");
        check(!wn.batched && wn.type != i32_type, errc::shape_mismatch,
              [&] { return "mul_mat: W " + describe(wn) + " must be a non-batched float or quantized matrix"; });
        check(wn.ne0 == xn.ne0, errc::shape_mismatch,
              [&] { return "mul_mat: W " + describe(wn) + " needs columns of " + std::to_string(wn.ne0) +
                           " elements, x is " + describe(xn); });
        return push(derived(op::mul_mat, qtype::f32, wn.ne1, xn, {w.id, x.id}));
    }

    // factors (optional): a one-column f32 weight of n_rot/2 frequency factors (see rope_params).
    tensor rope(tensor x, tensor positions, rope_params p, tensor factors = {}) {
        const node& xn = activation(x, "rope");
        check(std::isfinite(p.freq_scale) && p.freq_scale > 0.0f, errc::invalid_argument, [&] {
            return "rope: freq_scale " + std::to_string(p.freq_scale) + " must be finite and positive";
        });
        check(std::isfinite(p.ext_factor) && std::isfinite(p.attn_factor) && std::isfinite(p.corr_low) &&
                  std::isfinite(p.corr_high) && p.ext_factor >= 0.0f,
              errc::invalid_argument, [&] {
                  return "rope: YaRN's ext_factor " + std::to_string(p.ext_factor) + ", attn_factor " +
                         std::to_string(p.attn_factor) + " and corr dims " + std::to_string(p.corr_low) + ".." +
                         std::to_string(p.corr_high) + " must be finite, ext_factor >= 0";
              });
        if (factors.valid()) {
            const node& f = at(factors, "rope");
            check(f.op == op::weight && f.type == qtype::f32 && f.ne0 == p.n_rot / 2 && f.ne1 == 1, errc::shape_mismatch, [&] {
                return "rope: frequency factors " + describe(f) + " must be an f32 weight of n_rot/2 = " +
                       std::to_string(p.n_rot / 2) + " values";
            });
        }
        require_ids(at(positions, "rope"), "rope");
        check(xn.batched && at(positions, "rope").batched, errc::shape_mismatch,
              [&] { return "rope: x " + describe(xn) + " and the positions must both be batched"; });
        check(p.n_head >= 1 && p.head_dim >= 2 && int64_t(p.n_head) * p.head_dim == xn.ne0 && p.n_rot >= 2 &&
                  p.n_rot <= p.head_dim && p.n_rot % 2 == 0 && p.freq_base > 0.0f,
              errc::shape_mismatch, [&] {
                  return "rope: x " + describe(xn) + " does not hold n_head " + std::to_string(p.n_head) +
                         " x head_dim " + std::to_string(p.head_dim) + " with an even n_rot " +
                         std::to_string(p.n_rot) + " <= head_dim and freq_base > 0";
              });
        node n = derived(op::rope, qtype::f32, xn.ne0, xn, {x.id, positions.id});
        if (factors.valid()) n.src[2] = factors.id;
        n.rope = p;
        return push(std::move(n));
    }

    tensor softmax(tensor x) {
        const node& a = activation(x, "softmax");
        return push(derived(op::softmax, qtype::f32, a.ne0, a, {x.id}));
    }

    tensor silu(tensor x) {
        const node& a = activation(x, "silu");
        return push(derived(op::silu, qtype::f32, a.ne0, a, {x.id}));
    }

    tensor swiglu(tensor gate, tensor up) {
        const node& g = activation(gate, "swiglu");
        const node& u = activation(up, "swiglu");
        check(g.ne0 == u.ne0 && g.ne1 == u.ne1 && g.batched == u.batched, errc::shape_mismatch,
              [&] { return "swiglu: gate " + describe(g) + " and up " + describe(u) + " differ in shape"; });
        return push(derived(op::swiglu, qtype::f32, g.ne0, g, {gate.id, up.id}));
    }

    // gpt-oss's clamped SwiGLU (op::swiglu_oai): alpha 1.702 and limit 7 in its files' model.
    tensor swiglu_oai(tensor gate, tensor up, float alpha, float limit) {
        const node& g = activation(gate, "swiglu_oai");
        const node& u = activation(up, "swiglu_oai");
        check(g.ne0 == u.ne0 && g.ne1 == u.ne1 && g.batched == u.batched, errc::shape_mismatch,
              [&] { return "swiglu_oai: gate " + describe(g) + " and up " + describe(u) + " differ in shape"; });
        check(std::isfinite(alpha) && std::isfinite(limit) && limit > 0.0f, errc::invalid_argument, [&] {
            return "swiglu_oai: alpha " + std::to_string(alpha) + " and limit " + std::to_string(limit) +
                   " must be finite, limit > 0";
        });
        node n = derived(op::swiglu_oai, qtype::f32, g.ne0, g, {gate.id, up.id});
        n.alpha = alpha;
        n.limit = limit;
        return push(std::move(n));
    }

    // Writes column t of src into column positions[t] of the cache (converting to its type) and
    // returns the cache as it is after the write: ops that read the cache take this result, which
    // orders them after the write.
    tensor set_rows(tensor cache, tensor src, tensor positions) {
        const node& c = at(cache, "set_rows");
        const node& s = activation(src, "set_rows");
        require_ids(at(positions, "set_rows"), "set_rows");
        check(c.op == op::state || c.op == op::set_rows, errc::shape_mismatch,
              [&] { return "set_rows: destination " + describe(c) + " is not a state tensor"; });
        check(c.ne0 == s.ne0 && s.batched, errc::shape_mismatch,
              [&] { return "set_rows: cache " + describe(c) + " and source " + describe(s) + " differ in column length"; });
        node n;
        n.op = op::set_rows;
        n.type = c.type;
        n.ne0 = c.ne0;
        n.ne1 = c.ne1;
        n.src = {cache.id, src.id, positions.id, -1, -1};
        n.name = c.name + ".updated";
        return push(std::move(n));
    }

    // sinks (optional): a one-column f32 weight of n_head logits (see attention_params).
    tensor attention(tensor q, tensor k_cache, tensor v_cache, tensor positions, attention_params p, tensor sinks = {}) {
        const node& qn = activation(q, "attention");
        check(p.window >= 0, errc::invalid_argument,
              [&] { return "attention: window " + std::to_string(p.window) + " must be >= 0 (0: no window)"; });
        if (sinks.valid()) {
            const node& sk = at(sinks, "attention");
            check(sk.op == op::weight && sk.type == qtype::f32 && sk.ne0 == p.n_head && sk.ne1 == 1, errc::shape_mismatch, [&] {
                return "attention: sinks " + describe(sk) + " must be an f32 weight of n_head = " + std::to_string(p.n_head) +
                       " values";
            });
        }
        const node& kn = at(k_cache, "attention");
        const node& vn = at(v_cache, "attention");
        require_ids(at(positions, "attention"), "attention");
        check(p.n_head >= 1 && p.n_head_kv >= 1 && p.head_dim >= 1 && p.n_head % p.n_head_kv == 0 &&
                  int64_t(p.n_head) * p.head_dim == qn.ne0 && qn.batched,
              errc::shape_mismatch, [&] {
                  return "attention: q " + describe(qn) + " does not hold n_head " + std::to_string(p.n_head) +
                         " x head_dim " + std::to_string(p.head_dim) + " (batched), or n_head_kv " +
                         std::to_string(p.n_head_kv) + " does not divide n_head";
              });
        for (const node* c : {&kn, &vn})
            check((c->op == op::state || c->op == op::set_rows) && c->ne0 == int64_t(p.n_head_kv) * p.head_dim &&
                      c->ne1 == kn.ne1,
                  errc::shape_mismatch, [&] {
                      return "attention: cache " + describe(*c) + " must be a state (or set_rows result) of n_head_kv " +
                             std::to_string(p.n_head_kv) + " x head_dim " + std::to_string(p.head_dim) +
                             " per column, k and v with the same context length";
                  });
        // Every backend reads both caches with one element type (the K cache's).
        check(kn.type == vn.type, errc::unsupported_type, [&] {
            return "attention: the K cache " + describe(kn) + " and the V cache " + describe(vn) +
                   " must have the same type";
        });
        node n = derived(op::attention, qtype::f32, qn.ne0, qn, {q.id, k_cache.id, v_cache.id, positions.id});
        if (sinks.valid()) n.src[4] = sinks.id;
        n.attention = p;
        return push(std::move(n));
    }

    tensor argmax(tensor x) {
        const node& a = activation(x, "argmax");
        return push(derived(op::argmax, i32_type, 1, a, {x.id}));
    }

    // The probability softmax gives the most likely element of each column (what a drafter's
    // confidence threshold needs), without the column itself.
    tensor top_probability(tensor x) {
        const node& a = activation(x, "top_probability");
        return push(derived(op::top_probability, qtype::f32, 1, a, {x.id}));
    }

    // ---- Collectives (tensor parallelism: each of `ranks` ranks builds its own graph with the
    // same collectives in the same order; the backend's communicator connects them) ----

    // Σ over the ranks of x, the same bits on every rank (op::all_reduce).
    tensor all_reduce(tensor x, int32_t ranks) {
        const node& a = activation(x, "all_reduce");
        check(ranks >= 1, errc::invalid_argument,
              [&] { return "all_reduce: ranks = " + std::to_string(ranks) + " must be >= 1 (" + describe(a) + ")"; });
        node n = derived(op::all_reduce, qtype::f32, a.ne0, a, {x.id});
        n.ranks = ranks;
        return push(std::move(n));
    }

    // Columns of `total` elements put together from the ranks' slices (op::all_gather): x is this
    // rank's slice, floor or ceil(total / ranks) elements per column (shard_begin says which).
    tensor all_gather(tensor x, int64_t total, int32_t ranks) {
        const node& a = activation(x, "all_gather");
        check(ranks >= 1 && total >= ranks, errc::invalid_argument, [&] {
            return "all_gather: " + std::to_string(total) + " elements over " + std::to_string(ranks) +
                   " ranks; need ranks >= 1 and at least one element per rank (" + describe(a) + ")";
        });
        check(a.ne0 == total / ranks || a.ne0 == (total + ranks - 1) / ranks, errc::shape_mismatch, [&] {
            return "all_gather: x " + describe(a) + " is no rank's slice of " + std::to_string(total) + " elements over " +
                   std::to_string(ranks) + " ranks (floor or ceil of total / ranks per column)";
        });
        node n = derived(op::all_gather, qtype::f32, total, a, {x.id});
        n.ranks = ranks;
        return push(std::move(n));
    }

    // ---- Mixture of experts ----
    //
    // A layer's router and experts, k slots per token (a sketch of model/llama_graph.hpp's block):
    //   probs = softmax(mul_mat(router, h));  ids = top_k(probs, k)
    //   w = expert_weights(probs, ids, expert_norm::sum)
    //   a = swiglu(mul_mat_id(gate, h, ids, n), mul_mat_id(up, h, ids, n))
    //   out = weighted_sum(mul_mat_id(down, a, ids, n), w)
    // gpt-oss's: top_k of the router's logits (plus its bias), expert_norm::softmax, each expert's
    // bias after its product (add_id) and swiglu_oai in place of swiglu.

    // The indices of the k largest elements of each column, largest first; equal values in
    // index order (llama.cpp sorts with std::sort, which leaves ties unspecified). A NaN is never
    // larger than anything: NaN columns give valid but unspecified indices.
    tensor top_k(tensor x, int64_t k) {
        const node& a = activation(x, "top_k");
        check(k >= 1 && k <= a.ne0 && a.ne0 <= INT32_MAX, errc::shape_mismatch, [&] {
            return "top_k: k = " + std::to_string(k) + " must lie in 1.." + std::to_string(a.ne0) + " for " + describe(a);
        });
        return push(derived(op::top_k, i32_type, k, a, {x.id}));
    }

    // The probabilities of the chosen experts (see expert_norm): probs has one column of n_expert
    // per token, ids k expert indices per token.
    tensor expert_weights(tensor probs, tensor ids, expert_norm norm) {
        const node& p = activation(probs, "expert_weights");
        const node& id = at(ids, "expert_weights");
        require_slots(id, p, "expert_weights");
        node n = derived(op::expert_weights, qtype::f32, id.ne0, p, {probs.id, ids.id});
        n.norm = norm;
        return push(std::move(n));
    }

    // n_expert matrices of rows = W.ne1 / n_expert rows each, stacked in W (GGUF's 3-D expert
    // tensors [k, rows, n_expert] as they lie in the file); ids: k slots per token. x holds per
    // token one column of W.ne0 (every slot multiplies it) or k of them (slot s its own); y holds
    // per token k results of `rows`, slot after slot. An id outside [0, n_expert) is an
    // llmrt::error where the host sees it (CPU; ids a graph input), else a column of NaN.
    tensor mul_mat_id(tensor experts, tensor x, tensor ids, int64_t n_expert) {
        const node& w = at(experts, "mul_mat_id");
        const node& xn = activation(x, "mul_mat_id");
        const node& id = at(ids, "mul_mat_id");
        require_slots(id, xn, "mul_mat_id");
        check(w.op == op::weight && w.type != i32_type && n_expert >= 1 && w.ne1 % n_expert == 0, errc::shape_mismatch,
              [&] {
                  return "mul_mat_id: W " + describe(w) + " must be a float or quantized weight of n_expert = " +
                         std::to_string(n_expert) + " matrices of equal row counts";
              });
        check(xn.ne0 == w.ne0 || xn.ne0 == w.ne0 * id.ne0, errc::shape_mismatch, [&] {
            return "mul_mat_id: x " + describe(xn) + " must hold per token one column of " + std::to_string(w.ne0) +
                   " or one per slot (" + std::to_string(id.ne0) + "), for W " + describe(w);
        });
        node n = derived(op::mul_mat_id, qtype::f32, w.ne1 / n_expert * id.ne0, xn, {experts.id, x.id, ids.id});
        n.n_expert = n_expert;
        return push(std::move(n));
    }

    // Per token, the k columns of n = x.ne0 / k values in x weighted by w (k per token) and added
    // in slot order: ((w₀x₀ + w₁x₁) + w₂x₂) + ..., each product rounded to float (llama.cpp's
    // ggml_mul then ggml_adds of the slot views).
    tensor weighted_sum(tensor x, tensor weights) {
        const node& xn = activation(x, "weighted_sum");
        const node& wn = activation(weights, "weighted_sum");
        check(wn.ne1 == xn.ne1 && wn.batched == xn.batched && xn.ne0 % wn.ne0 == 0, errc::shape_mismatch, [&] {
            return "weighted_sum: x " + describe(xn) + " must hold one column per weight of " + describe(wn);
        });
        return push(derived(op::weighted_sum, qtype::f32, xn.ne0 / wn.ne0, xn, {x.id, weights.id}));
    }

    // Each slot's expert bias: x holds per token k slots of rows values (a mul_mat_id result), b
    // one f32 column of rows per expert (GGUF's [rows, n_expert] expert biases), ids the k slots.
    // An id outside [0, b.ne1) is an llmrt::error where the host sees it, as for mul_mat_id.
    tensor add_id(tensor x, tensor bias, tensor ids) {
        const node& xn = activation(x, "add_id");
        const node& b = at(bias, "add_id");
        const node& id = at(ids, "add_id");
        require_slots(id, xn, "add_id");
        check(b.op == op::weight && b.type == qtype::f32 && xn.ne0 == b.ne0 * id.ne0, errc::shape_mismatch, [&] {
            return "add_id: bias " + describe(b) + " must be an f32 weight of one column per expert, each as long as one of x " +
                   describe(xn) + "'s " + std::to_string(id.ne0) + " slots";
        });
        node n = derived(op::add_id, qtype::f32, xn.ne0, xn, {x.id, bias.id, ids.id});
        n.n_expert = b.ne1;
        return push(std::move(n));
    }

    // Expert parallelism: this rank holds experts [first, first + count) of the model's. ids: k
    // expert indices per token (top_k's); the rank's own indices of the slots it holds, and for the
    // other slots the first held slot's (0 if it holds none), which shard_weights weighs by 0.
    tensor shard_ids(tensor ids, int64_t first, int64_t count) {
        const node& id = at(ids, "shard_ids");
        check(id.type == i32_type && id.op != op::weight && first >= 0 && count >= 1 && first + count <= INT32_MAX,
              errc::shape_mismatch, [&] {
                  return "shard_ids: ids " + describe(id) + " must be i32 activations, experts [" + std::to_string(first) +
                         ", " + std::to_string(first + count) + ") a non-empty range";
              });
        node n = derived(op::shard_ids, i32_type, id.ne0, id, {ids.id});
        n.expert0 = first;
        n.n_expert = count;
        return push(std::move(n));
    }

    // The weights of the slots whose expert (ids, the model's indices) this rank holds, 0 for the
    // others: the rank's weighted_sum then adds its own experts' share of every token.
    tensor shard_weights(tensor weights, tensor ids, int64_t first, int64_t count) {
        const node& w = activation(weights, "shard_weights");
        const node& id = at(ids, "shard_weights");
        require_slots(id, w, "shard_weights");
        check(w.ne0 == id.ne0 && first >= 0 && count >= 1, errc::shape_mismatch, [&] {
            return "shard_weights: weights " + describe(w) + " must hold one per slot of ids " + describe(id) + ", experts [" +
                   std::to_string(first) + ", " + std::to_string(first + count) + ") a non-empty range";
        });
        node n = derived(op::shard_weights, qtype::f32, w.ne0, w, {weights.id, ids.id});
        n.expert0 = first;
        n.n_expert = count;
        return push(std::move(n));
    }

    // "name (op, type ne0 x ne1)" for messages.
    static std::string describe(const node& n) {
        return "'" + n.name + "' (" + to_string(n.op) + ", " + type_name(n.type) + " " + std::to_string(n.ne0) + " x " +
               (n.batched ? "batch " : "") + std::to_string(n.ne1) + ")";
    }

private:
    const node& at(tensor t, const char* operation) const {
        check(t.id >= 0 && std::size_t(t.id) < nodes_.size(), errc::invalid_argument, [&] {
            return std::string(operation) + ": tensor id " + std::to_string(t.id) + " is not a node of this graph (" +
                   std::to_string(nodes_.size()) + " nodes)";
        });
        return nodes_[std::size_t(t.id)];
    }
    node& mutable_at(tensor t) {
        at(t, "set_name");
        return nodes_[std::size_t(t.id)];
    }

    const node& activation(tensor t, const char* operation) const {
        const node& n = at(t, operation);
        check(n.type == qtype::f32 && n.op != op::weight && n.op != op::state && n.op != op::set_rows,
              errc::shape_mismatch, [&] {
                  return std::string(operation) + ": operand " + describe(n) + " must be an f32 activation";
              });
        return n;
    }

    static void require_ids(const node& n, const char* operation) {
        check(n.type == i32_type && n.ne0 == 1 && n.batched, errc::shape_mismatch, [&] {
            return std::string(operation) + ": " + describe(n) + " must be a batched i32 tensor of one id per token";
        });
    }

    // ids: i32 slots (ne0 of them) per column of `like`.
    static void require_slots(const node& ids, const node& like, const char* operation) {
        check(ids.type == i32_type && ids.ne0 >= 1 && ids.ne0 <= 65535 && ids.ne1 == like.ne1 && ids.batched == like.batched,
              errc::shape_mismatch, [&] {
                  return std::string(operation) + ": ids " + describe(ids) + " must be i32, up to 65535 per column, with " +
                         "the columns of " + describe(like);
              });
    }

    tensor elementwise(op o, tensor a, tensor b) {
        const node& an = activation(a, to_string(o));
        const node& bn = at(b, to_string(o));
        const bool same = bn.ne0 == an.ne0 && bn.ne1 == an.ne1 && bn.batched == an.batched;
        // One column of a length that divides a's: repeated down each column of a (a per-head
        // weight over n_head heads) and across the columns.
        const bool broadcast = bn.ne0 >= 1 && an.ne0 % bn.ne0 == 0 && bn.ne1 == 1 && !bn.batched;
        check(bn.type == qtype::f32 && (same || broadcast), errc::shape_mismatch, [&] {
            return std::string(to_string(o)) + ": " + describe(an) + " and " + describe(bn) +
                   " must match, or the second be one f32 column of a length that divides the first's";
        });
        return push(derived(o, qtype::f32, an.ne0, an, {a.id, b.id}));
    }

    // A node whose columns follow `like` (one per token when `like` is batched).
    node derived(op o, qtype type, int64_t ne0, const node& like, std::initializer_list<int32_t> srcs) const {
        node n;
        n.op = o;
        n.type = type;
        n.ne0 = ne0;
        n.ne1 = like.ne1;
        n.batched = like.batched;
        std::size_t i = 0;
        for (int32_t s : srcs) n.src[i++] = s;
        n.name = std::string(to_string(o)) + "#" + std::to_string(nodes_.size());
        return n;
    }

    tensor push(node n) {
        nodes_.push_back(std::move(n));
        return tensor{int32_t(nodes_.size() - 1)};
    }

    int64_t max_batch_;
    std::vector<node> nodes_;
    std::vector<tensor> outputs_;
};

}  // namespace llmrt::graph
