// libFuzzer entry point for the GGUF reader (built with clang++ -fsanitize=fuzzer,address,undefined).
//
// For any input the reader either raises llmrt::error or returns a file whose tensors lie inside
// the input, each of a type ggml defines, sized by ggml's table; a tensor of a type llmrt cannot
// decode is listed, and only its type() raises (unsupported_type). A file it accepts must also
// survive a round trip: written again by llmrt's writer and read back, it must give the same bytes
// when written once more.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "llmrt/gguf/gguf.hpp"

namespace {

std::vector<std::byte> rewrite(const llmrt::gguf::file& f) {
    llmrt::gguf::writer w;
    for (const auto& [key, v] : f.metadata()) w.set(key, v);
    for (const auto& t : f.tensors())
        w.add_tensor_view(t.name, llmrt::qtype(t.type_id), std::span(t.ne).first(t.n_dims), t.bytes());
    return w.to_bytes();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
    try {
        const auto f = llmrt::gguf::file::view(input, "fuzz input");
        unsigned sum = 0;
        for (const auto& t : f.tensors()) {
            if (t.data < input.data() || t.size > size || t.data - input.data() > std::ptrdiff_t(size - t.size))
                __builtin_trap();
            for (std::byte b : t.bytes()) sum += unsigned(b);  // AddressSanitizer checks every byte
            const llmrt::gguf::ggml_type_info* type = llmrt::gguf::find_ggml_type(t.type_id);
            if (type == nullptr || t.ne[0] % type->block_size != 0 ||
                t.size != uint64_t(t.elements() / type->block_size) * type->type_size)
                __builtin_trap();
            try {
                if (t.type() != llmrt::qtype(t.type_id) || !t.decodable()) __builtin_trap();
            } catch (const llmrt::error& e) {
                if (t.decodable() || e.code() != llmrt::errc::unsupported_type) __builtin_trap();
            }
        }
        // A valid file may ask for any power-of-two alignment; writing it again pads to that, so
        // the round trip is left to files whose padding fits in the fuzzer's memory limit.
        if (f.alignment() > (1u << 16)) return 0;
        std::vector<std::byte> once, twice;
        try {
            once = rewrite(f);
            twice = rewrite(llmrt::gguf::file::view(once, "rewritten fuzz input"));
        } catch (const llmrt::error&) {
            __builtin_trap();  // the writer refused, or the reader rejected the writer's output
        }
        if (once != twice) __builtin_trap();
        return int(sum & 0);
    } catch (const llmrt::error&) {
        return 0;
    }
}
