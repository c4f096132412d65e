// model::tensor_parallel_llama<Backend>: a tensor-parallel llama (model/tensor_parallel.hpp) of
// N ranks driven from one thread, with llama_model's interface: each rank is a backend and a
// llama_model of its shard on a thread of its own (comm/rank_threads.hpp); every call runs on
// all ranks in lockstep, the same tokens on each, and returns rank 0's result. The logits are
// all-gathered, so every rank holds the same bits and takes the same argmax.
//
//   comm::local_group group(4);                                       // CPU ranks
//   model::tensor_parallel_llama<cpu::backend> m(4, [&](int32_t r) {
//       return std::make_unique<cpu::backend>(cpu::backend_options{.communicator = &group.rank(r)});
//   }, file, {.n_ctx = 512}, [&] { group.cancel(); });
//
//   auto group = cuda::nccl_local_group(2);                           // GPUs 0 and 1
//   model::tensor_parallel_llama<cuda::backend> m(2, [&](int32_t r) {
//       return std::make_unique<cuda::backend>(cuda::backend_options{.device = group[r].device(), .nccl = &group[r]});
//   }, file, {.n_ctx = 512}, [&] { cuda::cancel_nccl_group(group); });
//   auto ids = model::generate_greedy(m, prompt, 32);
//
// The group (its communicators) must outlive the model. make_backend(r) runs on rank r's thread,
// which then makes and runs rank r's llama_model (options.tp = {r, N}) and destroys both.
// Building and every forward are separate lockstep steps, so a rank that fails to build (out of
// memory on its device, say) fails before any collective; a rank that fails inside a forward
// cancels the group (`cancel`: it must wake the ranks waiting in its collectives) and the caller
// gets the first rank's llmrt::error, not a hang. A cancelled model refuses every later call.
// Arguments a rank would refuse are checked on the caller's thread before any rank runs. How
// sure the wake-up is depends on `cancel`: comm::local_group::cancel always wakes its ranks;
// cuda::cancel_nccl_group is NCCL's revoke or abort, not yet seen to work end to end on several
// GPUs (cuda/nccl.cuh says what was seen).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llmrt/comm/rank_threads.hpp"
#include "llmrt/core/error.hpp"
#include "llmrt/model/llama.hpp"

namespace llmrt::model {

template <class Backend>
class tensor_parallel_llama {
public:
    using backend_factory = std::function<std::unique_ptr<Backend>(int32_t rank)>;

    tensor_parallel_llama(int32_t ranks, backend_factory make_backend, std::shared_ptr<const gguf::file> file,
                          llama_options options = {}, std::function<void()> cancel = {})
        : threads_(ranks, std::move(cancel)), ranks_(std::size_t(ranks)) {
        check(bool(make_backend) && file != nullptr, errc::invalid_argument,
              "tensor_parallel_llama: needs a backend factory and a file");
        try {
            threads_.run([&](int32_t r) {
                rank& k = ranks_[std::size_t(r)];
                k.backend = make_backend(r);
                check(k.backend != nullptr, errc::invalid_argument,
                      [&] { return "tensor_parallel_llama: the backend factory gave no backend for rank " + std::to_string(r); });
                llama_options o = options;
                o.tp = {r, ranks};
                k.model = std::make_unique<llama_model<Backend>>(*k.backend, file, o);
            });
        } catch (...) {
            release();
            throw;
        }
    }
    tensor_parallel_llama(const tensor_parallel_llama&) = delete;
    tensor_parallel_llama& operator=(const tensor_parallel_llama&) = delete;
    ~tensor_parallel_llama() { release(); }

    int32_t ranks() const noexcept { return threads_.size(); }
    // Rank r's model, to read (its options, local_hparams, executor); calls that run it must go
    // through this class, so that every rank runs them.
    const llama_model<Backend>& model(int32_t r) const { return *ranks_.at(std::size_t(r)).model; }
    // Rank r's logits of the last forward call (each rank's own copy; the same bits on all).
    std::span<const float> logits(int32_t r) const { return ranks_.at(std::size_t(r)).logits; }

    // ---- llama_model's interface (the sampler layer's causal_model) ----
    const llama_hparams& hparams() const noexcept { return first().hparams(); }
    const llama_options& options() const noexcept { return first().options(); }
    const sample::vocabulary& vocab() const noexcept { return first().vocab(); }
    int32_t vocab_size() const noexcept { return first().vocab_size(); }
    int32_t context_length() const noexcept { return first().context_length(); }
    int32_t cache_length() const noexcept { return first().cache_length(); }
    int32_t max_batch() const noexcept { return first().max_batch(); }

    // A call's arguments are checked on the caller's thread first (rank 0's model says what every
    // rank would refuse): a bad token is an llmrt::error that leaves the model usable, where a
    // rank failing on its own would cancel the group.
    std::span<const float> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions) {
        first().check_forward(tokens, positions);
        threads_.run([&](int32_t r) {
            rank& k = ranks_[std::size_t(r)];
            k.logits = k.model->forward(tokens, positions);
        });
        return ranks_[0].logits;
    }
    std::span<const int32_t> forward_greedy(std::span<const int32_t> tokens, std::span<const int32_t> positions) {
        first().check_forward(tokens, positions);
        threads_.run([&](int32_t r) { ranks_[std::size_t(r)].model->forward_greedy(tokens, positions); });
        return greedy();
    }
    std::span<const int32_t> greedy() const { return first().greedy(); }

    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits_out) {
        first().check_eval(tokens, position, logits_out.size());
        // Rank 0 writes logits_out; the others compute the same and keep theirs.
        threads_.run([&](int32_t r) {
            ranks_[std::size_t(r)].model->eval(tokens, position, r == 0 ? logits_out : std::span<float>());
        });
    }
    // As llama_model's, checked on the caller's thread first: every rank reduces the same gathered
    // logits on its device; rank 0's outputs go to the caller, the others' to scratch of their own.
    bool has_top_probability() const noexcept { return first().has_top_probability(); }
    void eval_greedy(std::span<const int32_t> tokens, int32_t position, std::span<int32_t> ids_out,
                     std::span<float> top_out) {
        first().check_eval_greedy(tokens, position, ids_out.size(), top_out.size());
        threads_.run([&](int32_t r) {
            rank& k = ranks_[std::size_t(r)];
            if (r == 0) return k.model->eval_greedy(tokens, position, ids_out, top_out);
            k.ids.resize(ids_out.size());
            k.values.resize(top_out.size());
            k.model->eval_greedy(tokens, position, k.ids, k.values);
        });
    }

    int32_t top_candidates() const noexcept { return first().top_candidates(); }
    void eval_top(std::span<const int32_t> tokens, int32_t position, std::span<int32_t> ids_out,
                  std::span<float> logits_out, std::span<float> top_out = {}) {
        first().check_eval_top(tokens, position, ids_out.size(), logits_out.size(), top_out.size());
        threads_.run([&](int32_t r) {
            rank& kr = ranks_[std::size_t(r)];
            if (r == 0) return kr.model->eval_top(tokens, position, ids_out, logits_out, top_out);
            kr.ids.resize(ids_out.size());
            kr.values.resize(logits_out.size() + top_out.size());
            const std::span<float> values(kr.values);
            kr.model->eval_top(tokens, position, kr.ids, values.first(logits_out.size()), values.subspan(logits_out.size()));
        });
    }

    void truncate(int32_t n) {
        check(n >= 0 && n <= cache_length(), errc::invalid_argument, [&] {
            return "tensor_parallel_llama::truncate: " + std::to_string(n) + " is outside 0..cache length " +
                   std::to_string(cache_length());
        });
        threads_.run([&](int32_t r) { ranks_[std::size_t(r)].model->truncate(n); });
    }

private:
    struct rank {
        std::unique_ptr<Backend> backend;
        std::unique_ptr<llama_model<Backend>> model;  // destroyed before its backend
        std::span<const float> logits;
        std::vector<int32_t> ids;   // the outputs of ranks past 0, which the caller does not take
        std::vector<float> values;
    };

    const llama_model<Backend>& first() const { return *ranks_[0].model; }

    // Each rank's model, then its backend, on the rank's thread.
    void release() noexcept {
        threads_.finish([&](int32_t r) {
            rank& k = ranks_[std::size_t(r)];
            k.model.reset();
            k.backend.reset();
        });
    }

    comm::rank_threads threads_;
    std::vector<rank> ranks_;
};

}  // namespace llmrt::model
