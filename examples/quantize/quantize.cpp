// llmrt-quantize: a float GGUF model (f32, f16 or bf16 matrices) quantized with llmrt's own
// quantizers, which are byte-identical to ggml's reference ones (what llama-quantize writes
// without an importance matrix). The policy is model/quantize_file.hpp's.
//
//   llmrt-quantize IN.gguf OUT.gguf --type q4_K [--output-type q6_K] [--keep-f32 PATTERN ...]
//
// --output-type: token_embd.weight and output.weight (default: --type). --keep-f32 PATTERN (a
// regex searched in the tensor name; may be given again): those tensors are stored as f32.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/quantize_file.hpp>

#include "../generate/arguments.hpp"

int main(int argc, char** argv) {
    try {
        using namespace llmrt;
        std::vector<std::string> paths;
        model::quantize_options o;
        bool has_type = false;
        for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
            const std::string& opt = cl.option();
            if (opt == "--type") o.type = qtype_from_name(cl.value()), has_type = true;
            else if (opt == "--output-type") o.output_type = qtype_from_name(cl.value());
            else if (opt == "--keep-f32") o.keep_f32.push_back(cl.value());
            else if (opt == "-h" || opt == "--help") {
                std::puts("usage: llmrt-quantize IN.gguf OUT.gguf --type T [--output-type T] [--keep-f32 PATTERN ...]\n"
                          "Quantizes every f32/f16/bf16 matrix of IN to T (token_embd.weight and output.weight to\n"
                          "--output-type if given; tensors whose name matches a --keep-f32 regex to f32); norms,\n"
                          "biases and MoE routers stay as they are. T: q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K,\n"
                          "q4_K, q5_K, q6_K, iq4_nl, iq4_xs, mxfp4, f16, bf16, f32.");
                return 0;
            } else if (!opt.empty() && opt[0] != '-' && paths.size() < 2) paths.push_back(opt);
            else cl.reject();
        }
        if (paths.size() != 2) llmrt_examples::bad_argument("needs an input and an output file (IN.gguf OUT.gguf)");
        if (!has_type) llmrt_examples::bad_argument("needs --type (q8_0, q4_K, ...)");
        const gguf::file in = gguf::file::open(paths[0]);
        const model::quantize_result r = model::quantize_file(in, o);
        for (const std::string& note : r.notes) std::printf("note: %s\n", note.c_str());
        r.writer.write(paths[1]);
        std::size_t before = 0, after = 0;
        for (const auto& t : in.tensors()) before += t.size;
        for (const auto& t : r.writer.tensors()) after += t.bytes().size();
        std::printf("wrote %s: %lld tensors quantized to %s", paths[1].c_str(), static_cast<long long>(r.quantized),
                    name(o.type));
        if (o.output_type) std::printf(" (token_embd/output %s)", name(*o.output_type));
        std::printf(", %lld kept; %.1f MiB -> %.1f MiB\n", static_cast<long long>(r.kept), double(before) / 1048576.0,
                    double(after) / 1048576.0);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-quantize: %s\n", llmrt_examples::message_of(e));
        return 1;
    }
}
