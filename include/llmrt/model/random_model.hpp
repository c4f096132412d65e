// Random GGUF models of a chosen architecture (llama, qwen2, qwen3, qwen3moe, gpt-oss: arch/registry.hpp), shape and
// weight type, for tests, examples and benches: the file has every tensor and metadata key such a
// GGUF has (and, optionally, a small SentencePiece-style vocabulary), so it loads in llmrt, in
// ggml-based tools and in PyPI's gguf.
//
//   auto w = model::make_random_llama({.n_embd = 256, .n_layer = 2}, qtype::q4_K, /*seed=*/1);
//   w.write("tiny.gguf");                        // or gguf::file::from_bytes(w.to_bytes())
//
// Values are a pure function of (seed, tensor, index): splitmix64 bits mapped to uniform floats,
// so the same arguments give the same file on every platform. Matrices are uniform with variance
// 1/k (activations keep their scale through a layer), norms 1 ± 0.1 (q/k norms 1 ± 0.5), biases
// ±0.5, attention sinks ±2, rope frequency factors 1..8, embeddings variance 1.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/gguf/writer.hpp"
#include "llmrt/model/arch/registry.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::model {

struct llama_shape {
    int32_t n_vocab = 512;
    int32_t n_embd = 256;
    int32_t n_layer = 2;
    int32_t n_head = 4;
    int32_t n_head_kv = 2;
    int32_t n_ff = 512;
    int32_t n_ctx = 256;
    float rope_freq_base = 10000.0f;
    float rms_eps = 1e-5f;
    bool tied_output = false;  // no output.weight: the logits reuse token_embd
    bool vocabulary = true;    // write tokenizer.ggml.* (a SentencePiece-style "llama" vocabulary)
    std::string architecture = "llama";  // general.architecture and the keys' prefix
    int32_t head_dim = 0;      // > 0: written as <arch>.attention.key_length; 0: n_embd / n_head
    bool qkv_bias = false;     // write blk.N.attn_{q,k,v}.bias where optional (always where required)
    std::string rope_scaling_type{};  // written as <arch>.rope.scaling.type when not empty
    float rope_scaling_factor = 0.0f;  // written as <arch>.rope.scaling.factor when not 0
    int32_t rope_original_context = 0;  // written as <arch>.rope.scaling.original_context_length when > 0
    int32_t sliding_window = 8;  // <arch>.attention.sliding_window, for architectures with one (gpt-oss)
    bool rope_freqs = false;   // write rope_freqs.weight (n_rot/2 factors)
    // Mixture-of-experts architectures (qwen3moe, gpt-oss): n_expert experts of n_ff_exp rows, k used per
    // token; the router is f32, as converted Qwen3-MoE files keep it.
    int32_t n_expert = 8;
    int32_t n_expert_used = 2;
    int32_t n_ff_exp = 64;
};

namespace detail {

inline uint64_t splitmix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

inline uint64_t name_hash(const std::string& s) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

// n uniform values in [center − half_width, center + half_width], from (seed, tensor name).
inline std::vector<float> uniform_values(uint64_t seed, const std::string& tensor, std::size_t n, float center,
                                         float half_width) {
    std::vector<float> v(n);
    const uint64_t base = splitmix(seed ^ name_hash(tensor));
    for (std::size_t i = 0; i < n; ++i) {
        const double u = double(splitmix(base + i) >> 40) * 0x1p-24;  // [0, 1) in 24 bits
        v[i] = float(double(center) + double(half_width) * (2.0 * u - 1.0));
    }
    return v;
}

// Pieces of a small SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte tokens, then
// "▁"-prefixed syllable words, n in all.
inline std::vector<std::string> vocabulary_pieces(int32_t n) {
    std::vector<std::string> pieces{"<unk>", "<s>", "</s>"};
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    static const char* onsets[] = {"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"};
    static const char* vowels[] = {"a", "e", "i", "o", "u"};
    // Word i spells i in base 70, one consonant-vowel syllable per digit: all words differ.
    for (int i = 0; int32_t(pieces.size()) < n; ++i) {
        std::string word = "\xE2\x96\x81";  // ▁
        int x = i;
        do {
            word += std::string(onsets[x % 14]) + vowels[(x / 14) % 5];
            x /= 70;
        } while (x > 0);
        pieces.push_back(word);
    }
    pieces.resize(std::size_t(n));
    return pieces;
}

}  // namespace detail

// A writer holding the whole random model; every matrix in weight_type (k of each a multiple of
// its block size, else llmrt::error naming the tensor), norms in f32.
inline gguf::writer make_random_llama(const llama_shape& s, qtype weight_type, uint64_t seed = 1) {
    check(s.n_vocab > 0 && s.n_embd > 0 && s.n_layer > 0 && s.n_head > 0 && s.n_head_kv > 0 && s.n_ff > 0 &&
              s.n_ctx > 0 && (s.head_dim > 0 || s.n_embd % s.n_head == 0) && s.n_head % s.n_head_kv == 0,
          errc::invalid_argument, [&] {
              return "make_random_llama: shape n_vocab " + std::to_string(s.n_vocab) + ", n_embd " +
                     std::to_string(s.n_embd) + ", n_layer " + std::to_string(s.n_layer) + ", n_head " +
                     std::to_string(s.n_head) + ", n_head_kv " + std::to_string(s.n_head_kv) + ", n_ff " +
                     std::to_string(s.n_ff) + ", n_ctx " + std::to_string(s.n_ctx) +
                     ": all must be positive, n_head must divide n_embd and n_head_kv divide n_head";
          });
    check(is_in<all_types>(weight_type), errc::unsupported_type, [&] {
        return "make_random_llama: weight type id " + std::to_string(uint32_t(weight_type)) + " is not supported";
    });
    const architecture* arch = find_architecture(s.architecture);
    check(arch != nullptr, errc::invalid_argument, [&] {
        return "make_random_llama: architecture \"" + s.architecture + "\" is not one of " + architecture_names();
    });
    const int32_t head_dim = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
    check(head_dim % 2 == 0, errc::invalid_argument, [&] {
        return "make_random_llama: head_dim " + std::to_string(head_dim) + " must be even for rope";
    });
    const int32_t n_embd_q = s.n_head * head_dim, n_embd_kv = s.n_head_kv * head_dim;
    const std::string a(arch->name);
    check(!s.tied_output || arch->output != presence::required, errc::invalid_argument, [&] {
        return "make_random_llama: the " + a + " architecture requires output.weight; tied_output must be false";
    });

    gguf::writer w;
    w.set("general.architecture", a);
    w.set("general.name", "llmrt random " + a);
    w.set(a + ".context_length", uint32_t(s.n_ctx));
    w.set(a + ".embedding_length", uint32_t(s.n_embd));
    w.set(a + ".block_count", uint32_t(s.n_layer));
    w.set(a + ".feed_forward_length", uint32_t(s.n_ff));
    const bool moe = arch->ffn.kind == ffn_kind::experts;
    if (moe) {
        check(s.n_expert > 0 && s.n_expert_used > 0 && s.n_expert_used <= s.n_expert && s.n_ff_exp > 0,
              errc::invalid_argument, [&] {
                  return "make_random_llama: n_expert " + std::to_string(s.n_expert) + ", n_expert_used " +
                         std::to_string(s.n_expert_used) + ", n_ff_exp " + std::to_string(s.n_ff_exp) +
                         ": all positive, n_expert_used at most n_expert";
              });
        w.set(a + ".expert_count", uint32_t(s.n_expert));
        w.set(a + ".expert_used_count", uint32_t(s.n_expert_used));
        w.set(a + ".expert_feed_forward_length", uint32_t(s.n_ff_exp));
    }
    w.set(a + ".attention.head_count", uint32_t(s.n_head));
    w.set(a + ".attention.head_count_kv", uint32_t(s.n_head_kv));
    if (s.head_dim > 0) {
        w.set(a + ".attention.key_length", uint32_t(head_dim));
        w.set(a + ".attention.value_length", uint32_t(head_dim));
    }
    w.set(a + ".rope.freq_base", s.rope_freq_base);
    w.set(a + ".rope.dimension_count", uint32_t(head_dim));
    if (!s.rope_scaling_type.empty()) w.set(a + ".rope.scaling.type", s.rope_scaling_type);
    if (s.rope_scaling_factor != 0.0f) w.set(a + ".rope.scaling.factor", s.rope_scaling_factor);
    if (s.rope_original_context > 0)
        w.set(a + ".rope.scaling.original_context_length", uint32_t(s.rope_original_context));
    if (arch->attention.sliding_window) w.set(a + ".attention.sliding_window", uint32_t(s.sliding_window));
    w.set(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
    w.set(a + ".vocab_size", uint32_t(s.n_vocab));
    if (s.vocabulary) {
        auto pieces = detail::vocabulary_pieces(s.n_vocab);
        std::vector<float> scores(pieces.size());
        std::vector<int32_t> kinds(pieces.size());
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            // SentencePiece token types: 1 normal, 2 unknown, 3 control, 6 byte.
            kinds[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
            scores[i] = -float(i);
        }
        w.set("tokenizer.ggml.model", std::string("llama"));
        w.set("tokenizer.ggml.tokens", gguf::array(std::move(pieces)));
        w.set("tokenizer.ggml.scores", gguf::array(std::move(scores)));
        w.set("tokenizer.ggml.token_type", gguf::array(std::move(kinds)));
        if (s.n_vocab > 2) {
            w.set("tokenizer.ggml.bos_token_id", uint32_t(1));
            w.set("tokenizer.ggml.eos_token_id", uint32_t(2));
        }
    }

    auto add = [&](const std::string& name, qtype type, int64_t ne0, int64_t ne1, float center, float half_width,
                   int64_t ne2 = 1) {
        check(ne0 % block_size(type) == 0, errc::shape_mismatch, [&] {
            return "make_random_llama: tensor '" + name + "' has rows of " + std::to_string(ne0) + " elements, not a " +
                   "multiple of " + llmrt::name(type) + "'s block size " + std::to_string(block_size(type)) +
                   " (pick dimensions that are, or another type)";
        });
        const auto values = detail::uniform_values(seed, name, std::size_t(ne0 * ne1 * ne2), center, half_width);
        const std::size_t row_bytes = row_size(type, ne0);
        std::vector<std::byte> bytes(row_bytes * std::size_t(ne1 * ne2));
        for (int64_t r = 0; r < ne1 * ne2; ++r)
            quantize(type, values.data() + r * ne0, bytes.data() + std::size_t(r) * row_bytes, ne0);
        if (ne2 > 1)
            w.add_tensor(name, type, {ne0, ne1, ne2}, bytes);
        else if (ne1 == 1)
            w.add_tensor(name, type, {ne0}, bytes);
        else
            w.add_tensor(name, type, {ne0, ne1}, bytes);
    };
    // Uniform on [−a, a] has variance a²/3: a = sqrt(3/k) gives variance 1/k.
    auto matrix = [&](const std::string& name, int64_t k, int64_t rows) {
        add(name, weight_type, k, rows, 0.0f, std::sqrt(3.0f / float(k)));
    };
    auto norm = [&](const std::string& name) { add(name, qtype::f32, s.n_embd, 1, 1.0f, 0.1f); };
    const attention_block& opt = arch->attention;
    const bool bias = opt.qkv_bias == presence::required || (opt.qkv_bias == presence::optional && s.qkv_bias);

    add("token_embd.weight", weight_type, s.n_embd, s.n_vocab, 0.0f, std::sqrt(3.0f));
    if (s.rope_freqs) add("rope_freqs.weight", qtype::f32, head_dim / 2, 1, 4.5f, 3.5f);
    for (int32_t l = 0; l < s.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        norm(p + "attn_norm.weight");
        matrix(p + "attn_q.weight", s.n_embd, n_embd_q);
        matrix(p + "attn_k.weight", s.n_embd, n_embd_kv);
        matrix(p + "attn_v.weight", s.n_embd, n_embd_kv);
        if (bias) {
            add(p + "attn_q.bias", qtype::f32, n_embd_q, 1, 0.0f, 0.5f);
            add(p + "attn_k.bias", qtype::f32, n_embd_kv, 1, 0.0f, 0.5f);
            add(p + "attn_v.bias", qtype::f32, n_embd_kv, 1, 0.0f, 0.5f);
        }
        if (opt.qk_norm == presence::required) {
            add(p + "attn_q_norm.weight", qtype::f32, head_dim, 1, 1.0f, 0.5f);
            add(p + "attn_k_norm.weight", qtype::f32, head_dim, 1, 1.0f, 0.5f);
        }
        matrix(p + "attn_output.weight", n_embd_q, s.n_embd);
        if (opt.output_bias == presence::required) add(p + "attn_output.bias", qtype::f32, s.n_embd, 1, 0.0f, 0.5f);
        if (opt.sinks == presence::required) add(p + "attn_sinks.weight", qtype::f32, s.n_head, 1, 0.0f, 2.0f);
        norm(p + std::string(arch->ffn.norm) + ".weight");
        if (moe) {  // the router in f32 with variance 1/k; experts one after another in 3-D tensors
            add(p + "ffn_gate_inp.weight", qtype::f32, s.n_embd, s.n_expert, 0.0f, std::sqrt(3.0f / float(s.n_embd)));
            const float a_embd = std::sqrt(3.0f / float(s.n_embd)), a_ff = std::sqrt(3.0f / float(s.n_ff_exp));
            add(p + "ffn_gate_exps.weight", weight_type, s.n_embd, s.n_ff_exp, 0.0f, a_embd, s.n_expert);
            add(p + "ffn_up_exps.weight", weight_type, s.n_embd, s.n_ff_exp, 0.0f, a_embd, s.n_expert);
            add(p + "ffn_down_exps.weight", weight_type, s.n_ff_exp, s.n_embd, 0.0f, a_ff, s.n_expert);
            if (arch->ffn.router_bias == presence::required)
                add(p + "ffn_gate_inp.bias", qtype::f32, s.n_expert, 1, 0.0f, 0.5f);
            if (arch->ffn.expert_bias == presence::required) {
                add(p + "ffn_gate_exps.bias", qtype::f32, s.n_ff_exp, s.n_expert, 0.0f, 0.5f);
                add(p + "ffn_up_exps.bias", qtype::f32, s.n_ff_exp, s.n_expert, 0.0f, 0.5f);
                add(p + "ffn_down_exps.bias", qtype::f32, s.n_embd, s.n_expert, 0.0f, 0.5f);
            }
        } else {
            matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
            matrix(p + "ffn_up.weight", s.n_embd, s.n_ff);
            matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
        }
    }
    norm("output_norm.weight");
    if (!s.tied_output) matrix("output.weight", s.n_embd, s.n_vocab);
    return w;
}

// Writes make_random_llama(shape, weight_type, seed) to `path`.
inline void write_random_llama(const std::filesystem::path& path, const llama_shape& s, qtype weight_type,
                               uint64_t seed = 1) {
    make_random_llama(s, weight_type, seed).write(path);
}

}  // namespace llmrt::model
