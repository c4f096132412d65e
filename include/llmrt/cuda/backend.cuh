// cuda::backend: the graph executor on one CUDA device (include/llmrt/graph/backend.hpp).
//
//   llmrt::cuda::backend gpu;                                  // device 0
//   graph::executor<cuda::backend> ex(gpu, std::move(g));      // allocates, uploads, captures
//   ex.write(tokens, ids);  ex.run(n);  ex.read(logits, out);  // run: one graph launch
//
// prepare() does all the work that allocates: the arena, the zeroed states, the weights (one
// upload), the Q8_1 activation records of mul_mat, a stream and pinned host memory for the
// inputs; then it captures the forward of every batch size 1..max_batch into a CUDA graph. run(n)
// launches graph n on the stream and nothing else (no allocation, no host-side op work); read()
// waits for it.
//
// The backend runs every fusion of the lowering (graph/lower.hpp), each step as cuda/steps.cuh
// says: a llama layer is nine kernels (norm and Q8_1 records; Q, K and V as one mmvq launch over
// their weights uploaded side by side; rope and both cache writes; split attention, whose last
// block per kv head combines and writes the records; the output projection; the residual add,
// norm and records; gate and up as one launch; SwiGLU and the records; the down projection). The ops have the semantics of
// cpu/ops.hpp; block-quantized mul_mat is llmrt's mmvq on Q8_1-rounded activations (what
// cpu::backend computes by default, its reference). Every op reduces in a fixed order and treats
// each column on its own, so a run gives the same bits every time and a column's bits do not
// depend on the batch. Every kernel is a programmatic dependent launch by default: it may start
// while the kernel before it drains and waits for it before touching memory (sm_90), which hides
// launch gaps.
//
// Inputs (token ids, positions) go through pinned host memory that the graph itself copies to the
// device as its first node: write() waits for the stream (the previous run's copy must be done
// before its source changes) and stores the values there.
//
// basic_backend<Types> instantiates mmvq for the weight types of Types only (each adds eight
// kernels to the build); a model with another block type is refused at prepare. cuda::backend
// takes every weight type. The executor checks ids and positions on the host before each run;
// kernels never read outside a table or cache. Failed CUDA calls raise llmrt::error
// (errc::device_error, out_of_memory for allocations) naming the call; the device never asserts.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/check.cuh"
#include "llmrt/cuda/device_all_reduce.cuh"
#include "llmrt/cuda/nccl.cuh"
#include "llmrt/cuda/ops/gather.cuh"
#include "llmrt/cuda/steps.cuh"
#include "llmrt/graph/read_request.hpp"
#include "llmrt/cuda/weight_layout.cuh"
#include "llmrt/graph/backend.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda {

struct backend_options {
    int device = 0;
    // Capture each batch size's forward in a CUDA graph at prepare and replay it; false launches
    // op by op on every run (same kernels, same bits: for debugging and comparison; that mode
    // does the host-side checks of every launch again, message strings included, so it allocates).
    bool use_graphs = true;
    // Launch every kernel as a programmatic dependent launch (sm_90): it may start while the
    // previous kernel drains, waiting for it before touching memory (mmvq prefetches its weights
    // first). Hides most of the gap between dependent kernels; the same bits either way.
    bool programmatic_dependent_launch = true;
    // The rank's NCCL group for all_reduce and all_gather nodes (cuda/nccl.cuh), run as NCCL calls
    // on the backend's stream and captured with the forward. Null: collectives of one rank copy
    // their input (as the CPU backend's), those of more ranks are refused at prepare. Its device
    // must be `device`; it must outlive the programs prepared with it. (Builds without NCCL have
    // no way to make one: the class is only declared there.)
    const nccl_communicator* nccl = nullptr;
    // With nccl: makes the kernel that runs the graph's all-reduces in place of ncclAllReduce
    // (cuda/device_all_reduce.cuh; cuda::make_lsa_all_reduce of cuda/nccl_lsa.cuh, over NCCL's
    // device API). Every rank of the group sets the same; a group where it returns null keeps
    // ncclAllReduce. Null: ncclAllReduce.
    device_all_reduce_factory device_all_reduce = nullptr;
};

namespace detail {

// Owning handles, so that a failed prepare releases what it had made: device memory (cudaFree)
// and pinned host memory (cudaFreeHost).
template <cudaError_t (*Free)(void*)>
struct owned_memory {
    void* ptr = nullptr;
    owned_memory() = default;
    owned_memory(owned_memory&& o) noexcept : ptr(std::exchange(o.ptr, nullptr)) {}
    owned_memory& operator=(owned_memory&& o) noexcept {
        std::swap(ptr, o.ptr);
        return *this;
    }
    ~owned_memory() {
        if (ptr) Free(ptr);
    }
    std::byte* bytes() const { return static_cast<std::byte*>(ptr); }
};
using device_memory = owned_memory<cudaFree>;
using pinned_memory = owned_memory<cudaFreeHost>;

inline device_memory allocate(std::size_t bytes, const std::string& what) {
    device_memory m;
    const cudaError_t status = cudaMalloc(&m.ptr, bytes == 0 ? 1 : bytes);
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw error(errc::out_of_memory, "cuda backend: cudaMalloc of " + std::to_string(bytes) + " bytes for " + what +
                                             " failed: out of device memory");
    }
    check_cuda_status(status, "cudaMalloc", __FILE__, __LINE__);
    return m;
}

template <class List>
struct all_weight_types;
template <class... Ts>
struct all_weight_types<type_list<Ts...>> {
    static constexpr bool value = (list_contains_v<Ts, weight_types> && ...);
};

inline pinned_memory allocate_pinned(std::size_t bytes) {
    pinned_memory m;
    LLMRT_CUDA_CHECK(cudaMallocHost(&m.ptr, bytes == 0 ? 1 : bytes));
    return m;
}

}  // namespace detail

// A graph prepared on the device: what basic_backend<Types>::prepare returns.
template <class Types>
class basic_program {
public:
    basic_program(const graph::graph& g, const graph::plan& p, const backend_options& options);

    // Runs the plan for a batch of n_tokens columns: one graph launch (or the steps one by one).
    void run(int64_t n_tokens) {
        state& s = *s_;
        if (s.steps.empty()) return;
        use_device();
        if (s.options.use_graphs)
            LLMRT_CUDA_CHECK(cudaGraphLaunch(s.graphs[std::size_t(n_tokens - 1)], s.stream));
        else
            enqueue(n_tokens, nullptr);
    }

    // Host -> tensor t; ordered after the runs before it (the host bytes may be reused at once).
    // Inputs go to their pinned copy, which each run's graph copies to the device first.
    void write(graph::tensor t, std::size_t offset, const void* src, std::size_t bytes) {
        if (bytes == 0) return;
        state& s = *s_;
        use_device();
        const auto i = std::size_t(t.id);
        if (on_host(t)) {
            LLMRT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
            std::memcpy(s.inputs_host.bytes() + s.p->offset[i] + offset, src, bytes);
            return;
        }
        LLMRT_CUDA_CHECK(cudaMemcpyAsync(address(t.id) + offset, src, bytes, cudaMemcpyHostToDevice, s.stream));
    }

    // Tensor t -> host, once every run queued before has finished (small reads through pinned
    // memory).
    void read(graph::tensor t, std::size_t offset, void* dst, std::size_t bytes) const {
        if (bytes == 0) return;
        state& s = *s_;
        use_device();
        const auto i = std::size_t(t.id);
        if (on_host(t)) {  // what the next run copies in
            LLMRT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
            std::memcpy(dst, s.inputs_host.bytes() + s.p->offset[i] + offset, bytes);
            return;
        }
        const bool bounce = bytes <= bounce_bytes;
        LLMRT_CUDA_CHECK(cudaMemcpyAsync(bounce ? s.bounce.ptr : dst, address(t.id) + offset, bytes,
                                         cudaMemcpyDeviceToHost, s.stream));
        LLMRT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
        if (bounce) std::memcpy(dst, s.bounce.ptr, bytes);
    }

    // The reads, each as read does it, with one wait: the copies that fit the pinned bounce
    // buffer together go through it (each at the next 16-byte boundary), the others straight to
    // their destination.
    void read_together(std::span<const graph::read_request> reads) const {
        state& s = *s_;
        use_device();
        // Where read r lands in the bounce buffer, given what is staged before it; npos: not there.
        const auto bounce_at = [](const graph::read_request& r, std::size_t& staged) {
            const std::size_t at = (staged + 15) / 16 * 16;
            if (at + r.bytes > bounce_bytes) return std::string::npos;
            staged = at + r.bytes;
            return at;
        };
        std::size_t staged = 0;
        for (const graph::read_request& r : reads) {
            if (r.bytes == 0) continue;
            if (on_host(r.t)) {
                read(r.t, r.byte_offset, r.dst, r.bytes);
                continue;
            }
            const std::size_t at = bounce_at(r, staged);
            LLMRT_CUDA_CHECK(cudaMemcpyAsync(at != std::string::npos ? s.bounce.bytes() + at : static_cast<std::byte*>(r.dst),
                                             address(r.t.id) + r.byte_offset, r.bytes, cudaMemcpyDeviceToHost, s.stream));
        }
        LLMRT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
        staged = 0;
        for (const graph::read_request& r : reads) {
            if (r.bytes == 0 || on_host(r.t)) continue;
            if (const std::size_t at = bounce_at(r, staged); at != std::string::npos)
                std::memcpy(r.dst, s.bounce.bytes() + at, r.bytes);
        }
    }

    // Bytes of device memory this program holds: arena, states, weights, activation records.
    std::size_t device_bytes() const noexcept { return s_->device_bytes; }

    // Device time of one forward of n tokens made of the steps `include` keeps, in ms: those steps
    // captured as a graph (with the input copy) and replayed `replays` times back to back, timed
    // with events. For breakdowns: the steps of a few kinds at a time, telescoped (bench/decode).
    // isolated: each replay starts on an idle device (the stream synchronized before it), as a
    // decode loop that reads every token back launches it; the mean of the replays' own times.
    double device_ms(int64_t n, const std::function<bool(const graph::step&)>& include, int replays = 20,
                     bool isolated = false) {
        cudaGraphExec_t exec = capture_graph(n, &include);
        double ms = 0.0;
        try {
            ms = replay_ms(exec, replays, isolated);
        } catch (...) {
            cudaGraphExecDestroy(exec);
            throw;
        }
        cudaGraphExecDestroy(exec);
        return ms;
    }

    // The same for the forward run(n) launches.
    double device_ms(int64_t n, int replays = 20, bool isolated = false) {
        check(s_->options.use_graphs && n >= 1 && n <= int64_t(s_->graphs.size()), errc::invalid_argument,
              "cuda backend: device_ms(n) times the captured forward of n tokens (use_graphs)");
        return replay_ms(s_->graphs[std::size_t(n - 1)], replays, isolated);
    }

private:
    static constexpr std::size_t bounce_bytes = std::size_t(64) << 10;

    // The program's device current on the calling thread: a program may be driven from a thread
    // other than the one that made it (the speculative generator verifies on a worker thread), and
    // a new thread starts on device 0.
    void use_device() const {
        int current = -1;
        LLMRT_CUDA_CHECK(cudaGetDevice(&current));
        if (current != s_->options.device) LLMRT_CUDA_CHECK(cudaSetDevice(s_->options.device));
    }

    struct state {
        const graph::graph* g = nullptr;
        const graph::plan* p = nullptr;
        backend_options options;
        detail::device_memory arena, weights, records, counters;  // counters: split attention's, argmax's, swiglu epilogues'
        std::vector<detail::device_memory> states;
        detail::pinned_memory inputs_host, bounce;
        std::size_t inputs_bytes = 0;  // the inputs sit first in the arena: [0, inputs_bytes)
        std::size_t records_bytes = 0;
        std::size_t counter_bytes = 0;
        std::size_t device_bytes = 0;
        std::vector<std::byte*> address;  // per node: its device memory (null: not planned)
        cudaStream_t stream = nullptr;
        std::vector<steps::resolved> steps;
        std::vector<cudaGraphExec_t> graphs;  // per batch size n at n − 1
        std::unique_ptr<device_all_reduce> device_reduce;  // before the graphs go: ~state destroys them first

        state() = default;
        state(const state&) = delete;
        state& operator=(const state&) = delete;
        ~state() {
            if (stream) cudaStreamSynchronize(stream);
            for (cudaGraphExec_t e : graphs)
                if (e) cudaGraphExecDestroy(e);
            if (stream) cudaStreamDestroy(stream);
        }
    };

    // Whether tensor t lives in the pinned host copy of the inputs, which each replayed run copies
    // to the device first: reads and writes of it touch that copy.
    bool on_host(graph::tensor t) const {
        return s_->g->nodes()[std::size_t(t.id)].op == graph::op::input && s_->options.use_graphs;
    }

    std::byte* address(int32_t id) const {
        std::byte* a = s_->address[std::size_t(id)];
        check(a != nullptr, errc::invalid_argument, [&] {
            return "cuda backend: node " + graph::graph::describe(s_->g->nodes()[std::size_t(id)]) +
                   " has no memory in this plan";
        });
        return a;
    }

    void check_supported(const graph::node& nd) const;
    void check_collective(const graph::node& nd) const;

    steps::context context() const {
        const state& s = *s_;
        launch_options lo;
        lo.programmatic_dependent_launch = s.options.programmatic_dependent_launch;
        steps::context cx{s.g,          s.p, &s.address, s.records.ptr, s.records_bytes, static_cast<int32_t*>(s.counters.ptr),
                          s.counter_bytes, s.stream, lo, s.options.nccl};
        cx.device_reduce = s.device_reduce.get();
        return cx;
    }

    void enqueue(int64_t n, const std::function<bool(const graph::step&)>* include) const {
        cudaGetLastError();  // a failure an earlier call already reported must not be taken for a launch's
        const steps::context cx = context();
        for (const steps::resolved& r : s_->steps)
            if (!include || (*include)(*r.st)) steps::run<Types>(cx, r, n);
    }

    cudaGraphExec_t capture_graph(int64_t n, const std::function<bool(const graph::step&)>* include);

    double replay_ms(cudaGraphExec_t exec, int replays, bool isolated) {
        state& s = *s_;
        cudaEvent_t start = nullptr, stop = nullptr;
        LLMRT_CUDA_CHECK(cudaEventCreate(&start));
        LLMRT_CUDA_CHECK(cudaEventCreate(&stop));
        double total = 0.0;
        cudaError_t status = cudaGraphLaunch(exec, s.stream);  // warm-up
        for (int i = 0; status == cudaSuccess && i < (isolated ? replays : 1); ++i) {
            float ms = 0.0f;
            status = cudaStreamSynchronize(s.stream);
            if (status == cudaSuccess) status = cudaEventRecord(start, s.stream);
            for (int j = 0; status == cudaSuccess && j < (isolated ? 1 : replays); ++j)
                status = cudaGraphLaunch(exec, s.stream);
            if (status == cudaSuccess) status = cudaEventRecord(stop, s.stream);
            if (status == cudaSuccess) status = cudaEventSynchronize(stop);
            if (status == cudaSuccess) status = cudaEventElapsedTime(&ms, start, stop);
            total += double(ms);
        }
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        LLMRT_CUDA_CHECK(status);
        return total / replays;
    }

    std::unique_ptr<state> s_;
};

template <class Types>
void basic_program<Types>::check_supported(const graph::node& nd) const {
    const auto& nodes = s_->g->nodes();
    if (nd.op == graph::op::all_reduce || nd.op == graph::op::all_gather) check_collective(nd);
    if (nd.op == graph::op::mul_mat) {
        const graph::node& w = nodes[std::size_t(nd.src[0])];
        check(is_float_matrix_type(w.type) || is_in<Types>(w.type), errc::unsupported_type, [&] {
            return "cuda backend: mul_mat with W " + graph::graph::describe(w) +
                   ": this backend takes f32, f16, bf16 and the block types " + llmrt::detail::type_names(Types{}) +
                   " (cuda::backend takes every weight type)";
        });
    }
    if (nd.op == graph::op::mul_mat_id) {
        const graph::node& w = nodes[std::size_t(nd.src[0])];
        check(is_in<Types>(w.type), errc::unsupported_type, [&] {
            return "cuda backend: mul_mat_id with experts " + graph::graph::describe(w) +
                   ": this backend takes experts of the block types " + llmrt::detail::type_names(Types{}) +
                   " (mmvq_id; f32, f16 and bf16 experts are not supported)";
        });
    }
    if (nd.op == graph::op::get_rows) {
        const graph::node& table = nodes[std::size_t(nd.src[0])];
        check(is_in<all_types>(table.type), errc::unsupported_type, [&] {
            return "cuda backend: get_rows from " + graph::graph::describe(table) + ": no device codec for its type";
        });
    }
}

// A collective runs over the backend's NCCL group (or copies, in a group of one rank without
// one): the node's ranks are the group's size, the group's device is the backend's, an
// all_gather's input is this rank's slice, and the input's columns are dense (NCCL sends one
// contiguous buffer).
template <class Types>
void basic_program<Types>::check_collective(const graph::node& nd) const {
    const state& s = *s_;
    const std::string what = "cuda backend: " + graph::graph::describe(nd);
    const nccl_communicator* c = s.options.nccl;
#if defined(LLMRT_HAVE_NCCL)
    const int32_t rank = c ? c->rank() : 0, ranks = c ? c->size() : 1;
    check(nd.ranks == ranks, errc::invalid_argument, [&] {
        return what + " runs over " + std::to_string(nd.ranks) + " ranks; the backend's NCCL communicator has " +
               std::to_string(ranks) +
               (c ? "" : " (none given: cuda::backend_options::nccl is null, which runs collectives of one rank only)");
    });
    if (c)
        check(c->device() == s.options.device, errc::invalid_argument, [&] {
            return what + ": the NCCL communicator of rank " + std::to_string(rank) + " is on device " +
                   std::to_string(c->device()) + ", the backend on device " + std::to_string(s.options.device);
        });
#else
    const int32_t rank = 0;
    check(nd.ranks == 1 && c == nullptr, errc::unsupported_type, [&] {
        return what + " runs over " + std::to_string(nd.ranks) +
               " ranks, which needs an NCCL communicator (cuda::backend_options::nccl); this build of llmrt has no "
               "NCCL (cmake/find_nccl.cmake did not find it)";
    });
#endif
    const int32_t x = nd.src[0];
    const graph::node& xn = s.g->nodes()[std::size_t(x)];
    check(s.p->dense(x, *s.g), errc::invalid_argument, [&] {
        return what + ": its input " + graph::graph::describe(xn) + " has columns " +
               std::to_string(s.p->col_stride[std::size_t(x)]) + " floats apart; NCCL sends dense columns";
    });
    if (nd.op != graph::op::all_gather) return;
    const int64_t slice = graph::shard_begin(nd.ne0, nd.ranks, rank + 1) - graph::shard_begin(nd.ne0, nd.ranks, rank);
    check(xn.ne0 == slice, errc::shape_mismatch, [&] {
        return what + " takes " + std::to_string(slice) + " of its " + std::to_string(nd.ne0) +
               " elements per column from rank " + std::to_string(rank) + ", whose x is " + graph::graph::describe(xn);
    });
}

template <class Types>
basic_program<Types>::basic_program(const graph::graph& g, const graph::plan& p, const backend_options& options)
    : s_(std::make_unique<state>()) {
    state& s = *s_;
    s.g = &g;
    s.p = &p;
    s.options = options;
    LLMRT_CUDA_CHECK(cudaSetDevice(options.device));
    const auto& nodes = g.nodes();
    const std::size_t n = nodes.size();

    // What the records buffer must hold: mul_mats and matvec steps that quantize x themselves.
    for (int32_t id : p.order) {
        check_supported(nodes[std::size_t(id)]);
        s.counter_bytes = std::max(s.counter_bytes, steps::counter_bytes(g, nodes[std::size_t(id)]));
    }
    for (const graph::step& st : p.steps) {
        const graph::node& first = nodes[std::size_t(st.nodes[0])];
        const bool quantizes = (st.kind == graph::step_kind::matvec && st.rounded_by < 0) ||
                               (st.kind == graph::step_kind::op && first.op == graph::op::mul_mat &&
                                !is_float_matrix_type(nodes[std::size_t(first.src[0])].type));
        if (quantizes)
            s.records_bytes = std::max(s.records_bytes, ops::rounded_records_bytes(nodes[std::size_t(first.src[0])].ne0, first.ne1));
    }
    const weight_layout layout = lay_out_weights<Types>(g, p);
    const std::vector<std::size_t>& weight_offset = layout.offset;
    const std::size_t weight_bytes = layout.bytes;
    const std::vector<int32_t>& concatenated = layout.concatenated;
    const std::vector<int32_t>& concatenated_bias = layout.concatenated_bias;

    s.arena = detail::allocate(p.arena_bytes, "the arena");
    LLMRT_CUDA_CHECK(cudaMemset(s.arena.ptr, 0, p.arena_bytes == 0 ? 1 : p.arena_bytes));
    s.weights = detail::allocate(weight_bytes, "the weights");
    s.records = detail::allocate(s.records_bytes, "mul_mat's activation records");
    s.counters = detail::allocate(s.counter_bytes, "the kernels' counters");
    LLMRT_CUDA_CHECK(cudaMemset(s.counters.ptr, 0, s.counter_bytes == 0 ? 1 : s.counter_bytes));
    s.device_bytes = p.arena_bytes + weight_bytes + s.records_bytes + s.counter_bytes;
    s.address.assign(n, nullptr);
    for (int32_t id : p.order) {
        const auto i = std::size_t(id);
        switch (p.where[i]) {
            case graph::storage::arena: s.address[i] = s.arena.bytes() + p.offset[i]; break;
            case graph::storage::weight:
                s.address[i] = s.weights.bytes() + weight_offset[i];
                LLMRT_CUDA_CHECK(cudaMemcpy(s.address[i], nodes[i].data, p.bytes[i], cudaMemcpyHostToDevice));
                break;
            case graph::storage::state:
                s.states.push_back(detail::allocate(p.bytes[i], "state " + graph::graph::describe(nodes[i])));
                LLMRT_CUDA_CHECK(cudaMemset(s.states.back().ptr, 0, p.bytes[i]));
                s.address[i] = s.states.back().bytes();
                s.device_bytes += p.bytes[i];
                break;
            case graph::storage::alias:
            case graph::storage::fused:
            case graph::storage::none: break;
        }
        if (nodes[i].op == graph::op::input) s.inputs_bytes = std::max(s.inputs_bytes, p.offset[i] + p.bytes[i]);
    }
    // A set_rows result is its cache's memory (its state comes earlier in the order).
    for (int32_t id : p.order)
        if (p.where[std::size_t(id)] == graph::storage::alias)
            s.address[std::size_t(id)] = s.address[std::size_t(p.alias_of[std::size_t(id)])];
    s.inputs_host = detail::allocate_pinned(s.inputs_bytes);
    std::memset(s.inputs_host.ptr, 0, s.inputs_bytes == 0 ? 1 : s.inputs_bytes);
    s.bounce = detail::allocate_pinned(bounce_bytes);

    for (std::size_t si = 0; si < p.steps.size(); ++si) {
        const graph::step& st = p.steps[si];
        steps::resolved r;
        r.st = &st;
        if (p.scratch_bytes[si] > 0) {
            r.scratch = s.arena.bytes() + p.scratch_offset[si];
            r.scratch_bytes = p.scratch_bytes[si];
        }
        if (st.rounds >= 0) r.rounded = s.arena.bytes() + p.rounded_offset[si];
        if (st.rounds >= 0 && st.rounded_for >= 0 && p.steps[std::size_t(st.rounded_for)].kind == graph::step_kind::experts) {
            // mmvq_id's records: each activation column a batch of its own (ops/records.cuh)
            check(st.kind == graph::step_kind::norm || st.kind == graph::step_kind::swiglu, errc::invalid_argument, [&] {
                return std::string("cuda backend: a ") + graph::to_string(st.kind) +
                       " step cannot write the records of an experts step";
            });
            r.rounded_chunk_cols = 1;
        }
        if (st.rounded_by >= 0) r.rounded_in = s.arena.bytes() + p.rounded_offset[std::size_t(st.rounded_by)];
        if (concatenated[si] >= 0) r.concatenated = s.address[std::size_t(concatenated[si])];
        if (concatenated_bias[si] >= 0) r.concatenated_bias = s.address[std::size_t(concatenated_bias[si])];
        s.steps.push_back(r);
    }
    for (steps::resolved& r : s.steps)
        if (r.st->carries >= 0) r.carried = &s.steps[std::size_t(r.st->carries)];

    LLMRT_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    if (options.nccl && options.device_all_reduce) {  // collective: every rank prepares in lockstep
        int64_t floats = 0;
        for (int32_t id : p.order)
            if (nodes[std::size_t(id)].op == graph::op::all_reduce)
                floats = std::max(floats, nodes[std::size_t(id)].ne0 * g.max_batch());
        // A group that cannot (why: not kept, nothing reads it yet) keeps ncclAllReduce.
        std::string why;
        if (floats > 0) s.device_reduce = options.device_all_reduce(*options.nccl, std::size_t(floats), why);
    }
    LLMRT_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads and memsets are done before any run
    if (options.use_graphs && !s.steps.empty()) {
        s.graphs.assign(std::size_t(g.max_batch()), nullptr);
        for (int64_t b = 1; b <= g.max_batch(); ++b) {
            s.graphs[std::size_t(b - 1)] = capture_graph(b, nullptr);
            LLMRT_CUDA_CHECK(cudaGraphUpload(s.graphs[std::size_t(b - 1)], s.stream));
        }
        LLMRT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    }
}

// The forward of n tokens (the steps `include` keeps, or all) as an instantiated graph whose first
// node copies the inputs from their pinned host copy.
template <class Types>
cudaGraphExec_t basic_program<Types>::capture_graph(int64_t n, const std::function<bool(const graph::step&)>* include) {
    state& s = *s_;
    LLMRT_CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeRelaxed));
    cudaGraph_t graph = nullptr;
    try {
        if (s.inputs_bytes > 0)
            LLMRT_CUDA_CHECK(cudaMemcpyAsync(s.arena.ptr, s.inputs_host.ptr, s.inputs_bytes, cudaMemcpyHostToDevice, s.stream));
        enqueue(n, include);
    } catch (...) {
        cudaStreamEndCapture(s.stream, &graph);
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        throw;
    }
    LLMRT_CUDA_CHECK(cudaStreamEndCapture(s.stream, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    LLMRT_CUDA_CHECK(status);
    return exec;
}

// The backend: which device, which options; prepare() makes a basic_program.
template <class Types = weight_types>
class basic_backend {
    static_assert(detail::all_weight_types<Types>::value,
                  "llmrt::cuda::basic_backend<Types>: Types must be a type_list of weight types (llmrt::weight_types)");

public:
    using program = basic_program<Types>;

    // Selects the device (cudaSetDevice: a bad index or no device raises errc::device_error) and
    // refuses devices below compute capability 9.0, which mmvq needs (errc::missing_feature).
    explicit basic_backend(backend_options options = {}) : options_(options) {
        LLMRT_CUDA_CHECK(cudaSetDevice(options.device));
        int major = 0;
        LLMRT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, options.device));
        check(major >= 9, errc::missing_feature, [&] {
            return "cuda backend: device " + std::to_string(options_.device) + " has compute capability " +
                   std::to_string(major) + ".x; mmvq needs 9.0 or newer";
        });
    }

    std::string_view name() const noexcept { return "cuda"; }
    const backend_options& options() const noexcept { return options_; }

    // Every fusion of the lowering (graph/lower.hpp) but carried norms: mmvq's norm_tail finishes
    // the norm in the one CTA that arrives last, a few warps walking the whole column, which is
    // slower than the norm kernel it replaces (H200, llmrt-bench-decode: llama 8B q4_K 300 tokens/s
    // with it, 442 without; Qwen3-30B-A3B 191 and 348; gpt-oss-20b 241 and 482).
    graph::lower_options lowering() const noexcept {
        graph::lower_options o;
        o.carry_norm = false;
        return o;
    }
    // The Q8_1 rounding a step hands to a matvec step: mmvq's records, in chunks of 8 columns.
    std::size_t rounded_bytes(int64_t k, int64_t cols) const { return ops::rounded_records_bytes(k, cols); }

    // attention: the split form's partial sums (or the scores of the one-block form); argmax: the
    // best of each slice of a long column; top_k: the best k keys of each slice of a long column;
    // mul_mat_id: its activations' Q8_1 records; all_gather: the ranks' padded slices. (mul_mat's
    // activation records are the program's own buffer, shared by the mul_mats that read them.)
    std::size_t scratch_bytes(const graph::graph& g, const graph::node& nd) const {
        if (nd.op == graph::op::argmax) return ops::argmax_scratch_bytes(g.nodes()[std::size_t(nd.src[0])].ne0, nd.ne1);
        if (nd.op == graph::op::top_k) return ops::top_k_scratch_bytes(g.nodes()[std::size_t(nd.src[0])].ne0, nd.ne0, nd.ne1);
        if (nd.op == graph::op::mul_mat_id) {  // the Q8_1 records of every token's activation columns
            const graph::node& w = g.nodes()[std::size_t(nd.src[0])];
            check(w.ne0 % 32 == 0, errc::shape_mismatch, [&] {
                return "cuda backend: mul_mat_id with " + graph::graph::describe(w) +
                       " rounds activations through Q8_1, which needs k a multiple of 32";
            });
            return ops::mul_mat_id_scratch_bytes(w.ne0, g.nodes()[std::size_t(nd.src[1])].ne0 / w.ne0, nd.ne1);
        }
        if (nd.op == graph::op::all_gather)  // every rank's slot, as NCCL gathers them (ops/gather.cuh)
            return std::size_t(ops::gather_slot_floats(nd.ne0, nd.ranks, nd.ne1)) * std::size_t(nd.ranks) * sizeof(float);
        if (nd.op != graph::op::attention) return 0;
        return steps::attention_scratch_bytes(g, nd);
    }

    program prepare(const graph::graph& g, const graph::plan& p) const { return program(g, p, options_); }

    // This backend's place in its tensor-parallel group (options().nccl; none: rank 0 of 1), which
    // a tensor-parallel model checks against its own.
    int32_t rank() const noexcept {
#if defined(LLMRT_HAVE_NCCL)
        if (options_.nccl) return options_.nccl->rank();
#endif
        return 0;
    }
    int32_t ranks() const noexcept {
#if defined(LLMRT_HAVE_NCCL)
        if (options_.nccl) return options_.nccl->size();
#endif
        return 1;
    }

    // Whether this machine has a CUDA device (never throws).
    static bool device_present() noexcept {
        int count = 0;
        const bool present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
        cudaGetLastError();
        return present;
    }

private:
    backend_options options_;
};

// Every weight type of llmrt::weight_types.
using backend = basic_backend<weight_types>;

}  // namespace llmrt::cuda
