// llama_model<Backend>: a llama-architecture model from a GGUF file, run by the graph executor on
// one backend, with its KV cache.
//
//   auto file = std::make_shared<const gguf::file>(gguf::file::open("model.gguf"));
//   cpu::backend cpu;
//   model::llama_model<cpu::backend> m(cpu, file, {.n_ctx = 512, .max_batch = 8});
//   auto logits = m.forward(tokens, positions);   // tokens.size() x n_vocab floats
//   m.truncate(n);  auto s = m.save_state();  m.restore_state(s);
//
// The cache holds positions 0 .. cache_length() − 1. A forward call's positions must run on
// without a gap from a position at or below cache_length() (p, p+1, ...); starting below
// overwrites the cache from there, as truncate(p) would. Every column of every op is computed
// on its own, so a batch gives each token the bits it would get on its own, and restoring a
// state reproduces the next logits bit for bit. forward allocates nothing.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <concepts>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/gguf/reader.hpp"
#include "llmrt/graph/executor.hpp"
#include "llmrt/model/llama_graph.hpp"
#include "llmrt/model/tensor_parallel.hpp"
#include "llmrt/model/vocab.hpp"
#include "llmrt/model/weights.hpp"
#include "llmrt/sample/model.hpp"

namespace llmrt::model {

struct llama_options {
    int32_t n_ctx = 0;             // cache length; 0: the model's llama.context_length (see below)
    int32_t max_batch = 8;         // most tokens one forward call takes
    qtype kv_type = qtype::f32;    // f32 or f16
    // ranks > 0: this model is rank `rank` of a tensor-parallel group (model/tensor_parallel.hpp):
    // it holds its slices of the weights and its heads' KV cache, and its backend's communicator
    // connects it to the other ranks, each running the same calls on a model of its own. Every
    // rank returns the whole vocabulary's logits, the same bits on each.
    tensor_parallel tp{};
    // Computes each token's top probability on the device (llama_graph::top), which eval_greedy
    // reads: a draft model's confidence threshold without its logits. One small reduction more
    // per forward call.
    bool top_probability = false;
    // > 0: computes each token's top_candidates largest logits and their ids on the device
    // (llama_graph::top_ids, top_logits), which eval_top reads: temperature sampling whose chain
    // starts with top-k (k <= top_candidates) then reads k candidates per token, not n_vocab logits.
    // One top_k per forward call more; worth it on a GPU, where the logits' copy and the host's scan
    // cost more than the forward's last step (H200: 0.13 + 0.12 ms a token for 128256 logits).
    int32_t top_candidates = 0;
};

// The largest KV cache that n_ctx = 0 allocates. A file's llama.context_length is the longest
// context the model was trained for (128k positions in recent models, anything up to 2^31 − 1 in
// a corrupt or hostile file), not a size anyone asked for: past this the constructor raises
// llmrt::error naming the value and the bytes it would need, instead of allocating tens of GiB
// or failing with std::bad_alloc. An explicit n_ctx is taken as asked.
inline constexpr int64_t default_kv_cache_limit = int64_t(4) << 30;

// Bytes of the KV cache, K and V of every layer for n_ctx positions; -1 past INT64_MAX.
inline int64_t kv_cache_bytes(const llama_hparams& h, int32_t n_ctx, qtype kv_type) {
    int64_t bytes = int64_t(graph::column_bytes(kv_type, h.n_embd_kv()));
    for (int64_t factor : {int64_t(n_ctx), int64_t(h.n_layer), int64_t(2)})
        if (__builtin_mul_overflow(bytes, factor, &bytes)) return -1;
    return bytes;
}

// The KV cache's first n_past columns of every layer (K then V per layer), with what identifies
// the cache layout they fit.
struct llama_state {
    int32_t n_past = 0;
    int32_t n_layer = 0;
    int64_t n_embd_kv = 0;
    qtype kv_type = qtype::f32;
    std::vector<std::byte> kv;
};

template <class Backend>
class llama_model {
    static_assert(graph::backend<Backend>,
                  "llama_model<Backend>: Backend must model llmrt::graph::backend (include/llmrt/graph/backend.hpp)");

public:
    // An allocation that fails (an explicit n_ctx whose cache the machine cannot hold, say) raises
    // llmrt::error (out_of_memory) naming n_ctx, not std::bad_alloc.
    llama_model(Backend& b, std::shared_ptr<const gguf::file> file, llama_options options = {}) try
        : file_(checked(std::move(file))),
          weights_(std::make_unique<llama_weights>(load_llama_weights(*file_))),
          shard_(sharded(*weights_, options.tp, b)),
          options_(fits(resolved(options, local_hparams()), local_hparams(), b)),
          vocab_(read_vocabulary(file_->metadata(), weights_->hparams.n_vocab)),
          built_(with_outputs(shard_ ? build_llama_graph(*shard_, options_.n_ctx, options_.max_batch, options_.kv_type)
                                     : build_llama_graph(*weights_, options_.n_ctx, options_.max_batch, options_.kv_type),
                              options_)),
          exec_(b, built_.g),
          logits_(std::size_t(options_.max_batch) * std::size_t(weights_->hparams.n_vocab)),
          next_(std::size_t(options_.max_batch)) {
    } catch (const std::bad_alloc&) {
        throw error(errc::out_of_memory,
                    "llama_model: out of memory allocating the weights, KV cache and buffers for n_ctx = " +
                        std::to_string(options.n_ctx) + " (0: the file's length), max_batch = " +
                        std::to_string(options.max_batch) + " (model::kv_cache_bytes gives the cache's size)");
    }

    llama_model(Backend& b, gguf::file file, llama_options options = {})
        : llama_model(b, std::make_shared<const gguf::file>(std::move(file)), options) {}

    const llama_hparams& hparams() const noexcept { return weights_->hparams; }
    const llama_weights& weights() const noexcept { return *weights_; }
    // The hyperparameters of what this model computes: a tensor-parallel rank's heads and n_ff,
    // else hparams(). Its KV cache (and saved states) hold local_hparams().n_embd_kv() per position.
    const llama_hparams& local_hparams() const noexcept { return shard_ ? shard_->weights.hparams : weights_->hparams; }
    const llama_options& options() const noexcept { return options_; }
    const gguf::file& file() const noexcept { return *file_; }
    const graph::executor<Backend>& executor() const noexcept { return exec_; }

    // ---- The sampler layer's causal_model interface ----
    const sample::vocabulary& vocab() const noexcept { return vocab_; }
    int32_t vocab_size() const noexcept { return weights_->hparams.n_vocab; }
    int32_t context_length() const noexcept { return options_.n_ctx; }
    int32_t cache_length() const noexcept { return n_past_; }
    int32_t max_batch() const noexcept { return options_.max_batch; }

    // Runs tokens at positions p, p+1, ... (p <= cache_length(), at most max_batch tokens) and
    // returns tokens.size() rows of n_vocab logits, valid until the next call.
    std::span<const float> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions) {
        const auto n = run(tokens, positions);
        const auto logits = std::span<float>(logits_).first(std::size_t(n) * std::size_t(vocab_size()));
        const graph::read_request reads[] = {graph::read_request::of(built_.logits, logits),
                                             graph::read_request::of(built_.next, std::span<int32_t>(next_).first(std::size_t(n)))};
        exec_.read_together(reads);
        return logits;
    }

    // As forward, but reads back only the argmax of each token's logits (n ids instead of
    // n · n_vocab floats): what greedy decoding needs. Returns greedy().
    std::span<const int32_t> forward_greedy(std::span<const int32_t> tokens, std::span<const int32_t> positions) {
        const auto n = run(tokens, positions);
        exec_.read(built_.next, std::span<int32_t>(next_).first(std::size_t(n)));
        return greedy();
    }

    // The argmax of each row of the last forward call's logits.
    std::span<const int32_t> greedy() const { return std::span<const int32_t>(next_).first(std::size_t(n_last_)); }

    // What forward (eval) would refuse, raised without running anything: for a caller that must
    // know before it starts the call on several ranks (tensor_parallel_llama.hpp).
    void check_forward(std::span<const int32_t> tokens, std::span<const int32_t> positions) const {
        const auto n = int64_t(tokens.size());
        check(n >= 1 && n <= options_.max_batch && positions.size() == tokens.size(), errc::invalid_argument, [&] {
            return "llama_model::forward: " + std::to_string(n) + " tokens and " + std::to_string(positions.size()) +
                   " positions; need 1.." + std::to_string(options_.max_batch) + " tokens with one position each";
        });
        check(positions[0] >= 0 && positions[0] <= n_past_ && positions[0] + n <= options_.n_ctx, errc::invalid_argument, [&] {
            return "llama_model::forward: positions " + std::to_string(positions[0]) + ".." +
                   std::to_string(positions[0] + n - 1) + " must start at or below the cache length " +
                   std::to_string(n_past_) + " and end below the context length " + std::to_string(options_.n_ctx);
        });
        for (int64_t i = 1; i < n; ++i)
            check(positions[std::size_t(i)] == positions[0] + i, errc::invalid_argument, [&] {
                return "llama_model::forward: position " + std::to_string(positions[std::size_t(i)]) + " of token " +
                       std::to_string(i) + " does not follow " + std::to_string(positions[std::size_t(i - 1)]);
            });
        for (int32_t t : tokens)
            check(t >= 0 && t < vocab_size(), errc::invalid_argument, [&] {
                return "llama_model::forward: token " + std::to_string(t) + " is outside the vocabulary of " +
                       std::to_string(vocab_size());
            });
    }

    void check_eval(std::span<const int32_t> tokens, int32_t position, std::size_t logits_size) const {
        const std::size_t v = std::size_t(vocab_size());
        check(position == n_past_, errc::invalid_argument, [&] {
            return "llama_model::eval: position " + std::to_string(position) + " is not the cache length " +
                   std::to_string(n_past_);
        });
        check(logits_size == 0 || logits_size == tokens.size() * v, errc::invalid_argument, [&] {
            return "llama_model::eval: logits_out holds " + std::to_string(logits_size) + " floats, need 0 or " +
                   std::to_string(tokens.size() * v);
        });
        // Everything forward would refuse in a later chunk is refused here, before the first chunk
        // enters the cache: a failed eval leaves the model as it was.
        check(tokens.size() <= std::size_t(options_.n_ctx - n_past_), errc::invalid_argument, [&] {
            return "llama_model::eval: " + std::to_string(tokens.size()) + " tokens at position " +
                   std::to_string(position) + " do not fit the context length " + std::to_string(options_.n_ctx) +
                   " (" + std::to_string(options_.n_ctx - n_past_) + " positions left)";
        });
        for (std::size_t i = 0; i < tokens.size(); ++i)
            check(tokens[i] >= 0 && tokens[i] < vocab_size(), errc::invalid_argument, [&] {
                return "llama_model::eval: token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                       " is outside the vocabulary of " + std::to_string(vocab_size());
            });
    }

    // Appends tokens at `position` (which must equal cache_length()) in calls of up to max_batch
    // tokens; logits_out is tokens.size() x vocab_size() floats, or empty when not needed (then no
    // logits are read back: a prefill reads only the argmax ids greedy() holds).
    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits_out) {
        check_eval(tokens, position, logits_out.size());
        const std::size_t v = std::size_t(vocab_size());
        in_chunks(tokens, position, [&](std::span<const int32_t> chunk, std::span<const int32_t> positions, std::size_t done) {
            if (logits_out.empty()) {
                forward_greedy(chunk, positions);
                return;
            }
            const auto logits = forward(chunk, positions);
            std::memcpy(logits_out.data() + done * v, logits.data(), logits.size_bytes());
        });
    }

    // Whether eval_greedy can give top probabilities (llama_options::top_probability).
    bool has_top_probability() const noexcept { return built_.top.valid(); }

    // As eval, with each row of logits reduced on the device to what greedy decoding reads:
    // ids_out[i] = the row's argmax (the first index of its largest logit) and, when top_out is not
    // empty, top_out[i] = softmax's value there (llama_options::top_probability). tokens.size()
    // entries each; no logits are read back.
    void eval_greedy(std::span<const int32_t> tokens, int32_t position, std::span<int32_t> ids_out,
                     std::span<float> top_out) {
        check_eval_greedy(tokens, position, ids_out.size(), top_out.size());
        in_chunks(tokens, position, [&](std::span<const int32_t> chunk, std::span<const int32_t> positions, std::size_t done) {
            const auto n = std::size_t(run(chunk, positions));
            // The ids (and the probabilities) for one wait on the device.
            const graph::read_request reads[] = {
                graph::read_request::of(built_.next, std::span<int32_t>(next_).first(n)),
                graph::read_request::of(built_.top, top_out.empty() ? top_out : top_out.subspan(done, n))};
            exec_.read_together(std::span<const graph::read_request>(reads).first(top_out.empty() ? 1 : 2));
            std::copy_n(next_.begin(), n, ids_out.begin() + std::ptrdiff_t(done));
        });
    }

    // What eval_greedy refuses, raised without running anything (as check_forward).
    void check_eval_greedy(std::span<const int32_t> tokens, int32_t position, std::size_t ids_size,
                           std::size_t top_size) const {
        check_eval(tokens, position, 0);
        check(ids_size == tokens.size() && (top_size == 0 || top_size == tokens.size()), errc::invalid_argument, [&] {
            return "llama_model::eval_greedy: " + std::to_string(tokens.size()) + " tokens, " + std::to_string(ids_size) +
                   " ids and " + std::to_string(top_size) +
                   " top probabilities (need one id per token, and one probability per token or none)";
        });
        check(top_size == 0 || built_.top.valid(), errc::invalid_argument,
              "llama_model::eval_greedy: top probabilities need llama_options::top_probability");
    }

    // The candidates eval_top gives per token: llama_options::top_candidates, at most n_vocab (0: none).
    int32_t top_candidates() const noexcept {
        return built_.top_ids.valid() ? int32_t(built_.g.nodes()[std::size_t(built_.top_ids.id)].ne0) : 0;
    }

    // As eval, with each row of logits reduced on the device to its top_candidates() best
    // candidates: ids_out and logits_out hold tokens.size() x top_candidates() entries, row i's
    // best first (logit descending, id ascending); top_out, when not empty, one top probability per
    // token as eval_greedy gives it (llama_options::top_probability). No row of logits is read back.
    void eval_top(std::span<const int32_t> tokens, int32_t position, std::span<int32_t> ids_out,
                  std::span<float> logits_out, std::span<float> top_out = {}) {
        check_eval_top(tokens, position, ids_out.size(), logits_out.size(), top_out.size());
        const std::size_t k = std::size_t(top_candidates());
        in_chunks(tokens, position, [&](std::span<const int32_t> chunk, std::span<const int32_t> positions, std::size_t done) {
            run(chunk, positions);
            // Ids, logits (and probabilities) for one wait on the device.
            const graph::read_request reads[] = {
                graph::read_request::of(built_.top_ids, ids_out.subspan(done * k, chunk.size() * k)),
                graph::read_request::of(built_.top_logits, logits_out.subspan(done * k, chunk.size() * k)),
                graph::read_request::of(built_.top, top_out.empty() ? top_out : top_out.subspan(done, chunk.size()))};
            exec_.read_together(std::span<const graph::read_request>(reads).first(top_out.empty() ? 2 : 3));
        });
    }

    // What eval_top refuses, raised without running anything (as check_forward).
    void check_eval_top(std::span<const int32_t> tokens, int32_t position, std::size_t ids_size, std::size_t logits_size,
                        std::size_t top_size) const {
        check_eval(tokens, position, 0);
        const std::size_t k = std::size_t(top_candidates());
        check(k > 0 && ids_size == tokens.size() * k && logits_size == ids_size, errc::invalid_argument, [&] {
            return "llama_model::eval_top: " + std::to_string(tokens.size()) + " tokens, " + std::to_string(ids_size) +
                   " ids and " + std::to_string(logits_size) + " logits; need " + std::to_string(k) +
                   " of each per token" + (k ? "" : " (llama_options::top_candidates is 0)");
        });
        check(top_size == 0 || (built_.top.valid() && top_size == tokens.size()), errc::invalid_argument, [&] {
            return "llama_model::eval_top: " + std::to_string(top_size) + " top probabilities for " +
                   std::to_string(tokens.size()) + " tokens (need one per token, or none" +
                   (built_.top.valid() ? ")" : "; and llama_options::top_probability)");
        });
    }

    // Drops the cache back to its first n tokens (for speculative decoding's rejected drafts).
    void truncate(int32_t n) {
        check(n >= 0 && n <= n_past_, errc::invalid_argument, [&] {
            return "llama_model::truncate: " + std::to_string(n) + " is outside 0..cache length " + std::to_string(n_past_);
        });
        n_past_ = n;
    }

    // The cache's first cache_length() columns of every layer.
    llama_state save_state() const {
        llama_state s;
        s.n_past = n_past_;
        s.n_layer = hparams().n_layer;
        s.n_embd_kv = local_hparams().n_embd_kv();
        s.kv_type = options_.kv_type;
        const std::size_t bytes = column_bytes() * std::size_t(n_past_);
        s.kv.resize(bytes * 2 * std::size_t(s.n_layer));
        std::size_t at = 0;
        for (int32_t l = 0; l < s.n_layer; ++l)
            for (graph::tensor t : {built_.k_cache[std::size_t(l)], built_.v_cache[std::size_t(l)]}) {
                exec_.read_bytes(t, 0, s.kv.data() + at, bytes);
                at += bytes;
            }
        return s;
    }

    // Puts a saved cache back; the next forward call then gives the logits it gave after the save.
    void restore_state(const llama_state& s) {
        check(s.n_layer == hparams().n_layer && s.n_embd_kv == local_hparams().n_embd_kv() && s.kv_type == options_.kv_type,
              errc::invalid_argument, [&] {
                  return "llama_model::restore_state: the state holds " + std::to_string(s.n_layer) + " layers of " +
                         std::to_string(s.n_embd_kv) + " " + graph::type_name(s.kv_type) + " per position; this model has " +
                         std::to_string(hparams().n_layer) + " of " + std::to_string(local_hparams().n_embd_kv()) + " " +
                         graph::type_name(options_.kv_type);
              });
        const std::size_t bytes = column_bytes() * std::size_t(std::max(s.n_past, 0));
        check(s.n_past >= 0 && s.n_past <= options_.n_ctx && s.kv.size() == bytes * 2 * std::size_t(s.n_layer),
              errc::invalid_argument, [&] {
                  return "llama_model::restore_state: " + std::to_string(s.kv.size()) + " bytes for " +
                         std::to_string(s.n_past) + " positions do not fit a context of " + std::to_string(options_.n_ctx);
              });
        std::size_t at = 0;
        for (int32_t l = 0; l < s.n_layer; ++l)
            for (graph::tensor t : {built_.k_cache[std::size_t(l)], built_.v_cache[std::size_t(l)]}) {
                exec_.write_bytes(t, 0, s.kv.data() + at, bytes);
                at += bytes;
            }
        n_past_ = s.n_past;
    }

private:
    // f(chunk, its positions, tokens before it) for tokens at position, position + 1, ... in
    // chunks of at most max_batch.
    template <class F>
    void in_chunks(std::span<const int32_t> tokens, int32_t position, F&& f) {
        std::array<int32_t, 64> pos_chunk{};
        for (std::size_t done = 0; done < tokens.size();) {
            const std::size_t n = std::min({tokens.size() - done, std::size_t(options_.max_batch), pos_chunk.size()});
            for (std::size_t i = 0; i < n; ++i) pos_chunk[i] = int32_t(std::size_t(position) + done + i);
            f(tokens.subspan(done, n), std::span<const int32_t>(pos_chunk).first(n), done);
            done += n;
        }
    }

    static llama_graph with_outputs(llama_graph m, const llama_options& o) {
        check(o.top_candidates >= 0, errc::invalid_argument,
              [&] { return "llama_options::top_candidates = " + std::to_string(o.top_candidates) + " (need >= 0; 0: off)"; });
        if (o.top_probability) m = with_top_probability(std::move(m));
        if (o.top_candidates > 0) m = with_top_candidates(std::move(m), o.top_candidates);
        return m;
    }

    // Checks the tokens and positions, writes them and runs the graph; the cache then ends after
    // them. Returns the number of tokens.
    int64_t run(std::span<const int32_t> tokens, std::span<const int32_t> positions) {
        check_forward(tokens, positions);
        const auto n = int64_t(tokens.size());
        exec_.write(built_.tokens, tokens);
        exec_.write(built_.positions, positions);
        n_past_ = positions[0];  // from here the cache is being rewritten
        exec_.run(n);
        n_past_ = int32_t(positions[0] + n);
        n_last_ = n;
        return n;
    }

    static std::shared_ptr<const gguf::file> checked(std::shared_ptr<const gguf::file> f) {
        check(f != nullptr, errc::invalid_argument, "llama_model: null gguf file");
        return f;
    }

    // A backend that knows its memory (memory_bytes(), 0: unknown) refuses a KV cache larger than
    // all of it before anything is allocated.
    static llama_options fits(const llama_options& o, const llama_hparams& h, const Backend& b) {
        if constexpr (requires { { b.memory_bytes() } -> std::convertible_to<std::size_t>; }) {
            const std::size_t memory = b.memory_bytes();
            const int64_t bytes = kv_cache_bytes(h, o.n_ctx, o.kv_type);
            check(memory == 0 || uint64_t(bytes) <= memory, errc::out_of_memory, [&] {
                return "llama_model: n_ctx = " + std::to_string(o.n_ctx) + " needs a KV cache of " + std::to_string(bytes) +
                       " bytes; the " + std::string(b.name()) + " backend has " + std::to_string(memory) +
                       " bytes of memory (out of memory)";
            });
        }
        return o;
    }

    static llama_options resolved(llama_options o, const llama_hparams& h) {
        const bool from_file = o.n_ctx == 0;
        if (from_file) o.n_ctx = h.n_ctx_train;
        check(o.n_ctx >= 1 && o.max_batch >= 1 && o.max_batch <= 64, errc::invalid_argument, [&] {
            return "llama_model: n_ctx = " + std::to_string(o.n_ctx) + " must be >= 1 and max_batch = " +
                   std::to_string(o.max_batch) + " within 1..64";
        });
        check(o.kv_type == qtype::f32 || o.kv_type == qtype::f16, errc::unsupported_type,
              [&] { return std::string("llama_model: kv_type must be f32 or f16, not ") + graph::type_name(o.kv_type); });
        const int64_t bytes = kv_cache_bytes(h, o.n_ctx, o.kv_type);
        check(bytes >= 0 && (!from_file || bytes <= default_kv_cache_limit), errc::invalid_argument, [&] {
            const std::string source = from_file ? "llama.context_length = " + std::to_string(o.n_ctx) + " (n_ctx = 0)"
                                                 : "n_ctx = " + std::to_string(o.n_ctx);
            const std::string need = bytes < 0 ? "more than 2^63 - 1" : std::to_string(bytes);
            return "llama_model: " + source + " needs a KV cache of " + need + " bytes (" + std::to_string(h.n_layer) +
                   " layers x K and V x " + std::to_string(o.n_ctx) + " positions x " +
                   std::to_string(graph::column_bytes(o.kv_type, h.n_embd_kv())) + " bytes of " +
                   graph::type_name(o.kv_type) + ")" +
                   (from_file ? ", more than the " + std::to_string(default_kv_cache_limit) +
                                    " bytes a default context may take; pass a smaller llama_options::n_ctx"
                              : "");
        });
        return o;
    }

    std::size_t column_bytes() const { return graph::column_bytes(options_.kv_type, local_hparams().n_embd_kv()); }

    // The rank's shard (null without tensor parallelism); a backend that knows its rank and group
    // size (rank(), ranks()) must be that rank of that many.
    static std::unique_ptr<llama_shard> sharded(const llama_weights& w, tensor_parallel tp, const Backend& b) {
        if (tp.ranks == 0) return nullptr;
        if constexpr (requires { { b.rank() } -> std::convertible_to<int32_t>; { b.ranks() } -> std::convertible_to<int32_t>; })
            check(b.rank() == tp.rank && b.ranks() == tp.ranks, errc::invalid_argument, [&] {
                return "llama_model: tensor-parallel rank " + std::to_string(tp.rank) + " of " + std::to_string(tp.ranks) +
                       " on a " + std::string(b.name()) + " backend whose communicator is rank " + std::to_string(b.rank()) +
                       " of " + std::to_string(b.ranks());
            });
        return std::make_unique<llama_shard>(shard_llama_weights(w, tp));
    }

    std::shared_ptr<const gguf::file> file_;
    std::unique_ptr<llama_weights> weights_;  // the graph points into it: kept at a fixed address
    std::unique_ptr<llama_shard> shard_;      // tensor parallelism: this rank's slices (into *weights_)
    llama_options options_;
    sample::vocabulary vocab_;
    llama_graph built_;
    graph::executor<Backend> exec_;
    std::vector<float> logits_;
    std::vector<int32_t> next_;
    int32_t n_past_ = 0;
    int64_t n_last_ = 0;
};

}  // namespace llmrt::model
