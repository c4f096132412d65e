// Just enough SPIR-V reading to hold a GLSL struct against a C++ one: struct members by name with
// their byte offsets and sizes, and specialization-constant defaults by name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"

namespace llmrt::testing::spirv {

struct member {
    std::string name;
    uint32_t offset = 0;
    uint32_t size = 0;  // bytes: scalar width, or array length · stride
};

class module {
public:
    explicit module(std::span<const uint32_t> words) {
        check(words.size() > 5 && words[0] == 0x07230203u, errc::corrupt_file, "spirv::module: not a SPIR-V module");
        for (std::size_t at = 5; at < words.size();) {
            const uint32_t count = words[at] >> 16, opcode = words[at] & 0xffffu;
            check(count > 0 && at + count <= words.size(), errc::corrupt_file, "spirv::module: truncated instruction");
            const std::span<const uint32_t> op = words.subspan(at + 1, count - 1);
            read(opcode, op);
            at += count;
        }
    }

    // The members of the struct type called `name`, in order; empty when there is none.
    std::vector<member> struct_members(const std::string& name) const {
        for (const auto& [id, type_name] : names_) {
            if (type_name != name || !structs_.count(id)) continue;
            std::vector<member> members;
            const std::vector<uint32_t>& types = structs_.at(id);
            for (uint32_t i = 0; i < types.size(); ++i) {
                member m;
                const auto key = std::make_pair(id, i);
                m.name = member_names_.count(key) ? member_names_.at(key) : "";
                m.offset = offsets_.count(key) ? offsets_.at(key) : ~0u;
                m.size = size_of(types[i]);
                members.push_back(m);
            }
            return members;
        }
        return {};
    }

    // The default value of the 32-bit specialization constant called `name`.
    std::optional<uint32_t> spec_constant(const std::string& name) const {
        for (const auto& [id, value] : spec_defaults_)
            if (names_.count(id) && names_.at(id) == name) return value;
        return std::nullopt;
    }

private:
    static std::string literal_string(std::span<const uint32_t> words) {
        std::string text;
        for (uint32_t w : words)
            for (int b = 0; b < 4; ++b) {
                const char c = char((w >> (8 * b)) & 0xff);
                if (c == 0) return text;
                text += c;
            }
        return text;
    }

    void read(uint32_t opcode, std::span<const uint32_t> op) {
        enum : uint32_t {
            op_name = 5, op_member_name = 6, op_type_int = 21, op_type_float = 22, op_type_vector = 23,
            op_type_array = 28, op_type_struct = 30, op_constant = 43, op_spec_constant = 50,
            op_decorate = 71, op_member_decorate = 72
        };
        enum : uint32_t { decoration_array_stride = 6, decoration_offset = 35 };
        switch (opcode) {
            case op_name: names_[op[0]] = literal_string(op.subspan(1)); break;
            case op_member_name: member_names_[{op[0], op[1]}] = literal_string(op.subspan(2)); break;
            case op_type_int:
            case op_type_float: scalar_bytes_[op[0]] = op[1] / 8; break;
            case op_type_vector: vectors_[op[0]] = {op[1], op[2]}; break;
            case op_type_array: arrays_[op[0]] = {op[1], op[2]}; break;
            case op_type_struct: structs_[op[0]] = std::vector<uint32_t>(op.begin() + 1, op.end()); break;
            case op_constant:
                if (op.size() >= 3) constants_[op[1]] = op[2];
                break;
            case op_spec_constant:
                if (op.size() >= 3) spec_defaults_[op[1]] = op[2];
                break;
            case op_decorate:
                if (op[1] == decoration_array_stride) strides_[op[0]] = op[2];
                break;
            case op_member_decorate:
                if (op[2] == decoration_offset) offsets_[{op[0], op[1]}] = op[3];
                break;
            default: break;
        }
    }

    uint32_t size_of(uint32_t type) const {
        if (scalar_bytes_.count(type)) return scalar_bytes_.at(type);
        if (vectors_.count(type)) return size_of(vectors_.at(type).first) * vectors_.at(type).second;
        if (arrays_.count(type)) {
            const auto [element, length_id] = arrays_.at(type);
            const uint32_t stride = strides_.count(type) ? strides_.at(type) : size_of(element);
            return constants_.count(length_id) ? constants_.at(length_id) * stride : 0;
        }
        return 0;  // structs and pointers: not needed here
    }

    std::map<uint32_t, std::string> names_;
    std::map<std::pair<uint32_t, uint32_t>, std::string> member_names_;
    std::map<uint32_t, uint32_t> scalar_bytes_;
    std::map<uint32_t, std::pair<uint32_t, uint32_t>> vectors_, arrays_;
    std::map<uint32_t, std::vector<uint32_t>> structs_;
    std::map<uint32_t, uint32_t> constants_, spec_defaults_, strides_;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> offsets_;
};

}  // namespace llmrt::testing::spirv
