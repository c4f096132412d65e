// The shaders the build embeds follow the C++ type list, and each GLSL block layout is the C++
// struct's: same field names, offsets and sizes, same block size. Needs no device.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "llmrt/quant/types.hpp"
#include "llmrt/vulkan/shaders.hpp"
#include "spirv_reflect.hpp"
#include "vulkan_layout_probes.hpp"  // generated: one layout_probe_<type> per weight type

namespace {

struct field {
    std::string name;
    std::size_t offset;
    std::size_t size;
};

#define LLMRT_FIELD(B, member) field{#member, offsetof(B, member), sizeof(B::member)}

// The C++ side of each block, field by field. A weight type added to the list without its line
// here does not compile.
template <class B>
std::vector<field> cpp_fields() {
    static_assert(llmrt::nibble32_block<B>,  // the family types' GLSL layouts are generated
                  "test_vulkan_shaders: list the fields of this weight type in cpp_fields<B>()");
    return {};
}
template <> std::vector<field> cpp_fields<llmrt::q8_0>() {
    using llmrt::q8_0;
    return {LLMRT_FIELD(q8_0, d), LLMRT_FIELD(q8_0, qs)};
}
template <> std::vector<field> cpp_fields<llmrt::q2_K>() {
    using llmrt::q2_K;
    return {LLMRT_FIELD(q2_K, scales), LLMRT_FIELD(q2_K, qs), LLMRT_FIELD(q2_K, d), LLMRT_FIELD(q2_K, dmin)};
}
template <> std::vector<field> cpp_fields<llmrt::q3_K>() {
    using llmrt::q3_K;
    return {LLMRT_FIELD(q3_K, hmask), LLMRT_FIELD(q3_K, qs), LLMRT_FIELD(q3_K, scales), LLMRT_FIELD(q3_K, d)};
}
template <> std::vector<field> cpp_fields<llmrt::q4_K>() {
    using llmrt::q4_K;
    return {LLMRT_FIELD(q4_K, d), LLMRT_FIELD(q4_K, dmin), LLMRT_FIELD(q4_K, scales), LLMRT_FIELD(q4_K, qs)};
}
template <> std::vector<field> cpp_fields<llmrt::q5_K>() {
    using llmrt::q5_K;
    return {LLMRT_FIELD(q5_K, d), LLMRT_FIELD(q5_K, dmin), LLMRT_FIELD(q5_K, scales), LLMRT_FIELD(q5_K, qh),
            LLMRT_FIELD(q5_K, qs)};
}
template <> std::vector<field> cpp_fields<llmrt::q6_K>() {
    using llmrt::q6_K;
    return {LLMRT_FIELD(q6_K, ql), LLMRT_FIELD(q6_K, qh), LLMRT_FIELD(q6_K, scales), LLMRT_FIELD(q6_K, d)};
}
template <> std::vector<field> cpp_fields<llmrt::mxfp4>() {
    using llmrt::mxfp4;
    return {LLMRT_FIELD(mxfp4, e), LLMRT_FIELD(mxfp4, qs)};
}

const llmrt::vulkan::spirv_blob* find_probe(const std::string& name) {
    for (const auto& blob : llmrt::spirv_index::test_vulkan_shaders_spirv)
        if (blob.name == name) return &blob;
    return nullptr;
}

}  // namespace

TEST_CASE("every weight type has mmvq and mmvq_id SPIR-V embedded") {
    llmrt::weight_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        for (const std::string variant : {"mmvq_", "mmvq_id_"}) {
            const std::string name = variant + B::name;
            CAPTURE(name);
            const llmrt::vulkan::spirv_blob* blob = llmrt::vulkan::find_shader(name);
            REQUIRE_MESSAGE(blob != nullptr, "no SPIR-V for " << name << ": write shaders/include/llmrt/blocks/"
                                                               << B::name << ".glsl");
            CHECK(blob->words.size() > 5);
            CHECK(blob->words[0] == 0x07230203u);  // the SPIR-V magic number
        }
    });
    CHECK(llmrt::vulkan::find_shader("quantize_q8_1") != nullptr);
}

TEST_CASE("an unknown shader name is an llmrt::error naming it") {
    CHECK(llmrt::vulkan::find_shader("mmvq_q9_K") == nullptr);
    CHECK_THROWS_WITH_AS(llmrt::vulkan::shader("mmvq_q9_K"), doctest::Contains("mmvq_q9_K"), llmrt::error);
}

TEST_CASE("each hand-written GLSL block layout matches its C++ struct field for field") {
    llmrt::weight_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        CAPTURE(B::name);
        // A family type's GLSL layout is generated from its C++ layout (tools/glsl_layouts): no drift.
        if constexpr (llmrt::nibble32_block<B>) return;
        const llmrt::vulkan::spirv_blob* probe = find_probe(std::string("layout_probe_") + B::name);
        REQUIRE_MESSAGE(probe != nullptr, "no layout probe for " << B::name);
        const llmrt::testing::spirv::module module(probe->words);

        const std::vector<llmrt::testing::spirv::member> glsl = module.struct_members(std::string("block_") + B::name);
        const std::vector<field> cpp = cpp_fields<B>();
        REQUIRE_MESSAGE(glsl.size() == cpp.size(), "GLSL block_" << B::name << " has " << glsl.size()
                                                                 << " members, the C++ struct " << cpp.size());
        std::size_t end = 0;
        for (std::size_t i = 0; i < cpp.size(); ++i) {
            CAPTURE(cpp[i].name);
            CHECK(glsl[i].name == cpp[i].name);
            CHECK(glsl[i].offset == cpp[i].offset);
            CHECK(glsl[i].size == cpp[i].size);
            end = std::max<std::size_t>(end, glsl[i].offset + glsl[i].size);
        }
        CHECK(end == sizeof(B));
        CHECK(module.spec_constant("block_bytes") == uint32_t(sizeof(B)));
        CHECK(module.spec_constant("block_values") == uint32_t(B::block_size));
    });
}
