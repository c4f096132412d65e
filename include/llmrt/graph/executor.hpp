// executor<Backend>: a graph planned for one backend and prepared on it, ready to run.
//
//   graph::executor<cpu::backend> ex(cpu_backend, std::move(g));   // plans and allocates here
//   ex.write(tokens, token_ids);  ex.write(positions, pos);
//   ex.run(n_tokens);                                               // allocates nothing
//   ex.read(logits, out);
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "llmrt/graph/backend.hpp"
#include "llmrt/graph/read_request.hpp"

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
          program_(b.prepare(planned_->g, planned_->p)), shadows_(make_shadows(planned_->g, planned_->p)) {}

    const graph& get_graph() const noexcept { return planned_->g; }
    const plan& get_plan() const noexcept { return planned_->p; }
    Backend& get_backend() const noexcept { return *backend_; }
    // The backend's program, for what only that backend offers (timings, statistics).
    program_type& program() noexcept { return program_; }
    const program_type& program() const noexcept { return program_; }
    int64_t max_batch() const noexcept { return planned_->g.max_batch(); }

    // Runs every planned step for a batch of n_tokens columns.
    void run(int64_t n_tokens) {
        check(n_tokens >= 1 && n_tokens <= max_batch(), errc::invalid_argument, [&] {
            return "executor::run: " + std::to_string(n_tokens) + " tokens, the graph was planned for 1.." +
                   std::to_string(max_batch());
        });
        check_indices(n_tokens);
        program_.run(n_tokens);
    }

    // Host -> tensor t, starting at element column 0: the first values.size() elements.
    template <class T>
    void write(tensor t, std::span<const T> values, std::size_t byte_offset = 0) {
        static_assert(std::is_trivially_copyable_v<T>, "executor::write: T must be trivially copyable");
        const std::size_t bytes = values.size_bytes();
        check_access(t, byte_offset, bytes, "write");
        shadow_write(t, byte_offset, values.data(), bytes);
        program_.write(t, byte_offset, values.data(), bytes);
    }

    template <class T>
    void read(tensor t, std::span<T> values, std::size_t byte_offset = 0) const {
        static_assert(std::is_trivially_copyable_v<T>, "executor::read: T must be trivially copyable");
        const std::size_t bytes = values.size_bytes();
        check_access(t, byte_offset, bytes, "read");
        program_.read(t, byte_offset, values.data(), bytes);
    }

    // Several reads that wait once for the runs before them where the program can (its
    // read_together: the CUDA program queues every copy, then synchronizes once), else one after
    // another. Each read as read_bytes checks it.
    void read_together(std::span<const read_request> reads) const {
        for (const read_request& r : reads) check_access(r.t, r.byte_offset, r.bytes, "read");
        if constexpr (requires(const program_type& p) { p.read_together(reads); })
            program_.read_together(reads);
        else
            for (const read_request& r : reads) program_.read(r.t, r.byte_offset, r.dst, r.bytes);
    }

    // Raw bytes of tensor t's memory.
    void write_bytes(tensor t, std::size_t byte_offset, const void* src, std::size_t bytes) {
        check_access(t, byte_offset, bytes, "write");
        shadow_write(t, byte_offset, src, bytes);
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
              p(make_plan(g, sizes(g, b), options, b.lowering())) {}
        graph g;
        plan p;

        static plan_sizes sizes(const graph& g, const Backend& b) {
            plan_sizes s;
            s.scratch = [&g, &b](const node& nd) { return std::size_t(b.scratch_bytes(g, nd)); };
            s.rounded = [&b](int64_t k, int64_t cols) { return std::size_t(b.rounded_bytes(k, cols)); };
            return s;
        }
    };

    // The ids and positions of the next run, as the host wrote them: checked before every run, so
    // that an id outside its table or a position outside the cache is an llmrt::error on every
    // backend (no kernel reads such a value).
    struct index_shadow {
        index_check check;
        std::vector<int32_t> values;
    };

    static std::vector<index_shadow> make_shadows(const graph& g, const plan& p) {
        std::vector<index_shadow> out;
        for (const index_check& c : p.checks) out.push_back({c, std::vector<int32_t>(std::size_t(g[tensor{c.input}].ne0 * g[tensor{c.input}].ne1), 0)});
        return out;
    }

    void shadow_write(tensor t, std::size_t offset, const void* src, std::size_t bytes) {
        for (index_shadow& s : shadows_)
            if (s.check.input == t.id)
                std::memcpy(reinterpret_cast<std::byte*>(s.values.data()) + offset, src, bytes);
    }

    void check_indices(int64_t n) const {
        const graph& g = planned_->g;
        for (const index_shadow& s : shadows_) {
            const node& reader = g[tensor{s.check.reader}];
            const int64_t per_token = g[tensor{s.check.input}].ne0;  // mul_mat_id's slots, else 1
            for (int64_t i = 0; i < n * per_token; ++i) {
                const int64_t t = i / per_token;
                const int32_t v = s.values[std::size_t(i)];
                if (v >= 0 && v < s.check.limit) continue;
                const bool ids = reader.op == op::get_rows || reader.op == op::expert_weights || reader.op == op::mul_mat_id ||
                                 reader.op == op::add_id;
                const std::string what = ids ? "id " : "position ";
                const std::string range = s.check.limit >= std::numeric_limits<int32_t>::max()
                                              ? "negative"
                                              : "outside [0, " + std::to_string(s.check.limit) + ")";
                throw error(errc::invalid_argument, std::string(to_string(reader.op)) + ": " + what + std::to_string(v) +
                                                        " of token " + std::to_string(t) + " is " + range + " (" +
                                                        graph::describe(reader) + ")");
            }
        }
    }

    // Reads and writes stay inside the tensor, and reach only memory that holds it for the whole
    // run: inputs, outputs and states, or any node when the plan reuses no memory.
    void check_access(tensor t, std::size_t offset, std::size_t bytes, const char* what) const {
        const graph& g = planned_->g;
        const plan& p = planned_->p;
        const node& nd = g[t];
        const auto i = std::size_t(t.id);
        check(p.where[i] != storage::none, errc::invalid_argument,
              [&] { return std::string("executor::") + what + ": " + graph::describe(nd) + " is not part of the plan"; });
        check(p.where[i] != storage::fused && p.dense(t.id, g), errc::invalid_argument, [&] {
            return std::string("executor::") + what + ": " + graph::describe(nd) +
                   " is computed inside a fused step and not kept as it is; plan with fuse = false to inspect it";
        });
        check(offset <= p.bytes[i] && bytes <= p.bytes[i] - offset, errc::invalid_argument, [&] {
            return std::string("executor::") + what + ": bytes [" + std::to_string(offset) + ", " +
                   std::to_string(offset + bytes) + ") lie outside " + graph::describe(nd) + " of " +
                   std::to_string(p.bytes[i]) + " bytes";
        });
        bool kept = nd.op == op::input || nd.op == op::state || p.where[i] == storage::alias ||
                    p.where[i] == storage::weight;
        for (tensor o : g.outputs()) kept = kept || o == t;
        kept = kept || p.last_step[i] == int32_t(p.steps.size()) || !p.reuses_memory;
        check(kept, errc::invalid_argument, [&] {
            return std::string("executor::") + what + ": " + graph::describe(nd) +
                   " shares memory with other nodes; mark it as an output or plan without memory reuse";
        });
    }

    Backend* backend_;
    std::unique_ptr<planned> planned_;
    program_type program_;
    std::vector<index_shadow> shadows_;
};

}  // namespace llmrt::graph
