// A model's hyperparameters, read from GGUF metadata. general.architecture names the
// architecture (model/arch/registry.hpp: "llama", "qwen2", "qwen3", "qwen3moe", "gpt-oss"), and
// every other key takes its name as prefix; for llama:
//
//   llama.context_length                    trained context (the default cache length)
//   llama.embedding_length                  n_embd
//   llama.block_count                       n_layer
//   llama.feed_forward_length               n_ff
//   llama.attention.head_count              n_head
//   llama.attention.head_count_kv           n_head_kv (optional; n_head when absent)
//   llama.attention.key_length              head_dim (optional; n_embd / n_head)
//   llama.attention.value_length            (optional; must equal head_dim)
//   llama.rope.freq_base                    (optional; 10000)
//   llama.rope.scaling.type                 (optional; "linear") "none", "linear" or "yarn";
//                                           others are refused
//   llama.rope.scaling.factor               f (optional; 0 or absent: 1): freq_scale = 1/f for
//                                           "linear" and "yarn", 1 for "none" (llama.cpp's
//                                           context parameters; old files: llama.rope.scale_linear)
//   llama.rope.scaling.attn_factor          (optional; 1) multiplies the rope's cos and sin
//   llama.rope.scaling.original_context_length  (optional; context_length) YaRN's n_ctx_orig
//
// YaRN (llama.cpp's context parameters, in float in its order): ext_factor 1, and the magnitude
// handed to rope attn_factor = mscale(f) · (1 / (1 + 0.1·ln f)) · rope.scaling.attn_factor with
// f = 1/freq_scale, mscale(f) = f <= 1 ? 1 : 0.1·ln f + 1 (rope itself then multiplies by
// 1 + 0.1·ln f); corr dims from beta_fast 32, beta_slow 1 (graph::yarn_corr_dims) per layer.
//
// Architectures with a sliding window (gpt-oss) read
//
//   <arch>.attention.sliding_window         n_swa (> 0)
//   <arch>.attention.sliding_window_pattern (optional; the architecture's) an integer pattern
//                                           (arch/architecture.hpp); a per-layer array is refused
//   <arch>.rope.freq_base_swa               (optional; rope.freq_base) the sliding layers' base;
//                                           they rope with freq_scale 1/f whatever the type
//   llama.attention.layer_norm_rms_epsilon  rms_eps
//   llama.vocab_size                        (optional; else token_embd's ne[1])
//   llama.rope.dimension_count              n_rot (optional; head_dim)
//
// Architectures with a mixture-of-experts feed-forward (qwen3moe) also read
//
//   <arch>.expert_count                     n_expert (> 0)
//   <arch>.expert_used_count                n_expert_used, k (1..n_expert)
//   <arch>.expert_feed_forward_length       n_ff_exp (optional: feed_forward_length / k)
//   <arch>.feed_forward_length              (optional for them)
//
// Keys that would change the math in ways llmrt does not compute are refused, naming the key:
// an expert_count above 0 for a dense architecture, an expert_weights_scale other than 0 or 1.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <variant>

#include "llmrt/core/error.hpp"
#include "llmrt/gguf/metadata.hpp"
#include "llmrt/model/arch/registry.hpp"

namespace llmrt::model {

namespace detail {
// A float as an error message shows it: shortest round-trip digits, "inf", "-inf" or "nan".
inline std::string float_text(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}
}  // namespace detail

// The hyperparameters of any architecture of arch/registry.hpp (the name stays llama_hparams:
// the llama architecture came first and every user spells it so).
struct llama_hparams {
    const architecture* arch = &model::arch::llama;
    int32_t n_vocab = 0;
    int32_t n_ctx_train = 0;
    int32_t n_embd = 0;
    int32_t n_layer = 0;
    int32_t n_ff = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t n_rot = 0;
    int32_t n_embd_head = 0;  // <arch>.attention.key_length; 0: n_embd / n_head
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;     // 1 / <arch>.rope.scaling.factor (1 for scaling type "none")
    float rope_ext_factor = 0.0f;     // 1 for YaRN
    float rope_attn_factor = 1.0f;    // the magnitude of the rope's cos and sin (see above)
    int32_t n_ctx_orig_yarn = 0;      // YaRN's original context
    float rope_freq_base_swa = 10000.0f;  // the sliding layers' base and scale
    float rope_freq_scale_swa = 1.0f;
    int32_t n_swa = 0;                // keys a sliding layer's query sees (0: no sliding layers)
    int32_t swa_pattern = 0;          // layer l slides when n_swa > 0 and (pattern 0 or l % pattern < pattern − 1)
    float rms_eps = 1e-5f;
    int32_t n_expert = 0;       // mixture of experts (architecture's ffn kind experts): 0 for dense
    int32_t n_expert_used = 0;  // k experts per token
    int32_t n_ff_exp = 0;       // rows of each expert's gate and up
    // Expert parallelism (a rank's shard, model/tensor_parallel.hpp): the experts the rank holds,
    // [expert_first, expert_first + experts_held); experts_held 0: all n_expert.
    int32_t expert_first = 0;
    int32_t experts_held = 0;

    bool experts() const noexcept { return arch->ffn.kind == ffn_kind::experts; }
    bool sliding(int32_t layer) const noexcept {
        return n_swa > 0 && (swa_pattern == 0 || layer % swa_pattern < swa_pattern - 1);
    }
    int32_t head_dim() const noexcept { return n_embd_head > 0 ? n_embd_head : n_head > 0 ? n_embd / n_head : 0; }
    int32_t n_embd_q() const noexcept { return n_head * head_dim(); }
    int32_t n_embd_kv() const noexcept { return n_head_kv * head_dim(); }

    // "<arch>.<suffix>", the metadata key of a hyperparameter.
    std::string key(std::string_view suffix) const { return std::string(arch->name) + "." + std::string(suffix); }

    // llmrt::error naming the first key whose value cannot describe a model.
    void validate() const {
        const std::string model = std::string(arch->name) + " model: ";
        auto positive = [&](int32_t v, const char* suffix) {
            check(v > 0, errc::invalid_argument,
                  [&] { return model + key(suffix) + " = " + std::to_string(v) + " must be positive"; });
        };
        positive(n_vocab, "vocab_size");
        positive(n_ctx_train, "context_length");
        positive(n_embd, "embedding_length");
        positive(n_layer, "block_count");
        if (experts()) {
            positive(n_expert, "expert_count");
            positive(n_ff_exp, "expert_feed_forward_length");
            check(n_expert_used >= 1 && n_expert_used <= n_expert && n_expert_used <= 65535, errc::invalid_argument, [&] {
                return model + key("expert_used_count") + " = " + std::to_string(n_expert_used) + " must lie in 1.." +
                       std::to_string(n_expert) + " (" + key("expert_count") + ")";
            });
        } else {
            positive(n_ff, "feed_forward_length");
        }
        positive(n_head, "attention.head_count");
        positive(n_head_kv, "attention.head_count_kv");
        check(n_embd_head > 0 || n_embd % n_head == 0, errc::invalid_argument, [&] {
            return model + key("embedding_length") + " = " + std::to_string(n_embd) + " is not a multiple of " +
                   key("attention.head_count") + " = " + std::to_string(n_head) + " (and " +
                   key("attention.key_length") + " is absent)";
        });
        check(n_embd_head >= 0 && int64_t(n_head) * head_dim() <= INT32_MAX, errc::invalid_argument, [&] {
            return model + key("attention.key_length") + " = " + std::to_string(n_embd_head) +
                   " must be positive, and n_head times it fit in int32";
        });
        check(n_head % n_head_kv == 0, errc::invalid_argument, [&] {
            return model + key("attention.head_count") + " = " + std::to_string(n_head) + " is not a multiple of " +
                   key("attention.head_count_kv") + " = " + std::to_string(n_head_kv);
        });
        check(n_rot >= 2 && n_rot % 2 == 0 && n_rot <= head_dim(), errc::invalid_argument, [&] {
            return model + key("rope.dimension_count") + " = " + std::to_string(n_rot) +
                   " must be even and within 2..head_dim = " + std::to_string(head_dim());
        });
        // Both must be finite: an infinite base turns every rope angle into NaN, an infinite
        // epsilon every normalized value into 0; a NaN one fails every comparison below anyway.
        check(std::isfinite(rope_freq_base) && rope_freq_base > 0.0f, errc::invalid_argument, [&] {
            return model + key("rope.freq_base") + " = " + detail::float_text(rope_freq_base) +
                   " must be finite and positive";
        });
        check(std::isfinite(rope_freq_scale) && rope_freq_scale > 0.0f, errc::invalid_argument, [&] {
            return model + key("rope.scaling.factor") + " = " + detail::float_text(1.0 / double(rope_freq_scale)) +
                   " must be finite and positive";
        });
        check(std::isfinite(rope_attn_factor), errc::invalid_argument, [&] {
            return model + key("rope.scaling.attn_factor") + " gives the rope a magnitude of " +
                   detail::float_text(rope_attn_factor) + ", which must be finite";
        });
        check(rope_ext_factor == 0.0f || n_ctx_orig_yarn > 0, errc::invalid_argument, [&] {
            return model + key("rope.scaling.original_context_length") + " = " + std::to_string(n_ctx_orig_yarn) +
                   " must be positive for YaRN";
        });
        check(std::isfinite(rope_freq_base_swa) && rope_freq_base_swa > 0.0f, errc::invalid_argument, [&] {
            return model + key("rope.freq_base_swa") + " = " + detail::float_text(rope_freq_base_swa) +
                   " must be finite and positive";
        });
        check(!arch->attention.sliding_window || (n_swa > 0 && swa_pattern >= 0), errc::invalid_argument, [&] {
            return model + key("attention.sliding_window") + " = " + std::to_string(n_swa) + " and " +
                   key("attention.sliding_window_pattern") + " = " + std::to_string(swa_pattern) +
                   " must be positive and at least 0";
        });
        check(std::isfinite(rms_eps) && rms_eps > 0.0f, errc::invalid_argument, [&] {
            return model + key("attention.layer_norm_rms_epsilon") + " = " + detail::float_text(rms_eps) +
                   " must be finite and positive";
        });
    }
};

namespace detail {

// An integer key stored as any GGUF integer type, checked to fit in int32.
inline int32_t read_int(const gguf::metadata& meta, std::string_view key) {
    const gguf::value& v = meta.at(key);
    int64_t result = 0;
    bool integer = false;
    std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                if constexpr (std::is_signed_v<T>) {
                    integer = int64_t(x) >= INT32_MIN && int64_t(x) <= INT32_MAX;
                } else {
                    integer = uint64_t(x) <= uint64_t(INT32_MAX);  // no sign test: nvcc warns on x >= 0
                }
                result = int64_t(x);
            }
        },
        v);
    check(integer, errc::invalid_argument, [&] {
        return "model: metadata key '" + std::string(key) + "' holds " + gguf::describe(v) +
               ", not an integer that fits in int32";
    });
    return int32_t(result);
}

// A float key stored as float32 or float64. A float64 beyond float's range is refused here,
// naming the key: converting it to float would be undefined behaviour. (Non-finite values are
// refused by llama_hparams::validate, which knows each key's allowed range.)
inline float read_float(const gguf::metadata& meta, std::string_view key) {
    const gguf::value& v = meta.at(key);
    if (const float* f = std::get_if<float>(&v)) return *f;
    if (const double* d = std::get_if<double>(&v)) {
        check(!(std::fabs(*d) > double(FLT_MAX)) || std::isinf(*d), errc::invalid_argument, [&] {
            return "model: metadata key '" + std::string(key) + "' holds float64 " + float_text(*d) +
                   ", beyond float's range";
        });
        return float(*d);
    }
    throw error(errc::invalid_argument, "model: metadata key '" + std::string(key) + "' holds " +
                                            gguf::describe(v) + ", not a float");
}

}  // namespace detail

// The hyperparameters in `meta`; n_vocab from <arch>.vocab_size or, when absent, `vocab_fallback`
// (token_embd's row count). llmrt::error naming the key that is missing, wrong or unsupported.
inline llama_hparams llama_hparams_from(const gguf::metadata& meta, int32_t vocab_fallback) {
    const gguf::value* arch_key = meta.find("general.architecture");
    check(arch_key != nullptr, errc::invalid_argument, "model: metadata key 'general.architecture' is missing");
    const std::string* arch_name = std::get_if<std::string>(arch_key);
    const architecture* arch = arch_name ? find_architecture(*arch_name) : nullptr;
    check(arch != nullptr, errc::invalid_argument, [&] {
        return "model: metadata key 'general.architecture' is " +
               (arch_name ? "\"" + *arch_name + "\"" : gguf::describe(*arch_key)) + ", not one llmrt loads (" +
               architecture_names() + ")";
    });
    llama_hparams h;
    h.arch = arch;
    const std::string model = std::string(arch->name) + " model: ";
    auto has = [&](const char* suffix) { return meta.contains(h.key(suffix)); };
    auto read_int = [&](const char* suffix) { return detail::read_int(meta, h.key(suffix)); };
    auto read_float = [&](const char* suffix) { return detail::read_float(meta, h.key(suffix)); };
    h.n_ctx_train = read_int("context_length");
    h.n_embd = read_int("embedding_length");
    h.n_layer = read_int("block_count");
    if (!h.experts() || has("feed_forward_length")) h.n_ff = read_int("feed_forward_length");
    h.n_head = read_int("attention.head_count");
    h.n_head_kv = has("attention.head_count_kv") ? read_int("attention.head_count_kv") : h.n_head;
    h.rms_eps = read_float("attention.layer_norm_rms_epsilon");
    if (has("rope.freq_base")) h.rope_freq_base = read_float("rope.freq_base");
    h.n_vocab = has("vocab_size") ? read_int("vocab_size") : vocab_fallback;
    if (has("attention.key_length")) {
        h.n_embd_head = read_int("attention.key_length");
        check(h.n_embd_head > 0, errc::invalid_argument, [&] {
            return model + h.key("attention.key_length") + " = " + std::to_string(h.n_embd_head) + " must be positive";
        });
    }
    if (has("attention.value_length")) {
        // One head_dim serves q, k and v: the attention reads both caches with it.
        const int32_t v = read_int("attention.value_length");
        check(v == h.head_dim(), errc::invalid_argument, [&] {
            return model + h.key("attention.value_length") + " = " + std::to_string(v) + " differs from the key length " +
                   std::to_string(h.head_dim()) + "; llmrt supports equal key and value lengths only";
        });
    }
    h.n_rot = has("rope.dimension_count") ? read_int("rope.dimension_count") : h.head_dim();

    // Rope scaling as llama.cpp's model and context parameters take it: a missing type is
    // "linear", the factor applies unless the type is "none", YaRN adds its terms. llmrt computes
    // "none", "linear" and "yarn" and refuses the rest (longrope, ...).
    std::string scaling = "linear";
    if (has("rope.scaling.type")) {
        const gguf::value& t = meta.at(h.key("rope.scaling.type"));
        const std::string* type = std::get_if<std::string>(&t);
        check(type != nullptr && (*type == "none" || *type == "linear" || *type == "yarn"), errc::unsupported_type, [&] {
            return model + h.key("rope.scaling.type") + " is " + (type ? "\"" + *type + "\"" : gguf::describe(t)) +
                   "; llmrt supports \"none\", \"linear\" and \"yarn\" rope scaling only";
        });
        scaling = *type;
    }
    const char* factor_key = has("rope.scaling.factor") ? "rope.scaling.factor"
                             : has("rope.scale_linear") ? "rope.scale_linear"
                                                        : nullptr;
    float freq_scale_train = 1.0f;
    if (factor_key) {
        const float factor = read_float(factor_key);
        check(std::isfinite(factor) && factor >= 0.0f, errc::invalid_argument, [&] {
            return model + h.key(factor_key) + " = " + detail::float_text(factor) + " must be finite and positive (or 0: none)";
        });
        freq_scale_train = factor == 0.0f ? 1.0f : 1.0f / factor;
    }
    h.rope_freq_scale = scaling == "none" ? 1.0f : freq_scale_train;
    h.rope_freq_scale_swa = freq_scale_train;
    h.n_ctx_orig_yarn = has("rope.scaling.original_context_length") ? read_int("rope.scaling.original_context_length")
                                                                    : h.n_ctx_train;
    if (h.n_ctx_orig_yarn == 0) h.n_ctx_orig_yarn = h.n_ctx_train;  // llama.cpp: 0 is unset
    if (scaling == "yarn") {
        h.rope_ext_factor = 1.0f;
        const float factor = 1.0f / h.rope_freq_scale;
        h.rope_attn_factor = factor <= 1.0f ? 1.0f : 0.1f * 1.0f * std::log(factor) + 1.0f;
        h.rope_attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));
    }
    if (has("rope.scaling.attn_factor")) h.rope_attn_factor *= read_float("rope.scaling.attn_factor");
    h.rope_freq_base_swa = h.rope_freq_base;
    if (arch->attention.sliding_window) {
        h.n_swa = read_int("attention.sliding_window");
        h.swa_pattern = int32_t(arch->attention.sliding_window_pattern);
        if (has("attention.sliding_window_pattern")) {
            const gguf::value& pattern = meta.at(h.key("attention.sliding_window_pattern"));
            check(!std::holds_alternative<gguf::array>(pattern), errc::unsupported_type, [&] {
                return model + h.key("attention.sliding_window_pattern") + " is " + gguf::describe(pattern) +
                       "; llmrt supports an integer pattern only, not one flag per layer";
            });
            h.swa_pattern = read_int("attention.sliding_window_pattern");
        }
        if (has("rope.freq_base_swa")) h.rope_freq_base_swa = read_float("rope.freq_base_swa");
    }
    if (h.experts()) {
        h.n_expert = read_int("expert_count");
        h.n_expert_used = read_int("expert_used_count");
        if (has("expert_feed_forward_length")) {
            h.n_ff_exp = read_int("expert_feed_forward_length");
        } else {
            check(h.n_expert_used > 0 && h.n_ff > 0, errc::invalid_argument, [&] {
                return model + h.key("expert_feed_forward_length") + " is missing, and " + h.key("feed_forward_length") +
                       " / " + h.key("expert_used_count") + " cannot stand in for it";
            });
            h.n_ff_exp = h.n_ff / h.n_expert_used;  // llama.cpp's fallback
        }
        if (has("expert_weights_scale")) {
            const float scale = read_float("expert_weights_scale");
            check(scale == 0.0f || scale == 1.0f, errc::unsupported_type, [&] {
                return model + h.key("expert_weights_scale") + " = " + detail::float_text(scale) +
                       " scales the experts' weights; llmrt supports 0 and 1 (no scale) only";
            });
        }
    } else if (has("expert_count")) {
        const int32_t experts = read_int("expert_count");
        check(experts == 0, errc::unsupported_type, [&] {
            return model + h.key("expert_count") + " = " + std::to_string(experts) + ": the " + std::string(arch->name) +
                   " architecture has no mixture-of-experts feed-forward (qwen3moe and gpt-oss have)";
        });
    }
    h.validate();
    return h;
}

}  // namespace llmrt::model
