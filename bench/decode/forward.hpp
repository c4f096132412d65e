// The forwards llmrt-bench-decode times: single_forward (the whole model on one backend) and
// tensor_parallel_forward (--gpus N: the model's shards on N backends, in lockstep), each
// call(tokens, positions, n, next) writing the tokens, running the forward and reading the ids.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <llmrt/comm/rank_threads.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/model/model.hpp>

namespace llmrt_bench {

using namespace llmrt;

// The decode forward on one backend: the whole model's graph and its executor.
template <class Backend>
class single_forward {
public:
    single_forward(Backend& backend, const model::llama_weights& w, int32_t n_ctx, bool fuse,
                   const graph::lower_options& allow = {})
        : single_forward(backend, model::build_llama_graph(w, n_ctx, batch, qtype::f16), fuse, allow) {}
    // A tensor-parallel rank's forward: its shard's graph, with the all-reduces and the logits'
    // all-gather over the backend's communicator (the shard's weights alone build a graph that
    // never communicates, whose ids are wrong and whose speed leaves the collectives out).
    single_forward(Backend& backend, const model::llama_shard& shard, int32_t n_ctx, bool fuse,
                   const graph::lower_options& allow = {})
        : single_forward(backend, model::build_llama_graph(shard, n_ctx, batch, qtype::f16), fuse, allow) {}

    static constexpr int32_t batch = 8;
    std::size_t steps() const { return ex_.get_plan().steps.size(); }
    // Writes n tokens and positions (unless tokens is null), runs the forward for n, and reads
    // the n ids after them into next (unless null).
    void call(const int32_t* tokens, const int32_t* positions, int32_t n, int32_t* next) {
        if (tokens) {
            ex_.write(built_.tokens, std::span<const int32_t>(tokens, std::size_t(n)));
            ex_.write(built_.positions, std::span<const int32_t>(positions, std::size_t(n)));
        }
        ex_.run(n);
        if (next) ex_.read(built_.next, std::span<int32_t>(next, std::size_t(n)));
    }
    const model::llama_graph& built() const { return built_; }
    graph::executor<Backend>& executor() { return ex_; }

private:
    single_forward(Backend& backend, model::llama_graph built, bool fuse, const graph::lower_options& allow)
        : built_(std::move(built)), ex_(backend, built_.g, {.fuse = fuse, .allow = allow}) {}

    model::llama_graph built_;
    graph::executor<Backend> ex_;
};

// --gpus N: the same forward as N ranks of a tensor-parallel group (model/tensor_parallel.hpp),
// each its shard's graph and executor on a backend of its own, driven in lockstep on the ranks'
// threads (comm/rank_threads.hpp): every call runs on every rank, rank 0's ids are returned.
template <class Backend>
class tensor_parallel_forward {
public:
    template <class MakeBackend, class Cancel>
    tensor_parallel_forward(int32_t ranks, MakeBackend&& make_backend, Cancel&& cancel, const model::llama_weights& w,
                            int32_t n_ctx, bool fuse, const graph::lower_options& allow = {})
        : threads_(ranks, cancel), ranks_(std::size_t(ranks)) {
        try {
            threads_.run([&](int32_t r) {
                rank& k = ranks_[std::size_t(r)];
                k.backend = make_backend(r);
                k.shard = model::shard_llama_weights(w, {r, ranks});
                k.forward = std::make_unique<single_forward<Backend>>(*k.backend, k.shard, n_ctx, fuse, allow);
            });
        } catch (...) {
            release();
            throw;
        }
    }
    tensor_parallel_forward(const tensor_parallel_forward&) = delete;
    tensor_parallel_forward& operator=(const tensor_parallel_forward&) = delete;
    ~tensor_parallel_forward() { release(); }

    static constexpr int32_t batch = single_forward<Backend>::batch;
    std::size_t steps() const { return ranks_[0].forward->steps(); }
    void call(const int32_t* tokens, const int32_t* positions, int32_t n, int32_t* next) {
        threads_.run([&](int32_t r) {
            rank& k = ranks_[std::size_t(r)];
            k.next.resize(std::size_t(batch));
            k.forward->call(tokens, positions, n, next ? (r == 0 ? next : k.next.data()) : nullptr);
        });
    }

private:
    struct rank {
        std::unique_ptr<Backend> backend;
        model::llama_shard shard;
        std::unique_ptr<single_forward<Backend>> forward;  // destroyed before the backend
        std::vector<int32_t> next;
    };
    void release() noexcept {
        threads_.finish([&](int32_t r) {
            ranks_[std::size_t(r)].forward.reset();
            ranks_[std::size_t(r)].backend.reset();
        });
    }

    comm::rank_threads threads_;
    std::vector<rank> ranks_;
};

}  // namespace llmrt_bench
