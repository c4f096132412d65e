// llmrt-bench-decode: how fast does a llama model decode one token at a time, against the
// memory floor?
//
//   llmrt-bench-decode [--backend cuda|vulkan|cpu] [--model 1b|8b|both|tiny] [--tokens N] [--warmup N]
//                      [--ctx N] [--json PATH|-]
//
// Models: synthetic llama shapes in Q4_K, made in memory with model::make_random_llama.
//   1B-shaped  n_embd 2048, 16 layers, n_ff 8192, 32 heads, 8 kv heads, vocab 128256
//   8B-shaped  n_embd 4096, 32 layers, n_ff 14336, 32 heads, 8 kv heads, vocab 128256
//   tiny       n_embd 256, 2 layers, n_ff 512, 4 heads, 2 kv heads, vocab 128256 (smoke test)
// Quantizing billions of weights with the reference quantizer would take minutes, so one layer
// with a 512-row vocabulary and n_ff 256 is made by make_random_llama and its bytes are reused:
// every layer gets that layer's weights under its own name (the backend uploads each layer to
// memory of its own, so nothing is served from a cache that a real model would not hit); the
// embedding, output and feed-forward matrices repeat the seed's rows (and, along k, its Q4_K
// blocks, which are independent) up to their full shape.
//
// What is timed: the greedy decode loop at batch 1 through the graph executor, as the host
// sees it: write the token and its position, run the forward, read back the argmax id (the
// graph's `next` node), feed it back. After --warmup tokens, --tokens tokens are timed with a
// steady clock; tokens/s = tokens / seconds. The floor is the bytes of every weight one token
// reads (all matrices and norms, one embedding row) over the H100's measured 3.1 TB/s read
// bandwidth: the most tokens/s that reading the weights once per token allows. "back-to-back"
// queues --tokens forwards (same position) with one read at the end: the device's own rate.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/model/model.hpp>

#include "../../examples/generate/arguments.hpp"
#include "../../examples/generate/backend_choice.hpp"

namespace {

using namespace llmrt;

constexpr double read_bandwidth = 3.1e12;  // bytes/s, the H100's measured read-only bandwidth
constexpr int32_t vocab = 128256;
constexpr int32_t seed_vocab = 512, seed_ff = 256;

struct model_shape {
    std::string name;
    model::llama_shape shape;
};

const model_shape shape_1b{"1B-shaped",
                           {.n_vocab = vocab, .n_embd = 2048, .n_layer = 16, .n_head = 32, .n_head_kv = 8, .n_ff = 8192}};
const model_shape shape_8b{"8B-shaped",
                           {.n_vocab = vocab, .n_embd = 4096, .n_layer = 32, .n_head = 32, .n_head_kv = 8, .n_ff = 14336}};
// For the smoke test: the same vocabulary, a small body.
const model_shape shape_tiny{"tiny", {.n_vocab = vocab, .n_embd = 256, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .n_ff = 512}};

struct arguments {
    std::string backend, json;
    std::vector<model_shape> models{shape_1b, shape_8b};
    int32_t tokens = 128, warmup = 16, n_ctx = 512;
};

arguments parse(int argc, char** argv) {
    arguments a;
    for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
        const std::string& o = cl.option();
        if (o == "--backend") a.backend = cl.value();
        else if (o == "--tokens") a.tokens = cl.int_value(1, 1000000);
        else if (o == "--warmup") a.warmup = cl.int_value(1, 1000000);
        else if (o == "--ctx") a.n_ctx = cl.int_value(1, 1000000);
        else if (o == "--json") a.json = cl.value();
        else if (o == "--model") {
            const std::string m = cl.value();
            if (m == "1b") a.models = {shape_1b};
            else if (m == "8b") a.models = {shape_8b};
            else if (m == "both") a.models = {shape_1b, shape_8b};
            else if (m == "tiny") a.models = {shape_tiny};
            else throw error(errc::invalid_argument, "--model takes 1b, 8b, both or tiny, not '" + m + "'");
        } else if (o == "-h" || o == "--help") {
            std::puts("usage: llmrt-bench-decode [--backend cuda|vulkan|cpu] [--model 1b|8b|both|tiny] [--tokens N]\n"
                      "                          [--warmup N] [--ctx N] [--json PATH|-]");
            std::exit(0);
        } else {
            cl.reject();
        }
    }
    if (a.warmup + a.tokens > a.n_ctx)
        throw error(errc::invalid_argument, "--warmup + --tokens must fit the context (--ctx " + std::to_string(a.n_ctx) + ")");
    return a;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A full-size model from one quantized layer: the weights, and the host bytes they point into.
struct synthetic_model {
    std::shared_ptr<const gguf::file> seed;  // one layer, 512-row vocabulary, n_ff 256
    std::vector<std::vector<std::byte>> tiles;   // the matrices grown from the seed's
    model::llama_weights weights;
    std::size_t bytes_per_token = 0;  // weight bytes one decoded token reads
};

// A rows × k matrix in w's type from w: row r is w's row r mod w.ne1, its blocks repeated along k
// (blocks are independent, so any run of them is a valid row).
std::vector<std::byte> tiled(const model::weight_ref& w, int64_t rows, int64_t k) {
    const std::size_t block_bytes = row_size(w.type, block_size(w.type));
    const int64_t seed_blocks = w.ne0 / block_size(w.type), blocks = k / block_size(w.type);
    const std::size_t seed_row_bytes = block_bytes * std::size_t(seed_blocks), row_bytes = block_bytes * std::size_t(blocks);
    std::vector<std::byte> out(row_bytes * std::size_t(rows));
    for (int64_t r = 0; r < rows; ++r) {
        const std::byte* src = static_cast<const std::byte*>(w.data) + std::size_t(r % w.ne1) * seed_row_bytes;
        for (int64_t b = 0; b < blocks; b += seed_blocks)
            std::memcpy(out.data() + std::size_t(r) * row_bytes + std::size_t(b) * block_bytes, src,
                        block_bytes * std::size_t(std::min(seed_blocks, blocks - b)));
    }
    return out;
}

std::unique_ptr<synthetic_model> make_model(const model_shape& s, int32_t n_ctx) {
    auto m = std::make_unique<synthetic_model>();
    model::llama_shape seed_shape = s.shape;
    seed_shape.n_layer = 1;
    seed_shape.n_vocab = seed_vocab;
    seed_shape.n_ff = seed_ff;
    seed_shape.n_ctx = n_ctx;
    seed_shape.vocabulary = false;
    m->seed = std::make_shared<const gguf::file>(
        gguf::file::from_bytes(model::make_random_llama(seed_shape, qtype::q4_K, /*seed=*/1).to_bytes()));
    const model::llama_weights one = model::load_llama_weights(*m->seed);

    model::llama_weights& w = m->weights;
    w.hparams = one.hparams;
    w.hparams.n_layer = s.shape.n_layer;
    w.hparams.n_vocab = s.shape.n_vocab;
    w.hparams.n_ff = s.shape.n_ff;
    // The matrices whose shape differs from the seed's: tiled, each kept here.
    auto grown = [&](const model::weight_ref& r, int64_t k, int64_t rows) {
        m->tiles.push_back(tiled(r, rows, k));
        model::weight_ref g = r;
        g.ne0 = k;
        g.ne1 = rows;
        g.data = m->tiles.back().data();
        return g;
    };
    w.token_embd = grown(one.token_embd, s.shape.n_embd, s.shape.n_vocab);
    w.output = grown(one.output, s.shape.n_embd, s.shape.n_vocab);
    w.output_norm = one.output_norm;
    const model::weight_ref gate = grown(one.layers[0].ffn_gate, s.shape.n_embd, s.shape.n_ff);
    const model::weight_ref up = grown(one.layers[0].ffn_up, s.shape.n_embd, s.shape.n_ff);
    const model::weight_ref down = grown(one.layers[0].ffn_down, s.shape.n_ff, s.shape.n_embd);
    auto bytes = [](const model::weight_ref& r) { return row_size(r.type, r.ne0) * std::size_t(r.ne1); };
    m->bytes_per_token = bytes(w.output) + bytes(w.output_norm) + row_size(w.token_embd.type, w.token_embd.ne0);
    for (int32_t l = 0; l < s.shape.n_layer; ++l) {
        model::llama_layer_weights lw = one.layers[0];
        lw.ffn_gate = gate;
        lw.ffn_up = up;
        lw.ffn_down = down;
        const std::string p = "blk." + std::to_string(l) + ".";
        for (model::weight_ref* r : {&lw.attn_norm, &lw.attn_q, &lw.attn_k, &lw.attn_v, &lw.attn_output, &lw.ffn_norm,
                                     &lw.ffn_gate, &lw.ffn_up, &lw.ffn_down}) {
            r->name = p + r->name.substr(r->name.find('.', 4) + 1);
            m->bytes_per_token += bytes(*r);
        }
        w.layers.push_back(std::move(lw));
    }
    return m;
}

struct result {
    std::string model;
    int32_t n_embd = 0, n_layer = 0, n_ff = 0;
    std::size_t weight_bytes = 0;
    double floor_tokens_per_s = 0, tokens_per_s = 0, ms_per_token = 0, prepare_s = 0;
    double replay_tokens_per_s = 0;  // forwards queued back to back, one read at the end
};

template <class Backend>
result decode(Backend& backend, const model_shape& s, const synthetic_model& m, const arguments& a) {
    const auto t0 = std::chrono::steady_clock::now();
    const model::llama_graph built = model::build_llama_graph(m.weights, a.n_ctx, 1, qtype::f16);
    graph::executor<Backend> ex(backend, built.g);
    result r;
    r.prepare_s = seconds_since(t0);
    int32_t token = 1, pos = 0;
    auto step = [&] {
        ex.write(built.tokens, std::span<const int32_t>(&token, 1));
        ex.write(built.positions, std::span<const int32_t>(&pos, 1));
        ex.run(1);
        ex.read(built.next, std::span<int32_t>(&token, 1));
        ++pos;
    };
    for (int32_t i = 0; i < a.warmup; ++i) step();
    const auto start = std::chrono::steady_clock::now();
    for (int32_t i = 0; i < a.tokens; ++i) step();
    const double seconds = seconds_since(start);
    // The same forward queued --tokens times without a read in between (the same position each
    // time): what the device sustains without the host's round trip per token.
    const auto replay_start = std::chrono::steady_clock::now();
    ex.write(built.positions, std::span<const int32_t>(&pos, 1));
    for (int32_t i = 0; i < a.tokens; ++i) ex.run(1);
    ex.read(built.next, std::span<int32_t>(&token, 1));
    r.replay_tokens_per_s = a.tokens / seconds_since(replay_start);
    r.model = s.name;
    r.n_embd = s.shape.n_embd;
    r.n_layer = s.shape.n_layer;
    r.n_ff = s.shape.n_ff;
    r.weight_bytes = m.bytes_per_token;
    r.floor_tokens_per_s = read_bandwidth / double(m.bytes_per_token);
    r.tokens_per_s = a.tokens / seconds;
    r.ms_per_token = seconds * 1e3 / a.tokens;
    return r;
}

void print(const std::vector<result>& results, const std::string& backend, const arguments& a) {
    std::printf("\nllmrt-bench-decode: greedy decoding at batch 1, Q4_K weights, f16 KV cache, %d tokens timed after %d\n",
                a.tokens, a.warmup);
    std::printf("backend: %s\n\n", backend.c_str());
    std::printf("| model | n_embd | layers | n_ff | weight MB/token | floor tokens/s (3.1 TB/s) | tokens/s | ms/token | of floor "
                "| back-to-back tokens/s |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& r : results)
        std::printf("| %s | %d | %d | %d | %.1f | %.0f | %.1f | %.3f | %.1f%% | %.1f |\n", r.model.c_str(), r.n_embd,
                    r.n_layer, r.n_ff, double(r.weight_bytes) / 1e6, r.floor_tokens_per_s, r.tokens_per_s, r.ms_per_token,
                    100.0 * r.tokens_per_s / r.floor_tokens_per_s, r.replay_tokens_per_s);
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

void write_json(const std::vector<result>& results, const std::string& backend, const arguments& a) {
    std::string j = "{\n  \"bench\": \"decode\",\n  \"backend\": \"" + json_escape(backend) + "\",\n  \"weight_type\": \"q4_K\",\n"
                    "  \"kv_type\": \"f16\",\n  \"batch\": 1,\n  \"tokens\": " + std::to_string(a.tokens) +
                    ",\n  \"warmup\": " + std::to_string(a.warmup) + ",\n  \"read_bandwidth_bytes_per_s\": 3.1e12,\n"
                    "  \"results\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "%s\n    {\"model\": \"%s\", \"n_embd\": %d, \"n_layer\": %d, \"n_ff\": %d, \"n_vocab\": %d, "
                      "\"weight_bytes_per_token\": %zu, \"floor_tokens_per_s\": %.1f, \"tokens_per_s\": %.2f, "
                      "\"ms_per_token\": %.4f, \"fraction_of_floor\": %.4f, \"back_to_back_tokens_per_s\": %.2f, "
                      "\"prepare_s\": %.2f}",
                      i ? "," : "", r.model.c_str(), r.n_embd, r.n_layer, r.n_ff, vocab, r.weight_bytes,
                      r.floor_tokens_per_s, r.tokens_per_s, r.ms_per_token, r.tokens_per_s / r.floor_tokens_per_s,
                      r.replay_tokens_per_s, r.prepare_s);
        j += buf;
    }
    j += "\n  ]\n}\n";
    if (a.json == "-") {
        std::fputs(j.c_str(), stdout);
        return;
    }
    FILE* f = std::fopen(a.json.c_str(), "w");
    if (!f) throw error(errc::io_error, "cannot write " + a.json);
    std::fputs(j.c_str(), f);
    std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const arguments a = parse(argc, argv);
        // Every model's seed layer is quantized at once, one thread each.
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::future<std::unique_ptr<synthetic_model>>> pending;
        for (const auto& s : a.models) pending.push_back(std::async(std::launch::async, make_model, s, a.n_ctx));
        std::vector<std::unique_ptr<synthetic_model>> models;
        for (auto& p : pending) models.push_back(p.get());
        std::printf("made %zu synthetic model(s) in %.1f s\n", models.size(), seconds_since(t0));

        const std::string spec = a.backend.empty() ? llmrt_examples::backends_by_preference().front() : a.backend;
        std::vector<result> results;
        std::string description;
        llmrt_examples::with_backend(spec, [&](auto& b, const std::string& d) {
            description = d;
            for (std::size_t i = 0; i < models.size(); ++i) {
                results.push_back(decode(b, a.models[i], *models[i], a));
                std::printf("%s: %.1f tokens/s (prepared in %.1f s)\n", a.models[i].name.c_str(),
                            results.back().tokens_per_s, results.back().prepare_s);
            }
        });
        print(results, description, a);
        if (!a.json.empty()) write_json(results, description, a);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-bench-decode: %s\n", e.what());
        return 1;
    }
}
