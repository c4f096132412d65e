// A llama-architecture model's hyperparameters, read from GGUF metadata (llama.* keys).
//
//   general.architecture                    "llama"
//   llama.context_length                    trained context (the default cache length)
//   llama.embedding_length                  n_embd
//   llama.block_count                       n_layer
//   llama.feed_forward_length               n_ff
//   llama.attention.head_count              n_head
//   llama.attention.head_count_kv           n_head_kv (optional; n_head when absent)
//   llama.rope.freq_base                    (optional; 10000)
//   llama.attention.layer_norm_rms_epsilon  rms_eps
//   llama.vocab_size                        (optional; else token_embd's ne[1])
//   llama.rope.dimension_count              n_rot (optional; head_dim)
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

namespace llmrt::model {

namespace detail {
// A float as an error message shows it: shortest round-trip digits, "inf", "-inf" or "nan".
inline std::string float_text(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}
}  // namespace detail

struct llama_hparams {
    int32_t n_vocab = 0;
    int32_t n_ctx_train = 0;
    int32_t n_embd = 0;
    int32_t n_layer = 0;
    int32_t n_ff = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t n_rot = 0;
    float rope_freq_base = 10000.0f;
    float rms_eps = 1e-5f;

    int32_t head_dim() const noexcept { return n_head > 0 ? n_embd / n_head : 0; }
    int32_t n_embd_kv() const noexcept { return n_head_kv * head_dim(); }

    // llmrt::error naming the first key whose value cannot describe a llama model.
    void validate() const {
        auto positive = [](int32_t v, const char* key) {
            check(v > 0, errc::invalid_argument,
                  [&] { return std::string("llama model: ") + key + " = " + std::to_string(v) + " must be positive"; });
        };
        positive(n_vocab, "llama.vocab_size");
        positive(n_ctx_train, "llama.context_length");
        positive(n_embd, "llama.embedding_length");
        positive(n_layer, "llama.block_count");
        positive(n_ff, "llama.feed_forward_length");
        positive(n_head, "llama.attention.head_count");
        positive(n_head_kv, "llama.attention.head_count_kv");
        check(n_embd % n_head == 0, errc::invalid_argument, [&] {
            return "llama model: llama.embedding_length = " + std::to_string(n_embd) +
                   " is not a multiple of llama.attention.head_count = " + std::to_string(n_head);
        });
        check(n_head % n_head_kv == 0, errc::invalid_argument, [&] {
            return "llama model: llama.attention.head_count = " + std::to_string(n_head) +
                   " is not a multiple of llama.attention.head_count_kv = " + std::to_string(n_head_kv);
        });
        check(n_rot >= 2 && n_rot % 2 == 0 && n_rot <= head_dim(), errc::invalid_argument, [&] {
            return "llama model: llama.rope.dimension_count = " + std::to_string(n_rot) +
                   " must be even and within 2..head_dim = " + std::to_string(head_dim());
        });
        // Both must be finite: an infinite base turns every rope angle into NaN, an infinite
        // epsilon every normalized value into 0; a NaN one fails every comparison below anyway.
        check(std::isfinite(rope_freq_base) && rope_freq_base > 0.0f, errc::invalid_argument, [&] {
            return "llama model: llama.rope.freq_base = " + detail::float_text(rope_freq_base) +
                   " must be finite and positive";
        });
        check(std::isfinite(rms_eps) && rms_eps > 0.0f, errc::invalid_argument, [&] {
            return "llama model: llama.attention.layer_norm_rms_epsilon = " + detail::float_text(rms_eps) +
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
        return "llama model: metadata key '" + std::string(key) + "' holds " + gguf::describe(v) +
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
            return "llama model: metadata key '" + std::string(key) + "' holds float64 " + float_text(*d) +
                   ", beyond float's range";
        });
        return float(*d);
    }
    throw error(errc::invalid_argument, "llama model: metadata key '" + std::string(key) + "' holds " +
                                            gguf::describe(v) + ", not a float");
}

}  // namespace detail

// The hyperparameters in `meta`; n_vocab from llama.vocab_size or, when absent, `vocab_fallback`
// (token_embd's row count). llmrt::error naming the key that is missing or wrong.
inline llama_hparams llama_hparams_from(const gguf::metadata& meta, int32_t vocab_fallback) {
    const gguf::value* arch = meta.find("general.architecture");
    check(arch != nullptr, errc::invalid_argument, "llama model: metadata key 'general.architecture' is missing");
    const std::string* arch_name = std::get_if<std::string>(arch);
    check(arch_name != nullptr && *arch_name == "llama", errc::invalid_argument, [&] {
        return "llama model: metadata key 'general.architecture' is " +
               (arch_name ? "\"" + *arch_name + "\"" : gguf::describe(*arch)) + ", not \"llama\"";
    });
    llama_hparams h;
    h.n_ctx_train = detail::read_int(meta, "llama.context_length");
    h.n_embd = detail::read_int(meta, "llama.embedding_length");
    h.n_layer = detail::read_int(meta, "llama.block_count");
    h.n_ff = detail::read_int(meta, "llama.feed_forward_length");
    h.n_head = detail::read_int(meta, "llama.attention.head_count");
    h.n_head_kv = meta.contains("llama.attention.head_count_kv") ? detail::read_int(meta, "llama.attention.head_count_kv")
                                                                 : h.n_head;
    h.rms_eps = detail::read_float(meta, "llama.attention.layer_norm_rms_epsilon");
    if (meta.contains("llama.rope.freq_base")) h.rope_freq_base = detail::read_float(meta, "llama.rope.freq_base");
    h.n_vocab = meta.contains("llama.vocab_size") ? detail::read_int(meta, "llama.vocab_size") : vocab_fallback;
    h.n_rot = meta.contains("llama.rope.dimension_count") ? detail::read_int(meta, "llama.rope.dimension_count")
                                                          : h.head_dim();
    h.validate();
    return h;
}

}  // namespace llmrt::model
