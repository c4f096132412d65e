// A float GGUF model quantized to one weight type, as llama-quantize does without an importance
// matrix: every float matrix's rows go through llmrt's quantize_row (byte-identical to ggml's
// reference quantizers), everything else is copied as it is.
//
//   const auto in = gguf::file::open("model-f16.gguf");
//   auto r = model::quantize_file(in, {.type = qtype::q4_K, .output_type = qtype::q6_K});
//   // r.notes: one line per tensor kept as it was (rows that do not fit the block size), to show
//   r.writer.write("model-q4_K.gguf");   // `in` must outlive this: unchanged tensors are views
//
// Which tensor gets which type (llama.cpp's llama_tensor_get_type, reduced to what is simple):
//   - 1-D tensors (norms, biases), names not ending in ".weight", and MoE routers
//     (ffn_gate_inp.weight, which llama.cpp never quantizes) stay as they are;
//   - a name that a keep_f32 pattern finds (std::regex_search, ECMAScript) is stored as f32;
//   - token_embd.weight and output.weight take output_type (default: type);
//   - every other matrix (2-D, or 3-D expert stacks) takes type;
//   - a matrix whose rows are not a multiple of its new type's block size stays as it is, and a
//     note says so (llama.cpp falls back to another type instead; here the caller decides).
// A tensor that is to change type must be f32, f16 or bf16: requantizing a quantized tensor
// would add a second rounding, so it is an error naming the tensor and its type.
//
// The metadata is copied in order, with general.file_type set to llama.cpp's LLAMA_FTYPE of the
// main type (include/llama.h: q4_K is MOSTLY_Q4_K_M, 15, as bench/peer/gguf_maker writes it).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/core/qtype.hpp"
#include "llmrt/gguf/reader.hpp"
#include "llmrt/gguf/writer.hpp"
#include "llmrt/quant/codec.hpp"
#include "llmrt/quant/dispatch.hpp"
#include "llmrt/quant/types.hpp"

namespace llmrt::model {

struct quantize_options {
    qtype type = qtype::q8_0;                // the matrices' type: a weight type, or f32/f16/bf16
    std::optional<qtype> output_type{};      // token_embd.weight and output.weight; none: type
    std::vector<std::string> keep_f32{};     // regexes: a tensor whose name one finds is stored as f32
};

struct quantize_result {
    gguf::writer writer{};                   // the new file; its unchanged tensors view the input's bytes
    std::vector<std::string> notes{};        // one line per matrix left as it was for its row length
    int64_t quantized = 0;                   // tensors whose type changed
    int64_t kept = 0;                        // tensors copied as they were
};

// llama.cpp's general.file_type (enum llama_ftype) for a file mostly of type t.
inline uint32_t llama_file_type(qtype t) {
    switch (t) {
        case qtype::f32: return 0;
        case qtype::f16: return 1;
        case qtype::q4_0: return 2;
        case qtype::q4_1: return 3;
        case qtype::q8_0: return 7;
        case qtype::q5_0: return 8;
        case qtype::q5_1: return 9;
        case qtype::q2_K: return 10;
        case qtype::q3_K: return 12;    // MOSTLY_Q3_K_M
        case qtype::q4_K: return 15;    // MOSTLY_Q4_K_M
        case qtype::q5_K: return 17;    // MOSTLY_Q5_K_M
        case qtype::q6_K: return 18;
        case qtype::iq4_nl: return 25;
        case qtype::iq4_xs: return 30;
        case qtype::bf16: return 32;
        case qtype::mxfp4: return 38;   // MOSTLY_MXFP4_MOE
        default: break;
    }
    throw error(errc::unsupported_type, std::string("quantize: ") + name(t) + " (ggml type id " +
                                            std::to_string(uint32_t(t)) + ") is not a type a model file is stored in");
}

namespace detail {

inline bool is_float_type(qtype t) { return t == qtype::f32 || t == qtype::f16 || t == qtype::bf16; }

// The type a model's tensors can be quantized to: a weight type, or a float type.
inline void check_target_type(qtype t, const char* option) {
    check(is_in<weight_types>(t) || is_float_type(t), errc::unsupported_type, [&] {
        return std::string("quantize: ") + option + " " + name(t) + " is not a weight type (weight types: " +
               llmrt::detail::type_names(weight_types{}) + ", f32, f16, bf16)";
    });
}

inline bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

inline std::string shape_of(const gguf::tensor_info& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

// The rows of `t` (f32, f16 or bf16) as floats, then quantized to `to`, one row at a time.
inline std::vector<std::byte> convert_rows(const gguf::tensor_info& t, qtype to) {
    const qtype from = t.type();
    const int64_t k = t.ne[0], rows = t.elements() / k;
    const std::size_t in_row = row_size(from, k), out_row = row_size(to, k);
    std::vector<std::byte> out(out_row * std::size_t(rows));
    std::vector<float> row(std::size_t(k), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
        dequantize(from, t.data + std::size_t(r) * in_row, row.data(), k);
        quantize(to, row.data(), out.data() + std::size_t(r) * out_row, k);
    }
    return out;
}

}  // namespace detail

// The type `t` is to be stored in under `o`; the same type means "copy as it is". The row-length
// rule (see the top of this file) is applied by quantize_file, which notes it.
inline qtype planned_type(const gguf::tensor_info& t, const quantize_options& o,
                          const std::vector<std::regex>& keep_f32) {
    const qtype same = qtype(t.type_id);
    if (t.n_dims < 2 || !detail::ends_with(t.name, ".weight") || detail::ends_with(t.name, "ffn_gate_inp.weight"))
        return same;
    for (const std::regex& re : keep_f32)
        if (std::regex_search(t.name, re)) return qtype::f32;
    if (t.name == "token_embd.weight" || t.name == "output.weight") return o.output_type.value_or(o.type);
    return o.type;
}

// Quantizes every tensor of `in` as the top of this file says. llmrt::error for a type that is
// not a weight type, a keep_f32 pattern that is not a regex, or a tensor to be quantized that is
// not f32, f16 or bf16 (naming the tensor, its type and shape).
inline quantize_result quantize_file(const gguf::file& in, const quantize_options& o) {
    detail::check_target_type(o.type, "type");
    if (o.output_type) detail::check_target_type(*o.output_type, "output type");
    std::vector<std::regex> keep;
    for (const std::string& p : o.keep_f32) {
        try {
            keep.emplace_back(p, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            throw error(errc::invalid_argument, "quantize: keep-f32 pattern '" + p + "' is not a regex: " + e.what());
        }
    }

    quantize_result r;
    for (const auto& [key, v] : in.metadata()) r.writer.set(key, v);
    r.writer.set("general.file_type", llama_file_type(o.type));
    for (const gguf::tensor_info& t : in.tensors()) {
        const qtype from = qtype(t.type_id);
        qtype to = planned_type(t, o, keep);
        const std::span<const int64_t> shape(t.ne.data(), t.n_dims);
        if (to != from) {
            check(detail::is_float_type(from), errc::unsupported_type, [&] {
                return "quantize: tensor '" + t.name + "' " + detail::shape_of(t) + " is " + t.type_name() +
                       ", not f32, f16 or bf16: only float tensors are quantized (a second rounding would add "
                       "its error to the first)";
            });
            if (t.ne[0] % block_size(to) != 0) {
                r.notes.push_back("tensor '" + t.name + "' " + detail::shape_of(t) + ": rows of " +
                                  std::to_string(t.ne[0]) + " are not a multiple of " + name(to) + "'s block of " +
                                  std::to_string(block_size(to)) + "; kept as " + t.type_name());
                to = from;
            }
        }
        if (to == from) {
            r.writer.add_tensor_view(t.name, from, shape, t.bytes());
            ++r.kept;
        } else {
            r.writer.add_tensor(t.name, to, shape, detail::convert_rows(t, to));
            ++r.quantized;
        }
    }
    return r;
}

}  // namespace llmrt::model
