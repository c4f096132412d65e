// Block layouts as data: what GPU code needs to know to read a block, described once, next to the
// block's C++ struct, with offsets taken by offsetof from that struct.
//
// A block type B names its decoding family (B::family; `own` where it does not say) and, for a family that reads it, gives its
// layout as block_layout<B>. The CUDA codecs (llmrt/cuda/codec/<family>.cuh) and the GLSL block
// includes (generated from these values by tools/glsl_layouts, over shaders/include/llmrt/blocks/
// <family>.glsl) follow from it: no byte offset of such a block is written anywhere else.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace llmrt {

enum class block_family {
    own,       // the type's GPU codecs are written by hand for it (the k-quants, Q8_0, MXFP4)
    nibble32,  // 32-value slices of 4-bit codes (+ an optional fifth bit), one scale per slice
};

// nibble32: a block holds slices_per_block slices of 32 values. Slice s has 16 code bytes at
// qs + 16·s: value e < 16 is the low nibble of byte e, value 16 + e the high nibble. Then
//   code  = nibble | (bit e' of the 32-bit word at qh) << 4     where qh >= 0 (e' the value's index)
//   value = table[code] (ggml's IQ4_NL table) where iq4nl_table, else code − code_offset
//   x     = scale·value (+ m, an fp16 minimum at offset m, where m >= 0)
//   scale = d (fp16 at offset d), or where scales_l >= 0 (IQ4_XS's 6-bit slice scales):
//           d·(ls − 32),  ls = (nibble s%2 of byte scales_l + s/2) | (bits 2s, 2s+1 of the u16 at scales_h) << 4
struct nibble32_layout {
    int bytes = 0;             // sizeof(B)
    int slices_per_block = 1;  // block_size / 32
    int d = 0;                 // offset of the fp16 scale
    int m = -1;                // offset of the fp16 minimum, or -1
    int qs = 0;                // offset of the first slice's 16 code bytes
    int qh = -1;               // offset of the 32 fifth bits (a little-endian u32), or -1
    int scales_h = -1;         // IQ4_XS: offset of the u16 of scale high bits, or -1
    int scales_l = -1;         // IQ4_XS: offset of the bytes of scale low nibbles, or -1
    int code_offset = 0;       // value = code − code_offset (0 for table types)
    bool iq4nl_table = false;  // value = iq4nl_value(code)
};

// The layout of block type B, for the families that have one: specialized in B's header as
//   template <> struct block_layout<B> { static constexpr nibble32_layout value = {...}; };
template <class B>
struct block_layout;

namespace detail {
// Stores the low four bits of 32 levels as a nibble32 slice holds them: level e < 16 in the low
// nibble of qs[e], level 16 + e in the high one (Q4_0, Q4_1, IQ4_NL, an IQ4_XS sub-block, and the
// low bits of Q5_0's and Q5_1's five-bit levels).
inline void pack_nibble32_levels(const uint8_t* levels, uint8_t* qs) {
    for (int j = 0; j < 16; ++j) qs[j] = uint8_t((levels[j] & 15) | ((levels[j + 16] & 15) << 4));
}
}  // namespace detail

// The fields of a block type whose GPU codecs are its own (block_family::own), for the GLSL
// offsets that tools/glsl_layouts generates (llmrt/blocks/layout/<type>.glsl: <TYPE>_OFFSET_<FIELD>
// and <TYPE>_BYTES) and the layout test: specialized in the type's header as
//   template <> struct block_fields<B> { static constexpr block_field value[] = {LLMRT_BLOCK_FIELD(B, d), ...}; };
struct block_field {
    const char* name;
    int offset;
    int bytes;
};
#define LLMRT_BLOCK_FIELD(B, member) \
    ::llmrt::block_field { #member, int(offsetof(B, member)), int(sizeof(B::member)) }
template <class B>
struct block_fields;

template <class B>
concept has_block_fields = requires { block_fields<B>::value; };

// True for a block type of the nibble32 family with its layout given.
template <class B>
concept nibble32_block = B::family == block_family::nibble32 && requires {
    { block_layout<B>::value } -> std::convertible_to<nibble32_layout>;
};

}  // namespace llmrt
