// executor<Backend>: a graph planned for one backend and prepared on it, ready to run.
//
//   graph::executor<cpu::backend> ex(cpu_backend, std::move(g));   // plans and allocates here
//   ex.write(tokens, token_ids);  ex.write(positions, pos);
//   ex.run(n_tokens);                                               // allocates nothing
//   ex.read(logits, out);
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "llmrt/graph/backend.hpp"

namespace llmrt::graph {

template <class Backend>
class executor {
    static_assert(backend<Backend>,
                  "llmrt::graph::executor<Backend>: Backend must model graph::backend (name, scratch_bytes, "
                  "prepare -> program with run, write, read; see include/llmrt/graph/backend.hpp)");

public:
    using program_type = decltype(std::declval<Backend&>().prepare(std::declval<const graph&>(),
                                                                   std::declval<const plan&>()));

    executor(Backend& b, graph g, plan_options options = {})
        : backend_(&b), planned_(std::make_unique<planned>(std::move(g), b, options)),
          program_(b.prepare(planned_->g, planned_->p)) {}

    const graph& get_graph() const noexcept { return planned_->g; }
    const plan& get_plan() const noexcept { return planned_->p; }
    Backend& get_backend() const noexcept { return *backend_; }
    int64_t max_batch() const noexcept { return planned_->g.max_batch(); }

    // Runs every planned step for a batch of n_tokens columns.
    void run(int64_t n_tokens) {
        check(n_tokens >= 1 && n_tokens <= max_batch(), errc::invalid_argument, [&] {
            return "executor::run: " + std::to_string(n_tokens) + " tokens, the graph was planned for 1.." +
                   std::to_string(max_batch());
        });
        program_.run(n_tokens);
    }

    // Host -> tensor t, starting at element column 0: the first values.size() elements.
    template <class T>
    void write(tensor t, std::span<const T> values, std::size_t byte_offset = 0) {
        static_assert(std::is_trivially_copyable_v<T>, "executor::write: T must be trivially copyable");
        const std::size_t bytes = values.size_bytes();
        check_access(t, byte_offset, bytes, "write");
        program_.write(t, byte_offset, values.data(), bytes);
    }

    template <class T>
    void read(tensor t, std::span<T> values, std::size_t byte_offset = 0) const {
        static_assert(std::is_trivially_copyable_v<T>, "executor::read: T must be trivially copyable");
        const std::size_t bytes = values.size_bytes();
        check_access(t, byte_offset, bytes, "read");
        program_.read(t, byte_offset, values.data(), bytes);
    }

    // Raw bytes of tensor t's memory.
    void write_bytes(tensor t, std::size_t byte_offset, const void* src, std::size_t bytes) {
        check_access(t, byte_offset, bytes, "write");
        program_.write(t, byte_offset, src, bytes);
    }
    void read_bytes(tensor t, std::size_t byte_offset, void* dst, std::size_t bytes) const {
        check_access(t, byte_offset, bytes, "read");
        program_.read(t, byte_offset, dst, bytes);
    }

private:
    struct planned {
        planned(graph graph_in, const Backend& b, plan_options options)
            : g(std::move(graph_in)),
              p(make_plan(g, [&](const node& nd) { return std::size_t(b.scratch_bytes(g, nd)); }, options)) {}
        graph g;
        plan p;
    };

    // Reads and writes stay inside the tensor, and reach only memory that holds it for the whole
    // run: inputs, outputs and states, or any node when the plan reuses no memory.
    void check_access(tensor t, std::size_t offset, std::size_t bytes, const char* what) const {
        const graph& g = planned_->g;
        const plan& p = planned_->p;
        const node& nd = g[t];
        const auto i = std::size_t(t.id);
        check(p.where[i] != storage::none, errc::invalid_argument,
              [&] { return std::string("executor::") + what + ": " + graph::describe(nd) + " is not part of the plan"; });
        check(offset <= p.bytes[i] && bytes <= p.bytes[i] - offset, errc::invalid_argument, [&] {
            return std::string("executor::") + what + ": bytes [" + std::to_string(offset) + ", " +
                   std::to_string(offset + bytes) + ") lie outside " + graph::describe(nd) + " of " +
                   std::to_string(p.bytes[i]) + " bytes";
        });
        bool kept = nd.op == op::input || nd.op == op::state || p.where[i] == storage::alias ||
                    p.where[i] == storage::weight;
        for (tensor o : g.outputs()) kept = kept || o == t;
        kept = kept || p.last_step[i] == int32_t(p.order.size()) || !p.reuses_memory;
        check(kept, errc::invalid_argument, [&] {
            return std::string("executor::") + what + ": " + graph::describe(nd) +
                   " shares memory with other nodes; mark it as an output or plan without memory reuse";
        });
    }

    Backend* backend_;
    std::unique_ptr<planned> planned_;
    program_type program_;
};

}  // namespace llmrt::graph
