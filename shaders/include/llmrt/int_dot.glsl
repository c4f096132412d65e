// The one integer-dot primitive of llmrt's shaders: the signed dot product of two words read as
// four int8 each, Σ_i int8(a >> 8i) · int8(b >> 8i), exact in int32.
//
// A compiler that knows GL_EXT_integer_dot_product gets dotPacked4x8EXT. glslang 12 (Debian 12)
// does not, so the SPIR-V instruction OpSDot (4450) with PackedVectorFormat4x8Bit (literal 0) is
// declared through GL_EXT_spirv_intrinsics, with its extension SPV_KHR_integer_dot_product and
// capabilities DotProductInput4x8BitPacked (6019) and DotProduct (6018). Both emit the same
// instruction; the device must enable shaderIntegerDotProduct (Vulkan 1.3).
#ifndef LLMRT_INT_DOT_GLSL
#define LLMRT_INT_DOT_GLSL

#if defined(GL_EXT_integer_dot_product)
#extension GL_EXT_integer_dot_product : require
int llmrt_dot4(uint a, uint b) { return dotPacked4x8EXT(int(a), int(b)); }
#else
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int llmrt_sdot_4x8_packed(int a, int b, spirv_literal int packed_vector_format);
int llmrt_dot4(uint a, uint b) { return llmrt_sdot_4x8_packed(int(a), int(b), 0); }
#endif

// The same with b's bytes unsigned (0..255), a's signed: OpSUDot (4452), which the same feature
// and capabilities cover. It lets a dot take bytes of up to 255 (a nibble still in the high half
// of its byte, say) where the signed form would read them as negative.
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int llmrt_sudot_4x8_packed(int a, int b, spirv_literal int packed_vector_format);
int llmrt_dot4_unsigned_b(uint a, uint b) { return llmrt_sudot_4x8_packed(int(a), int(b), 0); }

// Σ over four words of llmrt_dot4.
int llmrt_dot16(uvec4 a, uvec4 b) {
    return llmrt_dot4(a.x, b.x) + llmrt_dot4(a.y, b.y) + llmrt_dot4(a.z, b.z) + llmrt_dot4(a.w, b.w);
}

// Σ over four words of llmrt_dot4_unsigned_b (a signed, b unsigned).
int llmrt_dot16_unsigned_b(uvec4 a, uvec4 b) {
    return llmrt_dot4_unsigned_b(a.x, b.x) + llmrt_dot4_unsigned_b(a.y, b.y) + llmrt_dot4_unsigned_b(a.z, b.z) +
           llmrt_dot4_unsigned_b(a.w, b.w);
}

#endif
