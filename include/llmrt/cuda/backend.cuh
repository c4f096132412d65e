// cuda::backend: the graph executor on one CUDA device (include/llmrt/graph/backend.hpp).
//
//   llmrt::cuda::backend gpu;                                  // device 0
//   graph::executor<cuda::backend> ex(gpu, std::move(g));      // allocates, uploads, captures
//   ex.write(tokens, ids);  ex.run(n);  ex.read(logits, out);  // run: one graph launch
//
// prepare() does all the work that allocates: the arena, the zeroed states, the weights (one
// upload), the Q8_1 activation records of mul_mat and a stream; then it captures the forward of
// every batch size 1..max_batch into a CUDA graph. run(n) launches graph n on the stream and
// nothing else (no allocation, no host-side op work); read() waits for it.
//
// The ops are the kernels of include/llmrt/cuda/ops/ with the semantics of cpu/ops.hpp, block-
// quantized mul_mat is llmrt's mmvq on Q8_1-rounded activations (what cpu::backend computes by
// default, its reference). Every op reduces in a fixed order and treats each column on its own,
// so a run gives the same bits every time and a column's bits do not depend on the batch.
// Consecutive mul_mats of the same activations (q, k, v; gate, up) quantize them once and read the
// records without waiting for the mul_mat before them (activation_order::shared), and a
// residual add, the rms_norm of its sum and the product with the norm's weight run as one kernel
// (each node's result still written, the same bits) where no output overlaps another's input.
// Every kernel is a programmatic dependent launch by default: it may start while the kernel
// before it drains and waits for it before touching memory (sm_90), which hides launch gaps.
//
// basic_backend<Types> instantiates mmvq for the weight types of Types only (each adds eight
// kernels to the build); a model with another block type is refused at prepare. cuda::backend
// takes every weight type. Ids and positions are read on the device, where they cannot raise an
// error: an id or position out of range gives NaN (see ops/rows.cuh, ops/attention.cuh), where
// the CPU backend raises llmrt::error; llama_model checks both on the host before each run.
// Failed CUDA calls raise llmrt::error (errc::device_error, out_of_memory for allocations)
// naming the call; the device never asserts.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/check.cuh"
#include "llmrt/cuda/ops/argmax.cuh"
#include "llmrt/cuda/ops/attention.cuh"
#include "llmrt/cuda/ops/elementwise.cuh"
#include "llmrt/cuda/ops/mul_mat.cuh"
#include "llmrt/cuda/ops/norm.cuh"
#include "llmrt/cuda/ops/rope.cuh"
#include "llmrt/cuda/ops/rows.cuh"
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
};

namespace detail {

// Owning handles, so that a failed prepare releases what it had made.
struct device_memory {
    void* ptr = nullptr;
    device_memory() = default;
    device_memory(device_memory&& o) noexcept : ptr(std::exchange(o.ptr, nullptr)) {}
    device_memory& operator=(device_memory&& o) noexcept {
        std::swap(ptr, o.ptr);
        return *this;
    }
    ~device_memory() {
        if (ptr) cudaFree(ptr);
    }
    std::byte* bytes() const { return static_cast<std::byte*>(ptr); }
};

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

}  // namespace detail

// A graph prepared on the device: what basic_backend<Types>::prepare returns.
template <class Types>
class basic_program {
public:
    basic_program(const graph::graph& g, const graph::plan& p, const backend_options& options);

    // Runs the plan for a batch of n_tokens columns: one graph launch (or the ops one by one).
    void run(int64_t n_tokens) {
        state& s = *s_;
        if (s.steps.empty()) return;
        if (s.options.use_graphs)
            LLMRT_CUDA_CHECK(cudaGraphLaunch(s.graphs[std::size_t(n_tokens - 1)], s.stream));
        else
            enqueue(n_tokens);
    }

    // Host -> tensor t; ordered after the runs before it (the host bytes may be reused at once).
    void write(graph::tensor t, std::size_t offset, const void* src, std::size_t bytes) {
        if (bytes == 0) return;
        LLMRT_CUDA_CHECK(cudaMemcpyAsync(address(t.id) + offset, src, bytes, cudaMemcpyHostToDevice, s_->stream));
    }

    // Tensor t -> host, once every run queued before has finished.
    void read(graph::tensor t, std::size_t offset, void* dst, std::size_t bytes) const {
        if (bytes == 0) return;
        LLMRT_CUDA_CHECK(cudaMemcpyAsync(dst, address(t.id) + offset, bytes, cudaMemcpyDeviceToHost, s_->stream));
        LLMRT_CUDA_CHECK(cudaStreamSynchronize(s_->stream));
    }

    // Bytes of device memory this program holds: arena, states, weights, activation records.
    std::size_t device_bytes() const noexcept { return s_->device_bytes; }

private:
    struct step {
        int32_t id = -1;
        const graph::node* nd = nullptr;
        const graph::node* src_nd[4] = {nullptr, nullptr, nullptr, nullptr};
        std::byte* dst = nullptr;
        const std::byte* src[4] = {nullptr, nullptr, nullptr, nullptr};
        std::byte* scratch = nullptr;
        std::size_t scratch_bytes = 0;
        bool quantize = true;  // mul_mat: quantize x (false: the records already hold it)
        // mul_mat: how it reads the records against the step before it (up to 8 columns: one mmvq
        // launch): shared after a mul_mat of the same records (Q, K, V; gate, up), first_of_shared
        // before one
        activation_order activations = activation_order::after_previous;
        // add / rms_norm steps that also compute the next steps' rms_norm and mul (null: not fused)
        int32_t norm_id = -1, product_id = -1;
        std::byte* norm_dst = nullptr;
        std::byte* product_dst = nullptr;
        const std::byte* product_weight = nullptr;
        float eps = 0.0f;
    };

    struct state {
        const graph::graph* g = nullptr;
        const graph::plan* p = nullptr;
        backend_options options;
        detail::device_memory arena, weights, records;
        std::vector<detail::device_memory> states;
        std::size_t records_bytes = 0;
        std::size_t device_bytes = 0;
        std::vector<std::byte*> address;  // per node: its device memory (null: not planned)
        cudaStream_t stream = nullptr;
        std::vector<step> steps;
        std::vector<cudaGraphExec_t> graphs;  // per batch size n at n − 1

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

    std::byte* address(int32_t id) const {
        std::byte* a = s_->address[std::size_t(id)];
        check(a != nullptr, errc::invalid_argument, [&] {
            return "cuda backend: node " + graph::graph::describe(s_->g->nodes()[std::size_t(id)]) +
                   " has no memory in this plan";
        });
        return a;
    }

    static bool float_weight(qtype t) { return t == qtype::f32 || t == qtype::f16 || t == qtype::bf16; }

    void check_supported(const graph::node& nd) const;
    void launch_step(const step& st, int64_t n) const;
    void fuse_norms();

    void enqueue(int64_t n) const {
        cudaGetLastError();  // a failure an earlier call already reported must not be taken for a launch's
        for (const step& st : s_->steps) launch_step(st, n);
    }

    void capture(int64_t n);

    std::unique_ptr<state> s_;
};

template <class Types>
void basic_program<Types>::check_supported(const graph::node& nd) const {
    const auto& nodes = s_->g->nodes();
    if (nd.op == graph::op::mul_mat) {
        const graph::node& w = nodes[std::size_t(nd.src[0])];
        check(float_weight(w.type) || is_in<Types>(w.type), errc::unsupported_type, [&] {
            return "cuda backend: mul_mat with W " + graph::graph::describe(w) +
                   ": this backend takes f32, f16, bf16 and the block types " + llmrt::detail::type_names(Types{}) +
                   " (cuda::backend takes every weight type)";
        });
    }
    if (nd.op == graph::op::get_rows) {
        const graph::node& table = nodes[std::size_t(nd.src[0])];
        check(is_in<all_types>(table.type), errc::unsupported_type, [&] {
            return "cuda backend: get_rows from " + graph::graph::describe(table) + ": no device codec for its type";
        });
    }
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

    // Where every weight goes in the one weight buffer, and how many activation records the
    // quantized mul_mats need.
    constexpr std::size_t align = 256;
    auto round_up = [](std::size_t b) { return (b + align - 1) / align * align; };
    std::vector<std::size_t> weight_offset(n, 0);
    std::size_t weight_bytes = 0;
    for (int32_t id : p.order) {
        const graph::node& nd = nodes[std::size_t(id)];
        check_supported(nd);
        if (p.where[std::size_t(id)] == graph::storage::weight) {
            weight_offset[std::size_t(id)] = weight_bytes;
            weight_bytes += round_up(p.bytes[std::size_t(id)]);
        }
        if (nd.op == graph::op::mul_mat && !float_weight(nodes[std::size_t(nd.src[0])].type))
            s.records_bytes = std::max(s.records_bytes,
                                       ops::mul_mat_records_bytes(nodes[std::size_t(nd.src[0])].ne0, nd.ne1));
    }

    s.arena = detail::allocate(p.arena_bytes, "the arena");
    LLMRT_CUDA_CHECK(cudaMemset(s.arena.ptr, 0, p.arena_bytes == 0 ? 1 : p.arena_bytes));
    s.weights = detail::allocate(weight_bytes, "the weights");
    s.records = detail::allocate(s.records_bytes, "mul_mat's activation records");
    s.device_bytes = p.arena_bytes + weight_bytes + s.records_bytes;
    s.address.assign(n, nullptr);
    std::vector<std::size_t> state_index(n, 0);
    for (int32_t id : p.order) {
        const auto i = std::size_t(id);
        switch (p.where[i]) {
            case graph::storage::arena: s.address[i] = s.arena.bytes() + p.offset[i]; break;
            case graph::storage::weight:
                s.address[i] = s.weights.bytes() + weight_offset[i];
                LLMRT_CUDA_CHECK(cudaMemcpy(s.address[i], nodes[i].data, p.bytes[i], cudaMemcpyHostToDevice));
                break;
            case graph::storage::state:
                state_index[i] = s.states.size();
                s.states.push_back(detail::allocate(p.bytes[i], "state " + graph::graph::describe(nodes[i])));
                LLMRT_CUDA_CHECK(cudaMemset(s.states.back().ptr, 0, p.bytes[i]));
                s.address[i] = s.states.back().bytes();
                s.device_bytes += p.bytes[i];
                break;
            case graph::storage::alias:
            case graph::storage::none: break;
        }
    }
    // A set_rows result is its cache's memory (its state comes earlier in the order).
    for (int32_t id : p.order)
        if (p.where[std::size_t(id)] == graph::storage::alias)
            s.address[std::size_t(id)] = s.address[std::size_t(p.alias_of[std::size_t(id)])];

    int32_t records_hold = -1;  // the activations whose Q8_1 records the buffer holds
    for (int32_t id : p.order) {
        const graph::node& nd = nodes[std::size_t(id)];
        if (nd.op == graph::op::input || nd.op == graph::op::weight || nd.op == graph::op::state) continue;
        step st;
        st.id = id;
        st.nd = &nd;
        st.dst = s.address[std::size_t(id)];
        for (int i = 0; i < nd.n_src(); ++i) {
            st.src_nd[i] = &nodes[std::size_t(nd.src[std::size_t(i)])];
            st.src[i] = s.address[std::size_t(nd.src[std::size_t(i)])];
        }
        if (p.scratch_bytes[std::size_t(id)] > 0) {
            st.scratch = s.arena.bytes() + p.scratch_offset[std::size_t(id)];
            st.scratch_bytes = p.scratch_bytes[std::size_t(id)];
        }
        if (nd.op == graph::op::mul_mat && !float_weight(st.src_nd[0]->type)) {
            st.quantize = records_hold != nd.src[1];
            records_hold = nd.src[1];
        }
        s.steps.push_back(st);
    }

    fuse_norms();
    auto quantized_mul_mat = [](const step& st) {
        return st.nd->op == graph::op::mul_mat && !float_weight(st.src_nd[0]->type);
    };
    for (std::size_t i = 1; i < s.steps.size(); ++i) {
        step& previous = s.steps[i - 1];
        step& current = s.steps[i];
        if (quantized_mul_mat(previous) && quantized_mul_mat(current) && !current.quantize &&
            current.nd->src[1] == previous.nd->src[1]) {
            if (previous.activations == activation_order::after_previous)
                previous.activations = activation_order::first_of_shared;
            current.activations = activation_order::shared;
        }
    }

    LLMRT_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    LLMRT_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads and memsets are done before any run
    if (options.use_graphs && !s.steps.empty()) {
        s.graphs.assign(std::size_t(g.max_batch()), nullptr);
        for (int64_t b = 1; b <= g.max_batch(); ++b) capture(b);
        LLMRT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    }
}

// add -> rms_norm -> mul (and rms_norm -> mul) chains of consecutive steps become one step, where
// the chain's outputs neither overlap its inputs nor each other except at the same address (a
// block handles one column, reading all of it before writing; with memory reuse a later node may
// take the bytes of an input the chain has read last).
template <class Types>
void basic_program<Types>::fuse_norms() {
    state& s = *s_;
    const graph::plan& p = *s.p;
    auto range_safe = [&](int32_t out, int32_t in) {
        const std::byte* o = s.address[std::size_t(out)];
        const std::byte* i = s.address[std::size_t(in)];
        return o == i || o + p.bytes[std::size_t(out)] <= i || i + p.bytes[std::size_t(in)] <= o;
    };
    auto batched_same = [](const graph::node& a, const graph::node& b) {
        return a.batched == b.batched && a.ne0 == b.ne0 && a.ne1 == b.ne1;
    };
    std::vector<step> fused;
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
        step st = s.steps[i];
        const graph::node& nd = *st.nd;
        std::vector<int32_t> inputs;  // what the fused kernel reads
        std::vector<int32_t> outputs{st.id};
        for (int k = 0; k < nd.n_src(); ++k) inputs.push_back(nd.src[std::size_t(k)]);
        auto all_safe = [&](int32_t out) {
            for (int32_t in : inputs)
                if (!range_safe(out, in)) return false;
            for (int32_t o : outputs)
                if (!range_safe(out, o)) return false;
            return true;
        };
        std::size_t next = i + 1;
        const bool add_same_shape = nd.op == graph::op::add && batched_same(nd, *st.src_nd[1]);
        if (add_same_shape && next < s.steps.size()) {
            const step& r = s.steps[next];
            if (r.nd->op == graph::op::rms_norm && r.nd->src[0] == st.id && batched_same(*r.nd, nd) && all_safe(r.id)) {
                st.norm_id = r.id;
                st.norm_dst = r.dst;
                st.eps = r.nd->eps;
                outputs.push_back(r.id);
                ++next;
            }
        }
        if (nd.op == graph::op::rms_norm) {
            st.norm_id = st.id;
            st.norm_dst = st.dst;
            st.eps = nd.eps;
        }
        if (st.norm_id >= 0 && next < s.steps.size()) {
            const step& m = s.steps[next];
            const graph::node& w = *m.src_nd[1];
            if (m.nd->op == graph::op::mul && m.nd->src[0] == st.norm_id && !w.batched && w.ne1 == 1 &&
                w.ne0 == m.nd->ne0 && m.nd->src[1] != st.norm_id && all_safe(m.id)) {
                st.product_id = m.id;
                st.product_dst = m.dst;
                st.product_weight = m.src[1];
                ++next;
            }
        }
        if (nd.op == graph::op::rms_norm && st.product_id < 0) st.norm_id = -1;  // a plain rms_norm
        if (nd.op == graph::op::add && st.norm_id < 0) st.norm_dst = nullptr;
        fused.push_back(st);
        i = next - 1;
    }
    s.steps = std::move(fused);
}

template <class Types>
void basic_program<Types>::capture(int64_t n) {
    state& s = *s_;
    LLMRT_CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeRelaxed));
    cudaGraph_t graph = nullptr;
    try {
        enqueue(n);
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
    s.graphs[std::size_t(n - 1)] = exec;
    LLMRT_CUDA_CHECK(cudaGraphUpload(exec, s.stream));
}

template <class Types>
void basic_program<Types>::launch_step(const step& st, int64_t n) const {
    const graph::node& nd = *st.nd;
    const cudaStream_t stream = s_->stream;
    const int64_t cols = nd.batched ? n : nd.ne1;
    launch_options lo;
    lo.programmatic_dependent_launch = s_->options.programmatic_dependent_launch;
    const auto* a = reinterpret_cast<const float*>(st.src[0]);
    const auto* b = reinterpret_cast<const float*>(st.src[1]);
    auto* y = reinterpret_cast<float*>(st.dst);
    auto ids = [&](int i) { return reinterpret_cast<const int32_t*>(st.src[i]); };
    switch (nd.op) {
        case graph::op::input:
        case graph::op::weight:
        case graph::op::state: return;
        case graph::op::get_rows:
            ops::get_rows<all_types>(st.src_nd[0]->type, st.src[0], nd.ne0, st.src_nd[0]->ne1, ids(1), y, cols, stream,
                                     lo);
            return;
        case graph::op::rms_norm:
            ops::add_rms_norm_mul(a, nullptr, nullptr, y, reinterpret_cast<const float*>(st.product_weight),
                                  reinterpret_cast<float*>(st.product_dst), nd.ne0, cols, nd.eps, stream, lo);
            return;
        case graph::op::mul:
            ops::mul(a, b, y, nd.ne0, cols, !st.src_nd[1]->batched && st.src_nd[1]->ne1 == 1, stream, lo);
            return;
        case graph::op::add:
            if (st.norm_dst) {
                ops::add_rms_norm_mul(a, b, y, reinterpret_cast<float*>(st.norm_dst),
                                      reinterpret_cast<const float*>(st.product_weight),
                                      reinterpret_cast<float*>(st.product_dst), nd.ne0, cols, st.eps, stream, lo);
                return;
            }
            ops::add(a, b, y, nd.ne0, cols, !st.src_nd[1]->batched && st.src_nd[1]->ne1 == 1, stream, lo);
            return;
        case graph::op::mul_mat: {
            const graph::node& w = *st.src_nd[0];
            if (float_weight(w.type)) {
                ops::mul_mat_float(w.type, st.src[0], w.ne1, w.ne0, b, y, cols, stream, lo);
                return;
            }
            // One mmvq launch per step up to 8 columns: then the mul_mats of one X chain their reads of it.
            launch_options mo = lo;
            if (cols <= mmvq_max_cols) mo.activations = st.activations;
            dispatch<Types>(w.type, "cuda backend: mul_mat", [&](auto tag) {
                using B = typename decltype(tag)::type;
                ops::mul_mat_quantized<B>(st.src[0], w.ne1, w.ne0, b, y, cols, s_->records.ptr, s_->records_bytes,
                                          st.quantize, stream, mo);
            });
            return;
        }
        case graph::op::rope: ops::rope(a, y, ids(1), cols, nd.rope, stream, lo); return;
        case graph::op::attention:
            ops::attention(a, st.src_nd[1]->type, st.src[1], st.src[2], st.src_nd[1]->ne1, ids(3), y, cols, nd.attention,
                           st.scratch, st.scratch_bytes, stream, lo);
            return;
        case graph::op::softmax: ops::softmax(a, y, nd.ne0, cols, stream, lo); return;
        case graph::op::silu: ops::silu(a, y, nd.ne0 * cols, stream, lo); return;
        case graph::op::swiglu: ops::swiglu(a, b, y, nd.ne0 * cols, stream, lo); return;
        case graph::op::set_rows:
            ops::set_rows(nd.type, st.dst, nd.ne0, nd.ne1, b, ids(2), n, stream, lo);
            return;
        case graph::op::argmax:
            ops::argmax(a, reinterpret_cast<int32_t*>(st.dst), st.src_nd[0]->ne0, cols, stream, lo);
            return;
    }
    throw error(errc::invalid_argument, std::string("cuda backend: no kernel for op ") + graph::to_string(nd.op));
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

    // attention: n_ctx scores per head and column. (mul_mat's activation records are the
    // program's own buffer, shared by the mul_mats that read the same activations.)
    std::size_t scratch_bytes(const graph::graph& g, const graph::node& nd) const {
        if (nd.op != graph::op::attention) return 0;
        return ops::attention_scratch_bytes(g.nodes()[std::size_t(nd.src[1])].ne1, nd.attention.n_head, nd.ne1);
    }

    program prepare(const graph::graph& g, const graph::plan& p) const { return program(g, p, options_); }

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
