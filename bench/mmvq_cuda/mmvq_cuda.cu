// llmrt-bench-mmvq-cuda: how close does mmvq come to the memory-bandwidth limit?
//
// For every weight type, shapes rows × k in {4096×4096, 14336×4096, 4096×14336, 128256×4096} and
// NCols in {1, 2, 4, 8}: the median time per launch in steady state (a captured CUDA graph of many
// back-to-back launches, weights rotating among buffers that together exceed the L2 three times),
// in two chains: each launch reading X only after the previous launch is complete, as if X came
// from it (with and without programmatic dependent launch), and the launches sharing one prepared
// X (mmvq_prepared_many: each reads X at once and waits for the previous launch only before
// writing Y); GB/s counting the bytes the kernel must move (W, the quantized activation records,
// Y) and their fraction of the H100's measured 3.1 TB/s.
// Also the activation quantizer + mmvq pair, what ggml's published figure times, and two
// ceilings over the same bytes: a plain read-only kernel, and a pipelined reader whose launches
// overlap (see pipelined_read).
// Prints a table, then writes JSON (--json FILE, default mmvq_cuda.json).
//
//   llmrt-bench-mmvq-cuda [--json FILE] [--types q4_K,q8_0] [--shapes 4096x4096,...] [--ncols 1,8]
//                         [--copies per-row]   (per-row bulk copies instead of tensor-map boxes)
//                         [--max-warps N]      (launch_options::mmvq_max_warps: at most N warps per CTA)
//                         [--quick 1]          (PDL launches only: no plain or quantizer + mmvq
//                                               timings, reported as 0; for comparing builds)
//                         [--l2-resident 1]    (every launch reads one W buffer, which stays in the
//                                               L2 where it fits: the conditions of ggml's
//                                               test-backend-ops perf, for a like-for-like comparison)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "llmrt/cpu/matvec.hpp"
#include "llmrt/cuda/mmvq.cuh"
#include "llmrt/testing/generate.hpp"
#include "llmrt/testing/measures.hpp"

#include "../../examples/generate/arguments.hpp"

namespace cuda = llmrt::cuda;

namespace {

constexpr double read_bandwidth = 3.1e12;  // bytes/s, measured read-only kernel on the H100
constexpr double l2_bytes = 50e6;

struct shape {
    int64_t rows, k;
};

// Random bytes with sane scale fields (small finite fp16 d/dmin, E8M0 exponents 120..130),
// written on the device: the weights of a 128256-row matrix would take seconds on the host.
__device__ uint32_t hash32(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return uint32_t(x);
}
__global__ void fill_random(uint32_t* p, int64_t words, uint64_t seed) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < words; i += int64_t(gridDim.x) * blockDim.x)
        p[i] = hash32(seed * 0x9e3779b97f4a7c15ull + uint64_t(i));
}
template <class B>
__global__ void fix_scales(uint8_t* w, int64_t blocks) {
    for (int64_t b = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; b < blocks; b += int64_t(gridDim.x) * blockDim.x) {
        uint8_t* block = w + b * int64_t(sizeof(B));
        const uint32_t h = hash32(uint64_t(b) * 7 + 3);
        const uint16_t scale = uint16_t(0x1c00 | (h & 0x3ff));  // about 2^-8, finite
        const uint16_t min = uint16_t(0x1c00 | ((h >> 10) & 0x3ff));
        auto put = [&](int offset, uint16_t v) { block[offset] = uint8_t(v), block[offset + 1] = uint8_t(v >> 8); };
        if constexpr (std::is_same_v<B, llmrt::q8_0>) put(offsetof(llmrt::q8_0, d), scale);
        else if constexpr (std::is_same_v<B, llmrt::mxfp4>) block[offsetof(llmrt::mxfp4, e)] = uint8_t(120 + h % 11);
        else if constexpr (std::is_same_v<B, llmrt::q2_K>) put(offsetof(llmrt::q2_K, d), scale), put(offsetof(llmrt::q2_K, dmin), min);
        else if constexpr (std::is_same_v<B, llmrt::q3_K>) put(offsetof(llmrt::q3_K, d), scale);
        else if constexpr (std::is_same_v<B, llmrt::q4_K>) put(offsetof(llmrt::q4_K, d), scale), put(offsetof(llmrt::q4_K, dmin), min);
        else if constexpr (std::is_same_v<B, llmrt::q5_K>) put(offsetof(llmrt::q5_K, d), scale), put(offsetof(llmrt::q5_K, dmin), min);
        else if constexpr (std::is_same_v<B, llmrt::q6_K>) put(offsetof(llmrt::q6_K, d), scale);
        else if constexpr (llmrt::nibble32_block<B>) {
            put(llmrt::block_layout<B>::value.d, scale);
            if constexpr (llmrt::block_layout<B>::value.m >= 0) put(llmrt::block_layout<B>::value.m, min);
        } else static_assert(llmrt::detail::always_false<B>, "fix_scales: add this type's scale fields");
    }
}

// The practical ceiling at each size: a read-only kernel over the same bytes (16-byte loads,
// 4 in flight per thread, one word written per block so nothing is optimised away).
__global__ void read_only(const uint4* p, int64_t n, uint32_t* sink) {
    uint32_t acc = 0;
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = __ldcs(p + i), b = __ldcs(p + i + stride), c = __ldcs(p + i + 2 * stride), d = __ldcs(p + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        const uint4 a = __ldcs(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

// A second ceiling, for chains of launches: a reader that streams its share of W through a
// shared-memory ring (bulk copies of 4 KB, 3 slots per warp, 8 warps and 96 KB per SM), launched
// as programmatic dependent launches. It starts its first copies before waiting for the previous
// launch and leaves half of every SM free, so the next launch is resident beside it and DRAM never
// idles between launches. mmvq starts its copies early too, but fills the SMs.
constexpr int ring_chunk_bytes = 4096, ring_slots = 3, ring_warps = 8;
__global__ void __launch_bounds__(32 * ring_warps) pipelined_read(const uint8_t* w, int64_t nchunks, uint32_t* sink) {
    extern __shared__ __align__(128) uint8_t ring_smem[];
    __shared__ uint64_t barriers[ring_warps][ring_slots];
    namespace ptx = llmrt::cuda::ptx;
    const int lane = int(threadIdx.x), warp = int(threadIdx.y);
    const int64_t first = int64_t(blockIdx.x) * ring_warps + warp, stride = int64_t(gridDim.x) * ring_warps;
    const int64_t n = first < nchunks ? (nchunks - first + stride - 1) / stride : 0;  // this warp's chunks
    uint8_t* ring = ring_smem + warp * ring_slots * ring_chunk_bytes;
    if (lane == 0)
        for (int s = 0; s < ring_slots; ++s) ptx::mbarrier_init(&barriers[warp][s], 1);
    __syncwarp();
    auto issue = [&](int64_t i, int s) {
        if (lane != 0) return;
        ptx::mbarrier_expect_bytes(&barriers[warp][s], ring_chunk_bytes);
        ptx::bulk_copy_to_shared(ring + s * ring_chunk_bytes, w + (first + i * stride) * ring_chunk_bytes,
                                 ring_chunk_bytes, &barriers[warp][s]);
        ptx::mbarrier_arrive(&barriers[warp][s]);
    };
    for (int i = 0; i < ring_slots && i < n; ++i) issue(i, i);
    ptx::allow_dependent_grids();
    ptx::wait_for_prerequisite_grids();
    uint32_t acc = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int s = int(i % ring_slots);
        ptx::mbarrier_wait(&barriers[warp][s], unsigned(i / ring_slots) & 1u);
        const uint4* chunk = reinterpret_cast<const uint4*>(ring + s * ring_chunk_bytes);
        for (int j = lane; j < ring_chunk_bytes / 16; j += 32) acc ^= chunk[j].x ^ chunk[j].y ^ chunk[j].z ^ chunk[j].w;
        __syncwarp();
        if (i + ring_slots < n) issue(i + ring_slots, s);
    }
    if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

struct measurement {
    std::string type;
    shape s;
    int ncols;
    double us_pdl, us_plain, us_pair, gbs, fraction;
    double us_shared, fraction_shared;  // the launches sharing X (mmvq_prepared_many)
    double nmse;
    double read_fraction;       // the read-only kernel over the same weights
    double pipelined_fraction;  // the pipelined reader over the same weights
};

// Median over `replays` of (graph replay time / launches), the graph holding `launches` calls of
// enqueue(i, stream).
template <class Enqueue>
double time_graph(int launches, int replays, Enqueue&& enqueue) {
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    for (int i = 0; i < launches; ++i) enqueue(i, stream);
    check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    std::vector<double> per_launch;
    for (int r = 0; r < replays + 2; ++r) {
        check(cudaEventRecord(start, stream), "cudaEventRecord");
        check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
        check(cudaEventRecord(stop, stream), "cudaEventRecord");
        check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        if (r >= 2) per_launch.push_back(double(ms) * 1e3 / launches);  // two warm-up replays
    }
    std::sort(per_launch.begin(), per_launch.end());
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    return per_launch[per_launch.size() / 2];
}

bool per_row_copies = false;
bool quick = false;
bool l2_resident = false;
int max_warps = 0;
int device_sms = 132;  // the device's SM count, set in main: the ceilings launch a fixed number of CTAs per SM

template <class B>
void bench_type(const std::vector<shape>& shapes, const std::vector<int>& ncols_list, std::vector<measurement>& out) {
    for (const shape s : shapes) {
        const int64_t row_bytes = int64_t(llmrt::row_size(B::id, s.k));
        const int64_t matrix_bytes = s.rows * row_bytes;
        const int64_t slot_bytes = (matrix_bytes + 255) / 256 * 256;
        const int nbuf =
            l2_resident ? 1 : int(std::max<int64_t>(2, int64_t(std::ceil(3 * l2_bytes / double(matrix_bytes)))));
        uint8_t* w = nullptr;
        check(cudaMalloc(&w, std::size_t(slot_bytes) * nbuf), "cudaMalloc weights");
        fill_random<<<1024, 256>>>(reinterpret_cast<uint32_t*>(w), slot_bytes * nbuf / 4, uint64_t(B::id) * 1000 + s.rows);
        for (int i = 0; i < nbuf; ++i) fix_scales<B><<<1024, 256>>>(w + i * slot_bytes, matrix_bytes / int64_t(sizeof(B)));
        check(cudaGetLastError(), "fill");

        const int max_cols = *std::max_element(ncols_list.begin(), ncols_list.end());
        const std::vector<float> x = llmrt::testing::generate(llmrt::testing::distribution::gaussian, s.k * max_cols, 5);
        float *d_x = nullptr, *d_y = nullptr;
        void* scratch = nullptr;
        check(cudaMalloc(&d_x, x.size() * sizeof(float)), "cudaMalloc x");
        check(cudaMalloc(&d_y, std::size_t(s.rows) * max_cols * sizeof(float)), "cudaMalloc y");
        const std::size_t scratch_bytes = cuda::activation_scratch_bytes(s.k, max_cols);
        check(cudaMalloc(&scratch, scratch_bytes), "cudaMalloc scratch");
        check(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy x");

        // The read-only roofline over the same rotating buffers.
        uint32_t* sink = nullptr;
        check(cudaMalloc(&sink, std::size_t(device_sms) * 8 * sizeof(uint32_t)), "cudaMalloc sink");
        const int read_launches = int(std::clamp<int64_t>(int64_t(2e8 / double(matrix_bytes)), 2 * nbuf + 4, 400));
        const double us_read = time_graph(read_launches, 7, [&](int i, cudaStream_t stream) {
            read_only<<<device_sms * 8, 512, 0, stream>>>(reinterpret_cast<const uint4*>(w + (i % nbuf) * slot_bytes),
                                                         matrix_bytes / 16, sink);
        });
        const double read_fraction = double(matrix_bytes) / (us_read * 1e-6) / read_bandwidth;
        const int ring_smem = ring_warps * ring_slots * ring_chunk_bytes;
        check(cudaFuncSetAttribute(pipelined_read, cudaFuncAttributeMaxDynamicSharedMemorySize, ring_smem), "ring smem");
        cuda::launch_options programmatic;
        programmatic.programmatic_dependent_launch = true;
        const double us_pipelined = time_graph(read_launches, 7, [&](int i, cudaStream_t stream) {
            // Whole chunks only: the last partial chunk (under 4 KB) is left out of both the bytes
            // read and the bytes counted.
            cuda::detail::launch("pipelined_read", pipelined_read, dim3(unsigned(device_sms)), dim3(32, ring_warps),
                                 ring_smem, stream, programmatic,
                                 static_cast<const uint8_t*>(w + (i % nbuf) * slot_bytes),
                                 int64_t(matrix_bytes / ring_chunk_bytes), sink);
        });
        const double pipelined_fraction =
            double(matrix_bytes / ring_chunk_bytes * ring_chunk_bytes) / (us_pipelined * 1e-6) / read_bandwidth;
        cudaFree(sink);

        double us_one = 0, us_shared_one = 0;
        for (const int ncols : ncols_list) {
            cuda::qmatrix_view wv;
            wv.type = B::id;
            wv.rows = s.rows;
            wv.k = s.k;
            const cuda::input_columns xv{d_x, s.k, ncols};
            const cuda::output_columns yv{d_y, s.rows, ncols};
            const cuda::prepared_activations prepared = cuda::prepared_from(xv, scratch);
            cuda::quantize_activations(xv, scratch, scratch_bytes, nullptr);
            check(cudaDeviceSynchronize(), "quantize");

            // A spot check of the first rows against the CPU reference, so no broken kernel is timed.
            const int64_t check_rows = std::min<int64_t>(64, s.rows);
            wv.data = w;
            cuda::mmvq_prepared(wv, prepared, yv, nullptr);
            std::vector<uint8_t> wh(std::size_t(check_rows * row_bytes));
            std::vector<float> yh(std::size_t(s.rows) * ncols), ref(std::size_t(check_rows) * ncols), got;
            check(cudaMemcpy(wh.data(), w, wh.size(), cudaMemcpyDeviceToHost), "cudaMemcpy w");
            check(cudaMemcpy(yh.data(), d_y, yh.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy y");
            llmrt::cpu::matvec_shape ms;
            ms.rows = check_rows;
            ms.k = s.k;
            ms.ncols = ncols;
            llmrt::cpu::matvec(reinterpret_cast<const B*>(wh.data()), x.data(), ref.data(), ms,
                               llmrt::cpu::activation_format::q8_1);
            for (int c = 0; c < ncols; ++c)
                got.insert(got.end(), yh.begin() + c * s.rows, yh.begin() + c * s.rows + check_rows);
            const double nmse = llmrt::testing::nmse(got.data(), ref.data(), int64_t(ref.size()));

            const int launches = int(std::clamp<int64_t>(int64_t(2e8 / double(matrix_bytes)), 8 * nbuf / 4 + 4, 400));
            // The command line's copy path and warp cap, with or without programmatic launch.
            auto options = [](bool pdl) {
                cuda::launch_options o;
                o.programmatic_dependent_launch = pdl;
                o.allow_tensor_map = !per_row_copies;
                o.mmvq_max_warps = max_warps;
                return o;
            };
            auto launch = [&](bool pdl) {
                return [&, pdl](int i, cudaStream_t stream) {
                    cuda::qmatrix_view wi = wv;
                    wi.data = w + (i % nbuf) * slot_bytes;
                    cuda::mmvq_prepared(wi, prepared, yv, stream, options(pdl));
                };
            };
            const double us_pdl = time_graph(launches, 7, launch(true));
            std::vector<cuda::mmvq_product> products(std::size_t(launches), cuda::mmvq_product{wv, yv});
            for (int i = 0; i < launches; ++i) products[std::size_t(i)].w.data = w + (i % nbuf) * slot_bytes;
            const double us_shared = time_graph(launches, 7, [&](int i, cudaStream_t stream) {
                if (i > 0) return;  // one call launches them all
                cuda::mmvq_prepared_many(products, prepared, stream, options(true));
            });
            const double us_plain = quick ? 0.0 : time_graph(launches, 7, launch(false));
            const double us_pair = quick ? 0.0 : time_graph(launches, 7, [&](int i, cudaStream_t stream) {
                cuda::qmatrix_view wi = wv;
                wi.data = w + (i % nbuf) * slot_bytes;
                cuda::mmvq(wi, xv, yv, scratch, scratch_bytes, stream, options(true));
            });
            const double us = quick ? us_pdl : std::min(us_pdl, us_plain);
            if (ncols == 1) us_one = us, us_shared_one = us_shared;
            const double bytes = double(matrix_bytes) + double(cuda::activation_scratch_bytes(s.k, ncols)) +
                                 4.0 * double(s.rows) * ncols;
            measurement m{B::name, s, ncols, us_pdl, us_plain, us_pair, bytes / (us * 1e-6) / 1e9,
                          bytes / (us * 1e-6) / read_bandwidth, us_shared, bytes / (us_shared * 1e-6) / read_bandwidth,
                          nmse, read_fraction, pipelined_fraction};
            out.push_back(m);
            std::printf("%-6s %6lldx%-6lld %2d | %8.2f %8.2f %8.2f | %7.0f %5.1f%% | %5.2fx | %8.2f %5.1f%% %5.2fx | %5.1f%% "
                        "%5.1f%% | nmse %.1e\n",
                        B::name, (long long)s.rows, (long long)s.k, ncols, us_pdl, us_plain, us_pair, m.gbs,
                        100 * m.fraction, us_one > 0 ? us / us_one : 0.0, us_shared, 100 * m.fraction_shared,
                        us_shared_one > 0 ? us_shared / us_shared_one : 0.0, 100 * read_fraction, 100 * pipelined_fraction,
                        nmse);
            std::fflush(stdout);
        }
        cudaFree(w);
        cudaFree(d_x);
        cudaFree(d_y);
        cudaFree(scratch);
    }
}

}  // namespace

int main(int argc, char** argv) try {
    std::string json_path = "mmvq_cuda.json";
    std::vector<std::string> types;  // every weight type
    llmrt::weight_types::for_each([&](auto tag) { types.push_back(decltype(tag)::type::name); });
    std::vector<shape> shapes = {{4096, 4096}, {14336, 4096}, {4096, 14336}, {128256, 4096}};
    std::vector<int> ncols = {1, 2, 4, 8};
    for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
        const std::string& flag = cl.option();
        if (flag == "--json") json_path = cl.value();
        else if (flag == "--copies") {
            const std::string copies = cl.value();
            if (copies != "per-row" && copies != "tensor-map")
                llmrt_examples::bad_argument("--copies is per-row or tensor-map, not '" + copies + "'");
            per_row_copies = copies == "per-row";
        } else if (flag == "--quick") quick = cl.int_value(0, 1) != 0;
        else if (flag == "--l2-resident") l2_resident = cl.int_value(0, 1) != 0;
        else if (flag == "--max-warps") max_warps = cl.int_value(0, llmrt::cuda::detail::mmvq_max_split);
        else if (flag == "--types") {
            types = cl.list_value();
            for (const std::string& t : types) (void)llmrt::qtype_from_name(t);  // an unknown name fails here
        } else if (flag == "--ncols") ncols = cl.int_list_value(1, 8);
        else if (flag == "--shapes") {
            shapes.clear();
            for (const auto& [rows, k] : llmrt_examples::to_shapes(flag, cl.value())) shapes.push_back({rows, k});
        } else if (flag == "-h" || flag == "--help") {
            std::printf("usage: %s [--json FILE] [--types a,b] [--shapes RxK,...] [--ncols 1,8] [--copies per-row] "
                        "[--max-warps N] [--quick 1] [--l2-resident 1]\n",
                        argv[0]);
            return 0;
        } else {
            cl.reject();
        }
    }
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("llmrt-bench-mmvq-cuda: skipped, no CUDA device\n");
        return 0;
    }
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    device_sms = prop.multiProcessorCount;
    std::printf("device: %s, %d SMs, L2 %d MB; bandwidth reference %.1f TB/s\n", prop.name, prop.multiProcessorCount,
                prop.l2CacheSize >> 20, read_bandwidth / 1e12);
    std::printf("type   rows x k     nc | us (pdl) us plain us q+mmvq | GB/s   of 3.1 | vs nc1 | shared X: us  of 3.1 vs nc1 | "
                "read-only pipelined | check\n");

    std::vector<measurement> results;
    for (const std::string& t : types) {
        const llmrt::qtype q = llmrt::qtype_from_name(t);
        llmrt::dispatch<llmrt::weight_types>(q, "bench", [&](auto tag) {
            bench_type<typename decltype(tag)::type>(shapes, ncols, results);
        });
    }

    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) {
        std::perror(json_path.c_str());
        return 1;
    }
    std::fprintf(f,
                 "{\n  \"device\": \"%s\",\n  \"read_bandwidth_bytes_per_s\": %.3g,\n  \"l2_resident\": %s,\n"
                 "  \"results\": [\n",
                 prop.name, read_bandwidth, l2_resident ? "true" : "false");
    for (std::size_t i = 0; i < results.size(); ++i) {
        const measurement& m = results[i];
        std::fprintf(f,
                     "    {\"type\": \"%s\", \"rows\": %lld, \"k\": %lld, \"ncols\": %d, \"us_per_launch_pdl\": %.3f, "
                     "\"us_per_launch_plain\": %.3f, \"us_quantize_and_mmvq\": %.3f, \"gb_per_s\": %.1f, "
                     "\"fraction_of_read_bandwidth\": %.4f, \"read_only_kernel_fraction\": %.4f, "
                     "\"pipelined_read_fraction\": %.4f, \"us_per_launch_shared_x\": %.3f, "
                     "\"fraction_shared_x\": %.4f, \"spot_check_nmse\": %.3g}%s\n",
                     m.type.c_str(), (long long)m.s.rows, (long long)m.s.k, m.ncols, m.us_pdl, m.us_plain, m.us_pair,
                     m.gbs, m.fraction, m.read_fraction, m.pipelined_fraction, m.us_shared, m.fraction_shared, m.nmse,
                     i + 1 < results.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
    std::printf("wrote %s\n", json_path.c_str());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "llmrt-bench-mmvq-cuda: %s\n", e.what());
    return 2;
}
