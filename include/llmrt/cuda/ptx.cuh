// Thin device wrappers over the PTX the kernels use: asynchronous copies into shared memory,
// programmatic dependent launch, the int8 tensor-core mma, byte permutes and loads of words at
// any byte alignment. cp.async and mma need sm_80, bulk copies and mbarrier transaction counts
// sm_90 (griddepcontrol is a no-op below it); llmrt's launchers refuse older devices on the host.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace llmrt::cuda::ptx {

// ---- Asynchronous global -> shared copies (cp.async, completed per thread by group). ----

// Copies src_bytes (0..16) from the 16-byte aligned global address src into the 16-byte
// aligned shared address dst and zero-fills the rest of the 16 bytes. Bypasses L1 (.cg):
// weights are read once.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned dst_shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst_shared), "l"(src), "r"(src_bytes)
                 : "memory");
#else
    (void)dst, (void)src, (void)src_bytes;
    __trap();
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most Pending of this thread's committed groups are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

// ---- Bulk copies into shared memory completing on an mbarrier (sm_90). ----

__device__ __forceinline__ uint32_t shared_address(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarrier_init(uint64_t* barrier, unsigned arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(arrivals) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
    (void)barrier, (void)arrivals;
    __trap();
#endif
}

// Adds `bytes` to the transaction count the barrier's current phase waits for.
__device__ __forceinline__ void mbarrier_expect_bytes(uint64_t* barrier, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(bytes)
                 : "memory");
#else
    (void)barrier, (void)bytes;
#endif
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* barrier) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
#else
    (void)barrier;
#endif
}

// Waits until the barrier's phase with the given parity has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* barrier, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(shared_address(barrier)), "r"(parity)
            : "memory");
    } while (done == 0);
#else
    (void)barrier, (void)parity;
#endif
}

// Copies `bytes` (a multiple of 16) from the 16-byte aligned global address src to the 16-byte
// aligned shared address dst; the barrier's transaction count drops by `bytes` when they land.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes, uint64_t* barrier) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     shared_address(dst)),
                 "l"(src), "r"(bytes), "r"(shared_address(barrier))
                 : "memory");
#else
    (void)dst, (void)src, (void)bytes, (void)barrier;
    __trap();
#endif
}

// Loads the box at coordinates (x, y, z, w) of the 4-d tensor map into shared memory (128-byte
// aligned dst); the barrier's transaction count drops by the box's bytes when it lands. Parts of
// the box outside the tensor read as zeros.
__device__ __forceinline__ void tensor_copy_to_shared(void* dst, const void* tensor_map, int x, int y, int z, int w,
                                                      uint64_t* barrier) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
        "[%6];\n" ::"r"(shared_address(dst)),
        "l"(tensor_map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(shared_address(barrier))
        : "memory");
#else
    (void)dst, (void)tensor_map, (void)x, (void)y, (void)z, (void)w, (void)barrier;
    __trap();
#endif
}

// ---- Programmatic dependent launch (sm_90; no-ops where the launch did not ask for it). ----

// Blocks until the grids this one depends on have completed and their writes are visible.
__device__ __forceinline__ void wait_for_prerequisite_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets a dependent grid launched with programmatic stream serialization start early; it still
// waits for this grid's completion before reading what this grid writes.
__device__ __forceinline__ void allow_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// ---- Integer tensor-core mma: D = A·B + C, A 16×K s8 (row), B K×8 s8 (col), C/D 16×8 s32. ----
// Fragments (g = lane/4, t = lane%4): A a0 (row g, k 4t..4t+3), a1 (row g+8, same k), for K = 32
// also a2 (row g, k 16+4t..), a3 (row g+8, k 16+4t..); B b0 (k 4t..4t+3, column g), for K = 32
// also b1 (k 16+4t..); C c0 (row g, column 2t), c1 (row g, 2t+1), c2 (row g+8, 2t), c3 (row g+8, 2t+1).

__device__ __forceinline__ void mma_s8_m16n8k32(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)c, (void)a, (void)b0, (void)b1;
    __trap();
#endif
}

__device__ __forceinline__ void mma_s8_m16n8k16(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(b0));
#else
    (void)c, (void)a0, (void)a1, (void)b0;
    __trap();
#endif
}

// ---- Bytes and words. ----

// c + a.h0·b.byte0 + a.h1·b.byte1, or with `high` a.h0·b.byte2 + a.h1·b.byte3: a as two signed
// 16-bit halves, b as signed bytes (`high` is a constant wherever the callers' loops unroll).
__device__ __forceinline__ int dp2a(int a, int b, int c, bool high) {
    return high ? __dp2a_hi(a, b, c) : __dp2a_lo(a, b, c);
}
// The low 16 bits of lo and of hi as the two halves of one word.
__device__ __forceinline__ int pack_low_halves(int lo, int hi) { return int(__byte_perm(uint32_t(lo), uint32_t(hi), 0x5410u)); }

// c + Σ a_byte·b_byte with a's bytes unsigned and b's signed: weights masked in place (q·4^i
// up to 255) multiply the int8 activations without first being shifted down.
__device__ __forceinline__ int dp4a_u8s8(uint32_t a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// Orders this thread's earlier shared-memory writes before later bulk or tensor copies (the async
// proxy) into the same memory.
__device__ __forceinline__ void fence_shared_for_async_copies() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// __byte_perm: byte i of the result is byte (selector nibble i) of the 8 bytes {hi:lo}.
__device__ __forceinline__ uint32_t byte_perm(uint32_t lo, uint32_t hi, uint32_t selector) {
    return __byte_perm(lo, hi, selector);
}

// prmt with the selector as given: like byte_perm where every selector nibble is below 8, without
// the mask __byte_perm adds (callers that clear bit 3 themselves save that instruction).
__device__ __forceinline__ uint32_t byte_perm_unmasked(uint32_t lo, uint32_t hi, uint32_t selector) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(selector));
    return r;
}

// Each byte 0xff where that byte's top bit is set, else 0: prmt's sign-replicate mode (selector
// nibbles with bit 3 set), which __byte_perm does not expose (it masks the selector to 3 bits).
__device__ __forceinline__ uint32_t spread_byte_signs(uint32_t v) {
    uint32_t r;
    asm("prmt.b32 %0, %1, 0, 0xba98;" : "=r"(r) : "r"(v));
    return r;
}

// (a & mask) | (~b & ~mask) in one LOP3 (lookup table 0xb1 over a = 0xf0, b = 0xcc, mask = 0xaa).
// Written as C++, with b's complement taken by the caller, the compiler emitted three LOP3 for
// it in Q3_K's tensor-core form (a mask, a merge and a flip).
__device__ __forceinline__ uint32_t merge_bits_not(uint32_t a, uint32_t b, uint32_t mask) {
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xb1;" : "=r"(r) : "r"(a), "r"(b), "r"(mask));
    return r;
}

// The 32-bit word starting at byte address p, where p is known to be a multiple of Align bytes.
// Below 4-byte alignment it reads the two aligned words around p and funnel-shifts them, so it
// may read up to 3 bytes past p + 4 (callers keep that slack in their buffers).
template <int Align>
__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {
    static_assert(Align == 1 || Align == 2 || Align == 4 || Align == 8 || Align == 16,
                  "llmrt::cuda::ptx::load_u32: Align must be a power of two up to 16");
    if constexpr (Align >= 4) {
        return *reinterpret_cast<const uint32_t*>(p);
    } else {
        // Stepping back from p (not rebuilding a pointer from an integer) keeps p's address
        // space known, so shared memory is read with LDS rather than generic loads.
        const unsigned offset = unsigned(reinterpret_cast<uintptr_t>(p) & 3u);
        const uint32_t* aligned = reinterpret_cast<const uint32_t*>(p - offset);
        return __funnelshift_r(aligned[0], aligned[1], offset * 8u);
    }
}

// N consecutive words starting at p (alignment Align), each as load_u32 reads it; for Align < 4
// the N + 1 aligned words are read once and shared.
template <int Align, int N>
__device__ __forceinline__ void load_words(const uint8_t* p, uint32_t (&w)[N]) {
    if constexpr (Align >= 16 && N % 4 == 0) {
#pragma unroll
        for (int i = 0; i < N / 4; ++i) {
            const uint4 v = reinterpret_cast<const uint4*>(p)[i];
            w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
        }
    } else if constexpr (Align >= 8 && N % 2 == 0) {
#pragma unroll
        for (int i = 0; i < N / 2; ++i) {
            const uint2 v = reinterpret_cast<const uint2*>(p)[i];
            w[2 * i] = v.x, w[2 * i + 1] = v.y;
        }
    } else if constexpr (Align >= 4) {
#pragma unroll
        for (int i = 0; i < N; ++i) w[i] = reinterpret_cast<const uint32_t*>(p)[i];
    } else {
        const unsigned offset = unsigned(reinterpret_cast<uintptr_t>(p) & 3u);
        const uint32_t* aligned = reinterpret_cast<const uint32_t*>(p - offset);
        const unsigned shift = offset * 8u;
        uint32_t previous = aligned[0];
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const uint32_t next = aligned[i + 1];
            w[i] = __funnelshift_r(previous, next, shift);
            previous = next;
        }
    }
}

// p's address modulo 4 after adding `bytes`, for a Residue that is p's address modulo 4 where it
// is known at compile time (0..3), or -1 where it is not.
constexpr int residue_after(int residue, int bytes) { return residue < 0 ? -1 : (residue + bytes) & 3; }

// load_words where p's address modulo 4 may be known at compile time (Residue 0..3, else -1): then
// the words come from fixed offsets of the aligned word below p, joined by fixed shifts, with no
// address arithmetic per call.
template <int Align, int Residue, int N>
__device__ __forceinline__ void load_words_at(const uint8_t* p, uint32_t (&w)[N]) {
    static_assert(Residue >= -1 && Residue < 4, "llmrt::cuda::ptx::load_words_at: Residue must be -1 or 0..3");
    if constexpr (Residue < 0 || Align >= 4) {
        load_words<Align>(p, w);
    } else if constexpr (Residue == 0) {
#pragma unroll
        for (int i = 0; i < N; ++i) w[i] = reinterpret_cast<const uint32_t*>(p)[i];
    } else {
        const uint32_t* aligned = reinterpret_cast<const uint32_t*>(p - Residue);
        uint32_t previous = aligned[0];
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const uint32_t next = aligned[i + 1];
            w[i] = __funnelshift_r(previous, next, 8 * Residue);
            previous = next;
        }
    }
}
template <int Align, int Residue>
__device__ __forceinline__ uint32_t load_u32_at(const uint8_t* p) {
    uint32_t w[1];
    load_words_at<Align, Residue>(p, w);
    return w[0];
}

// The fp16 at p (2-byte aligned) as float; exact, as llmrt::fp16_to_fp32.
__device__ __forceinline__ float load_fp16(const uint8_t* p) {
    return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
}
__device__ __forceinline__ float fp16_bits_to_float(uint32_t bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}

}  // namespace llmrt::cuda::ptx
