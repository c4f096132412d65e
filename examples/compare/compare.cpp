// llmrt-compare: runs one llama graph on two backends and prints every node's NMSE, so that the
// op where they part ways stands out.
//
//   llmrt-compare [MODEL.gguf] [--a NAME] [--b NAME] [--prompt IDS] [--threshold X] [--type T]
//
// --a is the reference (default cpu: Q8_1-rounded activations, what the GPU kernels compute), --b
// the one under test (default: the best backend present, CUDA then a GPU Vulkan device, else
// cpu:f32, float activations). With
// no model, a small random llama is made in memory (--type picks its weights, q4_K by default).
// Both run the prompt as one batch on graphs planned without memory reuse, so every node's result
// is still there to read; the table lists nodes in execution order.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/graph/compare.hpp>
#include <llmrt/model/model.hpp>

#include "../generate/arguments.hpp"
#include "../generate/backend_choice.hpp"

namespace {

struct arguments {
    std::string model_path, a = "cpu", b;  // b empty: the best backend present
    std::vector<int32_t> prompt{1, 259, 260, 261, 300, 17};
    double threshold = 1e-3;
    llmrt::qtype type = llmrt::qtype::q4_K;
};

arguments parse(int argc, char** argv) {
    arguments a;
    for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
        const std::string& o = cl.option();
        if (o == "--a") a.a = cl.value();
        else if (o == "--b") a.b = cl.value();
        else if (o == "--threshold") a.threshold = cl.number_value();
        else if (o == "--type") a.type = llmrt::qtype_from_name(cl.value());
        else if (o == "--prompt") a.prompt = llmrt_examples::to_ids(cl.value());
        else if (o == "-h" || o == "--help") {
            std::printf("usage: llmrt-compare [MODEL.gguf] [--a NAME] [--b NAME] [--prompt IDS] [--threshold X] [--type T]\n"
                      "backends in this build: %s (cpu variants: cpu:q8_1, cpu:f32, cpu:ggml)\n",
                      llmrt_examples::joined(llmrt_examples::backends_by_preference()).c_str());
            std::exit(0);
        } else if (!o.empty() && o[0] != '-' && a.model_path.empty()) a.model_path = o;
        else cl.reject();
    }
    if (a.b.empty()) {
        const std::string best = llmrt_examples::backends_by_preference().front();
        a.b = best == "cpu" ? "cpu:f32" : best;
    }
    return a;
}

std::string shape_text(const llmrt::graph::node_difference& d) {
    return std::to_string(d.ne0) + " x " + std::to_string(d.ne1);
}

template <class A, class B>
int compare(A& backend_a, const std::string& name_a, B& backend_b, const std::string& name_b,
            const llmrt::model::llama_weights& w, const arguments& args) {
    using namespace llmrt;
    const auto n = int32_t(args.prompt.size());
    const model::llama_graph built = model::build_llama_graph(w, std::max(n, 1), std::max(n, 1));
    graph::executor<A> ea(backend_a, built.g, {.reuse_memory = false});
    graph::executor<B> eb(backend_b, built.g, {.reuse_memory = false});
    std::vector<int32_t> positions(args.prompt.size());
    for (int32_t i = 0; i < n; ++i) positions[std::size_t(i)] = i;
    ea.write(built.tokens, std::span<const int32_t>(args.prompt));
    eb.write(built.tokens, std::span<const int32_t>(args.prompt));
    ea.write(built.positions, std::span<const int32_t>(positions));
    eb.write(built.positions, std::span<const int32_t>(positions));
    ea.run(n);
    eb.run(n);

    std::printf("a (reference): %s\nb:             %s\n%d tokens, nmse = sum (b - a)^2 / sum a^2 per node\n\n",
                name_a.c_str(), name_b.c_str(), n);
    std::printf("%-24s %-10s %-12s %12s %12s\n", "node", "op", "shape", "nmse", "max |b - a|");
    bool flagged = false;
    for (const auto& d : graph::compare_nodes(ea, eb, n)) {
        if (d.op == graph::op::input || d.op == graph::op::state) continue;  // set_rows rows show the caches
        const bool ints = d.type == graph::i32_type;
        const bool over = ints ? d.mismatch > 0.0 : d.nmse > args.threshold;
        char measure[64];
        if (ints)
            std::snprintf(measure, sizeof measure, "%11.1f%% of ids differ", 100.0 * d.mismatch);
        else
            std::snprintf(measure, sizeof measure, "%12.3e %12.3e", d.nmse, d.max_abs);
        std::printf("%-24s %-10s %-12s %s%s\n", d.name.c_str(), graph::to_string(d.op), shape_text(d).c_str(), measure,
                    over && !flagged ? "   <- first above the threshold" : "");
        flagged = flagged || over;
    }
    std::printf("\n%s\n", flagged ? "some node exceeds the threshold" : "every node is within the threshold");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        using namespace llmrt;
        const arguments args = parse(argc, argv);
        const gguf::file file = args.model_path.empty()
                                    ? gguf::file::from_bytes(model::make_random_llama({}, args.type, 1).to_bytes(),
                                                             "random llama (in memory)")
                                    : gguf::file::open(args.model_path);
        const model::llama_weights w = model::load_llama_weights(file);
        std::printf("model: %s\n", file.source().c_str());
        int status = 0;
        llmrt_examples::with_backend(args.a, [&](auto& a, const std::string& name_a) {
            llmrt_examples::with_backend(args.b, [&](auto& b, const std::string& name_b) {
                status = compare(a, name_a, b, name_b, w, args);
            });
        });
        return status;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-compare: %s\n", llmrt_examples::message_of(e));
        return 1;
    }
}
