// The CPU reference ops of the graph executor (besides mul_mat, in mul_mat.hpp). Tensors are
// columns of ne0 contiguous elements. Every function reduces in a fixed order, treats each column
// on its own (so a column's bits do not depend on the batch) and allocates nothing; outputs do
// not alias inputs unless a function says so.
//
//   rms_norm   y = x · 1/sqrt(Σx²/n + eps)                      (Σ in double)
//   softmax    y = exp(x − max) / Σ exp(x − max)                 (Σ in double)
//   silu       y = x / (1 + exp(−x));  swiglu  y = silu(g) · u
//   swiglu_oai g = min(gate, limit), u = clamp(up, −limit, limit), y = g / (1 + exp(alpha·(−g))) · (u + 1)
//   rope       pair (a, b) of head h, pair index i < n_rot/2, angle
//              θ = (pos · base^(−2i/n_rot) / factor_i) · freq_scale   (factor_i = 1 without factors):
//              (a, b) -> (a cosθ − b sinθ, a sinθ + b cosθ); pairs (2i, 2i+1) in normal order,
//              (i, i + n_rot/2) in NeoX order; elements past n_rot are copied. With YaRN θ and the
//              magnitude m of cos and sin follow graph::rope_params (ggml's rope_yarn)
//   attention  per query column t at position p, head h, kv head g = h / (n_head / n_head_kv):
//              s_j = scale · q_h · k_g[j] for j = 0..p (j > p − window with a window),
//              out_h = Σ_j softmax(s)_j · v_g[j], the softmax's sum with exp(sink_h − max) added
//              when there are sinks (max over the scores and the sink)
//   top_k           per column the k indices of the largest values, largest first, ties in index
//                   order: pick j is the first index of the largest value among those after pick
//                   j − 1 in that order (what k scans of the column would find; found with a heap
//                   of k held in y, so a vocabulary's top 40 costs one pass). NaN is never picked
//                   by a scan, but a scan after a NaN pick, or past the last value, finds nothing
//                   and picks its slot number j, and the next scan goes on below x[j]: a NaN x[0]
//                   (which the first scan keeps) makes the picks 0, 1, ... up to the first non-NaN
//                   x[j], then the values after it in order
//   expert_weights  y_j = p[ids_j], then with expert_norm::sum y_j / max(float(Σ_j y_j), 2⁻¹⁴)
//                   (Σ in double)
//                   or with expert_norm::softmax the softmax of the k values
//   weighted_sum    y = ((w₀·x₀ + w₁·x₁) + w₂·x₂) + ..., each product rounded to float
//   add_id          y[s·rows + r] = x[s·rows + r] + b[ids_s · rows + r]
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/graph/experts.hpp"
#include "llmrt/graph/node.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::cpu {

inline void rms_norm(const float* x, float* y, int64_t n, int64_t cols, float eps) {
    for (int64_t c = 0; c < cols; ++c, x += n, y += n) {
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
        const float mean = float(sum / double(n));
        const float scale = 1.0f / std::sqrt(mean + eps);
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
    }
}

// y = a ⊙ b; b has `cols` columns, or one column used for all when broadcast_b.
inline void mul(const float* a, const float* b, float* y, int64_t n, int64_t cols, bool broadcast_b) {
    for (int64_t c = 0; c < cols; ++c) {
        const float* bc = broadcast_b ? b : b + c * n;
        for (int64_t i = 0; i < n; ++i) y[c * n + i] = a[c * n + i] * bc[i];
    }
}

inline void add(const float* a, const float* b, float* y, int64_t n, int64_t cols, bool broadcast_b) {
    for (int64_t c = 0; c < cols; ++c) {
        const float* bc = broadcast_b ? b : b + c * n;
        for (int64_t i = 0; i < n; ++i) y[c * n + i] = a[c * n + i] + bc[i];
    }
}

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

inline void silu(const float* x, float* y, int64_t count) {
    for (int64_t i = 0; i < count; ++i) y[i] = silu(x[i]);
}

inline void swiglu(const float* gate, const float* up, float* y, int64_t count) {
    for (int64_t i = 0; i < count; ++i) y[i] = silu(gate[i]) * up[i];
}

// gpt-oss's clamped SwiGLU, in ggml's order of operations.
inline void swiglu_oai(const float* gate, const float* up, float* y, int64_t count, float alpha, float limit) {
    for (int64_t i = 0; i < count; ++i) {
        const float g = std::min(gate[i], limit);
        const float u = std::clamp(up[i], -limit, limit);
        y[i] = g / (1.0f + std::exp(alpha * (-g))) * (u + 1.0f);
    }
}

// Softmax of n values; x and y may be the same array. A sink (sinks in attention) is one more
// logit in the max and the sum without an output of its own.
inline void softmax_column(const float* x, float* y, int64_t n, const float* sink = nullptr) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
    if (sink) max = std::fmax(max, *sink);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        y[i] = std::exp(x[i] - max);
        sum += double(y[i]);
    }
    if (sink) sum += double(std::exp(*sink - max));
    const float inv = float(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

inline void softmax(const float* x, float* y, int64_t n, int64_t cols) {
    for (int64_t c = 0; c < cols; ++c) softmax_column(x + c * n, y + c * n, n);
}

// y[c] = softmax_column's value at the largest element of column c: exp(0) · float(1 / Σ), the
// exponentials in float and their sum in double, as softmax computes them.
inline void top_probability(const float* x, float* y, int64_t n, int64_t cols) {
    for (int64_t c = 0; c < cols; ++c, x += n) {
        float max = -INFINITY;
        for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i) sum += double(std::exp(x[i] - max));
        y[c] = float(1.0 / sum);
    }
}

namespace detail {
inline void check_position(int32_t p, int64_t limit, const char* operation, int64_t column) {
    check(p >= 0 && p < limit, errc::invalid_argument, [&] {
        return std::string(operation) + ": position " + std::to_string(p) + " of token " + std::to_string(column) +
               " is outside [0, " + std::to_string(limit) + ")";
    });
}
}  // namespace detail

// cos θ and sin θ of pair i, times the rotation's magnitude: ggml's rope_yarn, whose float
// operations with ext_factor 0 and attn_factor 1 are plain rope's ((θ/1)·freq_scale, cos·1).
inline void rope_cos_sin(float theta_extrap, int32_t i, const graph::rope_params& p, float& cs, float& sn) {
    const float theta_interp = p.freq_scale * theta_extrap;
    float theta = theta_interp;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
        const float y = (float(i) - p.corr_low) / std::fmax(0.001f, p.corr_high - p.corr_low);
        const float ramp = (1.0f - std::fmin(1.0f, std::fmax(0.0f, y))) * p.ext_factor;
        theta = theta_interp * (1.0f - ramp) + theta_extrap * ramp;
        mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    cs = std::cos(theta) * mscale;
    sn = std::sin(theta) * mscale;
}

// x and y hold cols columns of n_head · head_dim floats; pos one position per column; factors
// n_rot/2 floats or null (all 1).
inline void rope(const float* x, float* y, const int32_t* pos, int64_t cols, const graph::rope_params& p,
                 const float* factors = nullptr) {
    const int64_t ne0 = int64_t(p.n_head) * p.head_dim;
    const int32_t half = p.n_rot / 2;
    // θ_i = pos · base^(−2i/n_rot), stepped by repeated multiplication as ggml does.
    const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
    for (int64_t c = 0; c < cols; ++c) {
        check(pos[c] >= 0, errc::invalid_argument, [&] {
            return "rope: position " + std::to_string(pos[c]) + " of token " + std::to_string(c) + " is negative";
        });
        for (int32_t h = 0; h < p.n_head; ++h) {
            const float* xh = x + c * ne0 + int64_t(h) * p.head_dim;
            float* yh = y + c * ne0 + int64_t(h) * p.head_dim;
            float theta = float(pos[c]);
            for (int32_t i = 0; i < half; ++i, theta *= theta_scale) {
                // ggml's order: divided by the factor, then scaled (both exact when 1).
                float cs = 0.0f, sn = 0.0f;
                rope_cos_sin(theta / (factors ? factors[i] : 1.0f), i, p, cs, sn);
                const int32_t a = p.order == graph::rope_order::normal ? 2 * i : i;
                const int32_t b = p.order == graph::rope_order::normal ? 2 * i + 1 : i + half;
                const float x0 = xh[a], x1 = xh[b];
                yh[a] = x0 * cs - x1 * sn;
                yh[b] = x0 * sn + x1 * cs;
            }
            for (int32_t i = p.n_rot; i < p.head_dim; ++i) yh[i] = xh[i];
        }
    }
}

// y[:, t] = dequantize(row ids[t] of a table of n_rows rows of ne0 elements of type t).
inline void get_rows(qtype t, const void* table, int64_t ne0, int64_t n_rows, const int32_t* ids, float* y,
                     int64_t cols) {
    const std::size_t row_bytes = row_size(t, ne0);
    for (int64_t c = 0; c < cols; ++c) {
        check(ids[c] >= 0 && ids[c] < n_rows, errc::invalid_argument, [&] {
            return "get_rows: id " + std::to_string(ids[c]) + " of token " + std::to_string(c) + " is outside [0, " +
                   std::to_string(n_rows) + ")";
        });
        dequantize(t, static_cast<const std::byte*>(table) + std::size_t(ids[c]) * row_bytes, y + c * ne0, ne0);
    }
}

// Column pos[t] of the cache (n_ctx columns of ne0 elements of f32 or f16) = src[:, t].
inline void set_rows(qtype cache_type, void* cache, int64_t ne0, int64_t n_ctx, const float* src, const int32_t* pos,
                     int64_t cols) {
    check(cache_type == qtype::f32 || cache_type == qtype::f16, errc::unsupported_type,
          [&] { return std::string("set_rows: caches are f32 or f16, not ") + name(cache_type); });
    for (int64_t c = 0; c < cols; ++c) {
        detail::check_position(pos[c], n_ctx, "set_rows", c);
        const float* s = src + c * ne0;
        if (cache_type == qtype::f32) {
            float* d = static_cast<float*>(cache) + int64_t(pos[c]) * ne0;
            for (int64_t i = 0; i < ne0; ++i) d[i] = s[i];
        } else {
            uint16_t* d = static_cast<uint16_t*>(cache) + int64_t(pos[c]) * ne0;
            for (int64_t i = 0; i < ne0; ++i) d[i] = fp32_to_fp16(s[i]);
        }
    }
}

namespace detail {
// Element i of a cache column of f32 or f16.
inline float cache_at(qtype t, const void* column, int64_t i) {
    return t == qtype::f32 ? static_cast<const float*>(column)[i]
                           : fp16_to_fp32(static_cast<const uint16_t*>(column)[i]);
}
}  // namespace detail

// q, out: cols columns of n_head · head_dim floats; k, v: n_ctx columns of n_head_kv · head_dim
// elements of kv_type (f32 or f16); scores: n_ctx floats of scratch; sinks: n_head floats or null.
inline void attention(const float* q, qtype kv_type, const void* k, const void* v, int64_t n_ctx, const int32_t* pos,
                      float* out, int64_t cols, const graph::attention_params& p, float* scores,
                      const float* sinks = nullptr) {
    check(kv_type == qtype::f32 || kv_type == qtype::f16, errc::unsupported_type,
          [&] { return std::string("attention: caches are f32 or f16, not ") + name(kv_type); });
    const int64_t q_ne0 = int64_t(p.n_head) * p.head_dim;
    const int64_t kv_ne0 = int64_t(p.n_head_kv) * p.head_dim;
    const std::size_t kv_col_bytes = std::size_t(kv_ne0) * (kv_type == qtype::f32 ? 4 : 2);
    const int32_t group = p.n_head / p.n_head_kv;
    auto column = [&](const void* cache, int64_t j, int64_t g) {
        return static_cast<const std::byte*>(cache) + std::size_t(j) * kv_col_bytes +
               std::size_t(g * p.head_dim) * (kv_type == qtype::f32 ? 4 : 2);
    };
    for (int64_t c = 0; c < cols; ++c) {
        detail::check_position(pos[c], n_ctx, "attention", c);
        // The causal mask: keys at positions 0..p; a window keeps those with p − j < window.
        const int64_t end = int64_t(pos[c]) + 1;
        const int64_t first = p.window > 0 ? std::max<int64_t>(0, end - p.window) : 0;
        const int64_t n_keys = end - first;
        for (int32_t h = 0; h < p.n_head; ++h) {
            const int64_t g = h / group;
            const float* qh = q + c * q_ne0 + int64_t(h) * p.head_dim;
            for (int64_t j = 0; j < n_keys; ++j) {
                const void* kj = column(k, first + j, g);
                double dot = 0.0;
                for (int32_t i = 0; i < p.head_dim; ++i) dot += double(qh[i]) * double(detail::cache_at(kv_type, kj, i));
                scores[j] = float(dot) * p.scale;
            }
            softmax_column(scores, scores, n_keys, sinks ? sinks + h : nullptr);
            float* oh = out + c * q_ne0 + int64_t(h) * p.head_dim;
            for (int32_t i = 0; i < p.head_dim; ++i) oh[i] = 0.0f;
            for (int64_t j = 0; j < n_keys; ++j) {
                const void* vj = column(v, first + j, g);
                for (int32_t i = 0; i < p.head_dim; ++i) oh[i] += scores[j] * detail::cache_at(kv_type, vj, i);
            }
        }
    }
}

// y[t] = the first index of the largest element of column t (n elements).
inline void argmax(const float* x, int32_t* y, int64_t n, int64_t cols) {
    for (int64_t c = 0; c < cols; ++c) {
        const float* xc = x + c * n;
        int64_t best = 0;
        for (int64_t i = 1; i < n; ++i)
            if (xc[i] > xc[best]) best = i;
        y[c] = int32_t(best);
    }
}

// y: cols columns of k indices into columns of n values of x (see top_k above). Every backend
// picks the same, so the indices agree everywhere for the same values.
inline void top_k(const float* x, int32_t* y, int64_t n, int64_t k, int64_t cols) {
    for (int64_t c = 0; c < cols; ++c, x += n, y += k) {
        // before(a, b): a comes first in (value descending, index ascending) order; NaN never does.
        const auto before = [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
        // Writes the (up to) `want` first non-NaN values after `prev` (−1: from the start) in that
        // order to out, with a heap of them held in out whose top is the worst (before as "less").
        const auto first_after = [&](int64_t prev, int32_t* out, int64_t want) {
            int64_t held = 0;
            for (int64_t i = 0; i < n; ++i) {
                if (std::isnan(x[i]) || (prev >= 0 && !before(int32_t(prev), int32_t(i)))) continue;
                if (held < want) {
                    out[held++] = int32_t(i);
                    std::push_heap(out, out + held, before);
                } else if (before(int32_t(i), out[0])) {
                    std::pop_heap(out, out + held, before);
                    out[held - 1] = int32_t(i);
                    std::push_heap(out, out + held, before);
                }
            }
            std::sort_heap(out, out + held, before);
            return held;
        };
        // The scans' quirks: the first scan keeps a NaN x[0] (nothing compares greater), and a scan
        // after a NaN pick, or past the last value, finds nothing and picks its slot number j; the
        // next scan goes on from that pick's value. (Columns without NaN never meet either.)
        int64_t j = 0, prev = -1;
        if (std::isnan(x[0])) y[j++] = 0, prev = 0;
        while (j < k) {
            if (prev < 0 || !std::isnan(x[prev])) {
                j += first_after(prev, y + j, k - j);
                if (j == k) break;
            }
            y[j] = int32_t(j);
            prev = j++;
        }
    }
}

// y: cols columns of k weights from columns of n probabilities p, picked by ids (k per column).
inline void expert_weights(const float* p, const int32_t* ids, float* y, int64_t n, int64_t k, int64_t cols,
                           graph::expert_norm norm) {
    for (int64_t c = 0; c < cols; ++c) {
        double sum = 0.0;
        for (int64_t j = 0; j < k; ++j) {
            const int32_t id = ids[c * k + j];
            check(id >= 0 && id < n, errc::invalid_argument, [&] {
                return "expert_weights: id " + std::to_string(id) + " of token " + std::to_string(c) + " is outside [0, " +
                       std::to_string(n) + ")";
            });
            y[c * k + j] = p[c * n + id];
            sum += double(y[c * k + j]);
        }
        if (norm == graph::expert_norm::softmax) softmax_column(y + c * k, y + c * k, k);
        if (norm != graph::expert_norm::sum) continue;
        const float total = graph::expert_sum_divisor(sum);
        for (int64_t j = 0; j < k; ++j) y[c * k + j] = y[c * k + j] / total;
    }
}

// y: cols columns of n values, each the sum over k slots of w[slot] · x[slot·n ..] of its column.
inline void weighted_sum(const float* x, const float* w, float* y, int64_t n, int64_t k, int64_t cols) {
    for (int64_t c = 0; c < cols; ++c)
        for (int64_t i = 0; i < n; ++i) {
            float acc = w[c * k] * x[c * n * k + i];
            for (int64_t s = 1; s < k; ++s) {
                const float product = w[c * k + s] * x[c * n * k + s * n + i];
                acc = acc + product;
            }
            y[c * n + i] = acc;
        }
}

// y: cols columns of k slots of `rows` values, x's plus the bias column (of n_expert in b) of
// each slot's expert; y may be x.
// col_stride: floats from one column of x and y to the next (0: dense, k · rows).
inline void add_id(const float* x, const float* b, const int32_t* ids, float* y, int64_t rows, int64_t n_expert, int64_t k,
                   int64_t cols, int64_t col_stride = 0) {
    if (col_stride == 0) col_stride = k * rows;
    for (int64_t c = 0; c < cols; ++c)
        for (int64_t s = 0; s < k; ++s) {
            const int32_t id = ids[c * k + s];
            check(id >= 0 && id < n_expert, errc::invalid_argument, [&] {
                return "add_id: id " + std::to_string(id) + " of token " + std::to_string(c) + " is outside [0, " +
                       std::to_string(n_expert) + ")";
            });
            const int64_t at = c * col_stride + s * rows;
            for (int64_t r = 0; r < rows; ++r) y[at + r] = x[at + r] + b[int64_t(id) * rows + r];
        }
}

// Expert parallelism (graph::op::shard_ids, shard_weights; graph/experts.hpp): k slots per
// column, the rank holding experts [first, first + count).
inline void shard_ids(const int32_t* ids, int32_t* y, int64_t k, int64_t cols, int64_t first, int64_t count) {
    for (int64_t c = 0; c < cols; ++c) graph::shard_ids_column(ids + c * k, y + c * k, k, first, count);
}

inline void shard_weights(const float* w, const int32_t* ids, float* y, int64_t k, int64_t cols, int64_t first, int64_t count) {
    for (int64_t i = 0; i < k * cols; ++i) y[i] = graph::shard_weight(w[i], ids[i], first, count);
}

}  // namespace llmrt::cpu
