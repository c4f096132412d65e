// Which backends this program was built with, and how a name on the command line becomes one.
// Shared by llmrt-generate and llmrt-compare.
//
//   cpu         the reference backend (quantized weights meet Q8_1-rounded activations, as on GPUs)
//   cpu:f32     float activations for every weight type
//   cpu:q8_1    the default, spelled out
//   cpu:ggml    ggml's CPU integer dot (activations in the type's vec_dot_type)
//   cuda        CUDA device 0 (cuda:N for device N): mmvq, the forward replayed as a CUDA graph;
//               present when the program's source is compiled by nvcc (LLMRT_CUDA builds it so)
//   vulkan      the best Vulkan device (vulkan:N by index, vulkan:NAME by name): mmvq on Q8_1
//               activations, one recorded command buffer per forward; present when the program
//               links llmrt::vulkan
//
// --gpus N (with_gpus): the CUDA backend on devices 0..N-1, one rank each of a tensor-parallel
// group whose collectives run over NCCL; present when nvcc compiles the program and CMake found
// NCCL (the program links llmrt::nccl).
//
// The CUDA and Vulkan backends join here when they exist: a branch in with_backend and a name in
// backends_by_preference, each behind its LLMRT_* build switch.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/core/error.hpp>
#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include <llmrt/cuda/backend.cuh>
#include <llmrt/cuda/nccl.cuh>
#include <llmrt/cuda/nccl_lsa.cuh>  // (with NCCL's device API) brings CUDA's namespace ::cuda: say llmrt::cuda::
#endif
#if __has_include(<llmrt/vulkan/ops/embedded_spirv.hpp>)  // the program links llmrt::vulkan
#define LLMRT_EXAMPLES_VULKAN 1
#include <llmrt/vulkan/backend.hpp>
#endif

namespace llmrt_examples {

// Backend names in the order "best present" picks them: CUDA, then Vulkan, then the CPU.
inline std::vector<std::string> backends_by_preference() {
    std::vector<std::string> names;
#if defined(__CUDACC__)
    if (llmrt::cuda::backend::device_present()) names.push_back("cuda");
#endif
#if defined(LLMRT_EXAMPLES_VULKAN)
    try {
        // A software rasteriser (lavapipe: a CPU-type device) is slower than the CPU backend
        // itself, so the automatic choice passes over it; --backend vulkan still reaches it.
        for (const auto& d : llmrt::vulkan::list_devices())
            if (d.missing.empty() && d.type != vk::PhysicalDeviceType::eCpu) {
                names.push_back("vulkan");
                break;
            }
    } catch (const std::exception&) {  // no loader or no driver: no Vulkan
    }
#endif
    names.push_back("cpu");
    return names;
}

// Whether speculative decoding may draft ahead (sample::generation_options::overlap) on this
// backend spec, running the target and the draft model from two threads at once: the CUDA and CPU
// backends' programs hold their own state (a CUDA program its own stream); two models of a Vulkan
// backend submit to its one queue, which two threads may not do at once.
inline bool overlap_allowed(const std::string& backend) { return backend.rfind("vulkan", 0) != 0; }

// llama_options::top_candidates for a target model that samples: its top k for temperature
// sampling picked on the device, so that 64 ids and logits travel per token instead of a row of the
// vocabulary (a sampler chain's top_k up to 64 reads them). Every backend picks a vocabulary's top k
// without k passes over it: the CPU with a heap, CUDA and Vulkan by radix selection over slices of
// the row, then a merge (cuda/ops/top_k_wide.cuh, vulkan/ops/top_k.hpp).
inline constexpr int32_t top_candidates = 64;

inline std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

// The options of a CPU backend spec (cpu, cpu:f32, cpu:q8_1, cpu:ggml).
inline llmrt::cpu::backend_options cpu_options(const std::string& spec) {
    const std::string variant = spec.find(':') == std::string::npos ? "" : spec.substr(spec.find(':') + 1);
    llmrt::cpu::backend_options o;
    if (variant == "f32") {
        o.quantized_activations = llmrt::cpu::activation_format::f32;
    } else if (variant == "ggml") {
        o.quantized_activations = llmrt::cpu::activation_format::ggml;
    } else if (!variant.empty() && variant != "q8_1") {
        throw llmrt::error(llmrt::errc::invalid_argument,
                           "backend '" + spec + "': the CPU backend's variants are cpu:q8_1, cpu:f32 and cpu:ggml");
    }
    return o;
}

// Makes the backend `spec` names and calls f(backend, description).
template <class F>
void with_backend(const std::string& spec, F&& f) {
    const std::string kind = spec.substr(0, spec.find(':'));
    [[maybe_unused]] const std::string variant = spec.find(':') == std::string::npos ? "" : spec.substr(spec.find(':') + 1);
    if (kind == "cpu") {
        const llmrt::cpu::backend_options o = cpu_options(spec);
        llmrt::cpu::backend b(o);
        f(b, "cpu (" + std::string(llmrt::cpu::to_string(o.quantized_activations)) +
                 " activations for quantized weights, single-threaded reference)");
        return;
    }
#if defined(__CUDACC__)
    if (kind == "cuda") {
        llmrt::cuda::backend_options o;
        if (!variant.empty()) {
            if (variant.find_first_not_of("0123456789") != std::string::npos || variant.size() > 4)
                throw llmrt::error(llmrt::errc::invalid_argument,
                                   "backend '" + spec + "': name a CUDA device by its index, as in cuda:0");
            o.device = std::stoi(variant);
        }
        llmrt::cuda::backend b(o);
        cudaDeviceProp props{};
        LLMRT_CUDA_CHECK(cudaGetDeviceProperties(&props, o.device));
        f(b, "cuda (device " + std::to_string(o.device) + ": " + props.name +
                 "; mmvq on Q8_1 activations, the forward replayed as a CUDA graph)");
        return;
    }
#endif
#if defined(LLMRT_EXAMPLES_VULKAN)
    if (kind == "vulkan") {
        llmrt::vulkan::context ctx({.device = variant});
        llmrt::vulkan::backend b(ctx);
        f(b, "vulkan (device " + std::to_string(ctx.info().index) + ": " + ctx.info().name +
                 "; mmvq on Q8_1 activations, one recorded command buffer per forward)");
        return;
    }
#endif
    // A backend llmrt has but this program was built without, or a name llmrt does not know.
    const std::string available = "; available here: " + joined(backends_by_preference());
    if (kind == "cuda")
        throw llmrt::error(llmrt::errc::missing_feature, "backend '" + spec + "': this program was built without CUDA (CMake "
                                                         "builds it when nvcc is found, or with -DLLMRT_CUDA=ON)" + available);
    if (kind == "vulkan")
        throw llmrt::error(llmrt::errc::missing_feature, "backend '" + spec + "': this program was built without Vulkan (it "
                                                         "needs the Vulkan headers, glslangValidator and spirv-val)" + available);
    throw llmrt::error(llmrt::errc::invalid_argument,
                       "no backend called '" + spec + "' (llmrt's are cpu, cuda and vulkan)" + available);
}

// --gpus N: a tensor-parallel group over CUDA devices 0..N-1 (cuda::nccl_local_group), then
// f(make_backend, cancel, description): make_backend(r) gives rank r's backend, cancel aborts the
// group (for model::tensor_parallel_llama or comm::rank_threads). backend_spec, what --backend
// said, must be empty or "cuda": the ranks take devices 0..N-1 in order.
template <class F>
void with_gpus(int32_t gpus, const std::string& backend_spec, F&& f) {
    const std::string what = "--gpus " + std::to_string(gpus);
    if (!backend_spec.empty() && backend_spec != "cuda")
        throw llmrt::error(llmrt::errc::invalid_argument,
                           what + " runs the CUDA backend on devices 0.." + std::to_string(gpus - 1) + "; --backend '" +
                               backend_spec + "' is another (give --backend cuda, or no --backend)");
#if defined(__CUDACC__) && defined(LLMRT_HAVE_NCCL)
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    cudaGetLastError();
    if (count < gpus)
        throw llmrt::error(llmrt::errc::invalid_argument, what + " needs " + std::to_string(gpus) +
                                                              " CUDA devices; this machine has " + std::to_string(count));
    std::vector<llmrt::cuda::nccl_communicator> group = llmrt::cuda::nccl_local_group(gpus);
    std::string names;
    for (int32_t d = 0; d < gpus; ++d) {
        cudaDeviceProp props{};
        LLMRT_CUDA_CHECK(cudaGetDeviceProperties(&props, d));
        names += (d ? ", " : "") + std::to_string(d) + ": " + props.name;
    }
    // The all-reduces as one kernel over NCCL's device API (cuda/nccl_lsa.cuh) where this build's
    // NCCL has it and the group allows it (else ncclAllReduce; the same bits either way), unless
    // LLMRT_NCCL_DEVICE_ALL_REDUCE=0.
    llmrt::cuda::device_all_reduce_factory device_all_reduce = nullptr;
#if defined(LLMRT_HAVE_NCCL_DEVICE_API)
    const char* device_env = std::getenv("LLMRT_NCCL_DEVICE_ALL_REDUCE");
    if (!(device_env && std::string(device_env) == "0")) device_all_reduce = llmrt::cuda::make_lsa_all_reduce;
#endif
    auto make_backend = [&group, device_all_reduce](int32_t r) {
        llmrt::cuda::backend_options o;
        o.device = group[std::size_t(r)].device();
        o.nccl = &group[std::size_t(r)];
        o.device_all_reduce = device_all_reduce;
        return std::make_unique<llmrt::cuda::backend>(o);
    };
    auto cancel = [&group] { llmrt::cuda::cancel_nccl_group(group); };
    f(make_backend, cancel,
      "cuda, tensor parallel over " + std::to_string(gpus) + " GPUs (devices " + names +
          "; one rank each, " + (device_all_reduce ? "all_reduce in a kernel over NCCL's device API where the group allows, all_gather"
                              : "all_reduce and all_gather") +
          " over NCCL, each forward replayed as a CUDA graph)");
#else
    (void)f;
#if defined(__CUDACC__)
    throw llmrt::error(llmrt::errc::missing_feature,
                       what + ": this program was built without NCCL (cmake/find_nccl.cmake did not find it; set "
                              "LLMRT_NCCL_ROOT, or pip install nvidia-nccl-cu13, and configure again)");
#else
    throw llmrt::error(llmrt::errc::missing_feature,
                       what + ": this program was built without CUDA (CMake builds it when nvcc is found, or with "
                              "-DLLMRT_CUDA=ON) and NCCL");
#endif
#endif
}

}  // namespace llmrt_examples
