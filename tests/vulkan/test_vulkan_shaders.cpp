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

// The C++ side of each own-codec block, field by field: the header's block_fields, which the
// generated GLSL offsets come from too; the buffer-reference struct of the GLSL include is written by
// hand, and this holds it to them. A weight type without block_fields or a family layout does not
// compile (tools/glsl_layouts).
template <class B>
std::vector<field> cpp_fields() {
    std::vector<field> fields;
    if constexpr (llmrt::has_block_fields<B>)
        for (const llmrt::block_field& f : llmrt::block_fields<B>::value)
            fields.push_back({f.name, std::size_t(f.offset), std::size_t(f.bytes)});
    return fields;
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
