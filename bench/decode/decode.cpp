// llmrt-bench-decode: how fast does a llama model decode one token at a time, against the
// memory floor, and where does the time go?
//
//   llmrt-bench-decode [--backend cuda|vulkan|cpu] [--model 1b|8b|both|tiny|FILE.gguf] [--tokens N]
//                      [--warmup N] [--depth N] [--prompt N] [--ctx N] [--unfused] [--without F,...] [--replays N]
//                      [--json PATH|-] [--gpus N] [--batches N,N,...]
//
// Models: a llama GGUF file (any weight type llmrt reads), or synthetic llama shapes in Q4_K made
// in memory with model::make_random_llama:
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
// What is timed, through the graph executor (the forward planned for batches of up to 8, f16 KV
// cache, every fusion the backend runs unless --unfused, or but those --without names, e.g.
// --without carry_swiglu,experts to measure what carrying the SwiGLU and the experts steps are worth):
//   prompt   --prompt tokens (default 512) from position 0 in batches of 8, as a prompt is
//            processed; prompt tokens/s (0: skipped). With --depth, the prompt is --depth tokens.
//   decode   greedy decoding at batch 1 after the prompt (or --depth tokens in the cache, like
//            llama-bench -d): write the token and its position, run the forward, read back the
//            argmax id (the graph's `next` node), feed it back. After --warmup tokens, --tokens
//            tokens are timed with a steady clock; tokens/s = tokens / seconds.
// --gpus N: the same model split over CUDA devices 0..N-1 (model/tensor_parallel.hpp: each rank
// its shard's graph on a backend of its own, collectives over NCCL), every forward run on all
// ranks in lockstep (comm/rank_threads.hpp); tokens/s as above, the floor still one GPU's. The
// breakdown is left out (a part of one rank's forward cannot be replayed without the others).
// The floor is the bytes of every weight one token reads (all matrices and norms, one embedding
// row) over the H100's measured 3.1 TB/s read bandwidth: the most tokens/s that reading the
// weights once per token allows.
// Breakdown (CUDA, Vulkan; each figure --replays forwards, default 20): the device time of one
// decode forward by step kind (graph/lower.hpp; the unfused op steps one op at a time: top_k,
// mul_mat_id, ...), each part's share found by telescoping: the
// forward made of the mat-vec steps alone is replayed and timed, then with the norm steps added,
// and so on; a kind's time is what adding it cost. The kinds' times add up to the whole forward's
// device time; "host" is the rest of the measured ms/token (the token's write, the launch, the id's
// read).
// --batches N,N,... (each 1..8): the same telescoped breakdown for a forward of N tokens at once (as
// a speculative verification runs them), at the position after the timed tokens, one column per N.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/model/model.hpp>

#include "../../examples/generate/arguments.hpp"
#include "../../examples/generate/backend_choice.hpp"
#include "forward.hpp"

namespace {

using namespace llmrt;

constexpr double read_bandwidth = 3.1e12;  // bytes/s, the H100's measured read-only bandwidth
constexpr int32_t vocab = 128256;
constexpr int32_t seed_vocab = 512, seed_ff = 256;

struct model_shape {
    std::string name;
    model::llama_shape shape;
    std::string path;  // a GGUF file instead of a synthetic model
};

const model_shape shape_1b{"1B-shaped",
                           {.n_vocab = vocab, .n_embd = 2048, .n_layer = 16, .n_head = 32, .n_head_kv = 8, .n_ff = 8192}, {}};
const model_shape shape_8b{"8B-shaped",
                           {.n_vocab = vocab, .n_embd = 4096, .n_layer = 32, .n_head = 32, .n_head_kv = 8, .n_ff = 14336}, {}};
// For the smoke test: the same vocabulary, a small body.
const model_shape shape_tiny{"tiny", {.n_vocab = vocab, .n_embd = 256, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .n_ff = 512}, {}};

struct arguments {
    std::string backend, json;
    std::vector<model_shape> models{shape_1b, shape_8b};
    int32_t tokens = 128, warmup = 16, n_ctx = 0, depth = 0, prompt = 512;
    int32_t replays = 20;  // forwards each breakdown figure replays
    int32_t gpus = 0;      // --gpus N: tensor parallel over CUDA devices 0..N-1 (0: one backend, --backend)
    bool unfused = false;
    graph::lower_options allow{};  // --without: the fusions switched off (graph::fusions_by_name)
    std::string without;
    std::vector<int32_t> batches;  // --batches: the breakdown at these batch sizes too
};

// --without NAME[,NAME...]: those fusions off (graph::fusions_by_name), the others as the backend runs them.
graph::lower_options fusions_without(const std::string& names) {
    graph::lower_options allow{};
    std::size_t from = 0;
    while (from <= names.size()) {
        const std::size_t comma = std::min(names.find(',', from), names.size());
        const std::string name = names.substr(from, comma - from);
        const auto* f = std::find_if(graph::fusions_by_name.begin(), graph::fusions_by_name.end(),
                                     [&](const auto& entry) { return entry.first == name; });
        if (f == graph::fusions_by_name.end()) {
            std::string known;
            for (const auto& entry : graph::fusions_by_name) known += (known.empty() ? "" : ", ") + std::string(entry.first);
            throw error(errc::invalid_argument, "--without: no fusion '" + name + "' (the fusions: " + known + ")");
        }
        allow.*(f->second) = false;
        from = comma + 1;
    }
    return allow;
}

arguments parse(int argc, char** argv) {
    arguments a;
    bool prompt_given = false;
    for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
        const std::string& o = cl.option();
        if (o == "--backend") a.backend = cl.value();
        else if (o == "--tokens") a.tokens = cl.int_value(1, 1000000);
        else if (o == "--warmup") a.warmup = cl.int_value(0, 1000000);
        else if (o == "--ctx") a.n_ctx = cl.int_value(1, 1000000);
        else if (o == "--depth") a.depth = cl.int_value(0, 1000000);
        else if (o == "--prompt") {
            a.prompt = cl.int_value(0, 1000000);
            prompt_given = true;
        } else if (o == "--unfused") a.unfused = true;
        else if (o == "--without") {
            a.without = cl.value();
            a.allow = fusions_without(a.without);
        }
        else if (o == "--replays") a.replays = cl.int_value(1, 10000);
        else if (o == "--gpus") a.gpus = cl.int_value(1, 64);
        else if (o == "--json") a.json = cl.value();
        else if (o == "--batches") {
            for (const std::string& n : llmrt_examples::to_list("--batches", cl.value()))
                a.batches.push_back(llmrt_examples::to_int("--batches", n, 1, 8));
        }
        else if (o == "--model") {
            const std::string m = cl.value();
            if (m == "1b") a.models = {shape_1b};
            else if (m == "8b") a.models = {shape_8b};
            else if (m == "both") a.models = {shape_1b, shape_8b};
            else if (m == "tiny") a.models = {shape_tiny};
            else if (m.size() > 5 && m.substr(m.size() - 5) == ".gguf") a.models = {model_shape{m, {}, m}};
            else throw error(errc::invalid_argument, "--model takes 1b, 8b, both, tiny or a FILE.gguf, not '" + m + "'");
        } else if (o == "-h" || o == "--help") {
            std::puts("usage: llmrt-bench-decode [--backend cuda|vulkan|cpu] [--model 1b|8b|both|tiny|FILE.gguf] [--tokens N]\n"
                      "                          [--warmup N] [--depth N] [--prompt N] [--ctx N] [--unfused] [--replays N]\n"
                      "                          [--json PATH|-] [--gpus N] [--without FUSION[,FUSION...]] [--batches N,N,...]\n"
                      "--batches  the per-kind breakdown also for forwards of N tokens at once (N: 1..8)\n"
                      "--without  those fusions of the lowering off (graph::fusions_by_name: carry_swiglu, experts, ...)\n"
                      "--gpus N  tensor parallel over CUDA devices 0..N-1 (one rank each, collectives over NCCL; needs a\n"
                      "          build with CUDA and NCCL; --backend cuda or none); no per-kind breakdown");
            std::exit(0);
        } else {
            cl.reject();
        }
    }
    if (a.depth > 0) {
        if (prompt_given && a.prompt != a.depth)
            throw error(errc::invalid_argument, "--depth N fills the cache with an N-token prompt; give --prompt N or neither");
        a.prompt = a.depth;
    }
    int32_t widest = 1;  // the breakdown's forwards: one token, or the widest of --batches
    for (int32_t n : a.batches) widest = std::max(widest, n);
    const int32_t need = a.prompt + a.warmup + a.tokens + widest;
    if (a.n_ctx == 0) a.n_ctx = need;
    if (need > a.n_ctx)
        throw error(errc::invalid_argument, "--prompt (or --depth) + --warmup + --tokens = " + std::to_string(need) +
                                                " must fit the context (--ctx " + std::to_string(a.n_ctx) +
                                                ") with room for the breakdown's widest forward (" + std::to_string(widest) + ")");
    return a;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A model to decode: its weights, and the host bytes they point into.
struct bench_model {
    std::shared_ptr<const gguf::file> file;  // the GGUF file, or the synthetic seed (one layer)
    std::vector<std::vector<std::byte>> tiles;  // synthetic: the matrices grown from the seed's
    model::llama_weights weights;
    std::size_t bytes_per_token = 0;  // weight bytes one decoded token reads
    std::string weight_type;
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

std::size_t matrix_bytes(const model::weight_ref& r) { return row_size(r.type, r.ne0) * std::size_t(r.ne1); }

// Every matrix and norm once, and one row of the embedding. Of a mixture-of-experts layer, the
// router and only the experts a token uses: expert_used_count of expert_count matrices of each
// expert tensor (the rest are never read for that token).
std::size_t bytes_per_token(const model::llama_weights& w) {
    std::size_t b = matrix_bytes(w.output) + matrix_bytes(w.output_norm) + row_size(w.token_embd.type, w.token_embd.ne0);
    for (const auto& lw : w.layers) {
        for (const model::weight_ref* r : {&lw.attn_norm, &lw.attn_q, &lw.attn_k, &lw.attn_v, &lw.attn_output, &lw.ffn_norm,
                                           &lw.ffn_gate, &lw.ffn_up, &lw.ffn_down, &lw.attn_q_bias, &lw.attn_k_bias,
                                           &lw.attn_v_bias, &lw.attn_q_norm, &lw.attn_k_norm, &lw.ffn_gate_inp})
            if (r->data) b += matrix_bytes(*r);
        for (const model::weight_ref* r : {&lw.ffn_gate_exps, &lw.ffn_up_exps, &lw.ffn_down_exps})
            if (r->data) b += matrix_bytes(*r) / std::size_t(w.hparams.n_expert) * std::size_t(w.hparams.n_expert_used);
    }
    return b;
}

std::string weight_types(const model::llama_weights& w) {
    std::vector<std::string> names;
    auto add = [&](const model::weight_ref& r) {
        const std::string n = name(r.type);
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    };
    for (const auto& lw : w.layers)
        for (const model::weight_ref* r : {&lw.attn_q, &lw.attn_k, &lw.attn_v, &lw.attn_output, &lw.ffn_gate, &lw.ffn_up,
                                           &lw.ffn_down, &lw.ffn_gate_exps, &lw.ffn_up_exps, &lw.ffn_down_exps})
            if (r->data) add(*r);
    add(w.output);
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : "+") + n;
    return out;
}

std::unique_ptr<bench_model> make_model(const model_shape& s, int32_t n_ctx) {
    auto m = std::make_unique<bench_model>();
    if (!s.path.empty()) {
        m->file = std::make_shared<const gguf::file>(gguf::file::open(s.path));
        m->weights = model::load_llama_weights(*m->file);
    } else {
        model::llama_shape seed_shape = s.shape;
        seed_shape.n_layer = 1;
        seed_shape.n_vocab = seed_vocab;
        seed_shape.n_ff = seed_ff;
        seed_shape.n_ctx = n_ctx;
        seed_shape.vocabulary = false;
        m->file = std::make_shared<const gguf::file>(
            gguf::file::from_bytes(model::make_random_llama(seed_shape, qtype::q4_K, /*seed=*/1).to_bytes()));
        const model::llama_weights one = model::load_llama_weights(*m->file);
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
        for (int32_t l = 0; l < s.shape.n_layer; ++l) {
            model::llama_layer_weights lw = one.layers[0];
            lw.ffn_gate = gate;
            lw.ffn_up = up;
            lw.ffn_down = down;
            const std::string p = "blk." + std::to_string(l) + ".";
            for (model::weight_ref* r : {&lw.attn_norm, &lw.attn_q, &lw.attn_k, &lw.attn_v, &lw.attn_output, &lw.ffn_norm,
                                         &lw.ffn_gate, &lw.ffn_up, &lw.ffn_down})
                r->name = p + r->name.substr(r->name.find('.', 4) + 1);
            w.layers.push_back(std::move(lw));
        }
    }
    m->bytes_per_token = bytes_per_token(m->weights);
    m->weight_type = weight_types(m->weights);
    return m;
}

struct kind_time {
    std::string kind;
    double ms = 0;     // what adding the kind's steps cost (telescoped)
    double alone = 0;  // the kind's steps replayed on their own
};

struct result {
    std::string model, weight_type;
    int32_t n_embd = 0, n_layer = 0, n_ff = 0, n_vocab = 0, depth = 0, prompt = 0;
    std::size_t weight_bytes = 0, steps = 0;
    double floor_tokens_per_s = 0, tokens_per_s = 0, ms_per_token = 0, prepare_s = 0;
    double prompt_tokens_per_s = 0;
    double first_half_tokens_per_s = 0, second_half_tokens_per_s = 0;  // of the timed tokens
    double device_ms = 0;  // the whole decode forward's device time (CUDA)
    double launch_read_ms = 0, back_to_back_ms = 0;  // per token: no writes; queued with one read
    double isolated_ms = 0;  // device time of a forward launched on an idle device (CUDA)
    std::vector<kind_time> breakdown;
    std::vector<std::pair<int32_t, std::vector<kind_time>>> batch_breakdowns;  // --batches: N, its parts
};

// The step kinds in the order the breakdown adds them.
const std::vector<graph::step_kind> breakdown_order{graph::step_kind::matvec, graph::step_kind::norm,
                                                    graph::step_kind::rope_cache, graph::step_kind::attention,
                                                    graph::step_kind::swiglu, graph::step_kind::experts,
                                                    graph::step_kind::op};

[[maybe_unused]] const char* kind_label(graph::step_kind k) {
    switch (k) {
        case graph::step_kind::matvec: return "mat-vec (mmvq, with the steps it carries)";
        case graph::step_kind::norm: return "add + rms_norm + records";
        case graph::step_kind::rope_cache: return "rope + KV cache write";
        case graph::step_kind::attention: return "attention";
        case graph::step_kind::swiglu: return "swiglu + records";
        case graph::step_kind::experts: return "experts (mmvq_id: gate and up with the swiglu, down with the weighted sum)";
        case graph::step_kind::op: return "other ops (embedding, argmax, unfused)";
    }
    return "?";
}

// Forward: forward.hpp's single_forward or tensor_parallel_forward.
template <class Forward>
result decode(Forward& fw, double prepare_s, const model_shape& s, const bench_model& m, const arguments& a) {
    const int32_t batch = Forward::batch;
    result r;
    r.prepare_s = prepare_s;
    r.steps = fw.steps();
    const int32_t n_vocab = m.weights.hparams.n_vocab;
    int32_t token = 1, pos = 0;
    std::vector<int32_t> next(batch);
    // The prompt: ids spread over the vocabulary, in batches of 8.
    if (a.prompt > 0) {
        std::vector<int32_t> ids(batch), positions(batch);
        const auto start = std::chrono::steady_clock::now();
        while (pos < a.prompt) {
            const int32_t n = std::min(batch, a.prompt - pos);
            for (int32_t i = 0; i < n; ++i) {
                ids[std::size_t(i)] = int32_t((uint64_t(pos + i) * 7919u + 13u) % uint64_t(n_vocab));
                positions[std::size_t(i)] = pos + i;
            }
            const bool last = pos + n >= a.prompt;
            fw.call(ids.data(), positions.data(), n, last ? next.data() : nullptr);
            pos += n;
        }
        r.prompt_tokens_per_s = a.prompt / seconds_since(start);
        token = next[0];
    }
    auto step = [&] {
        fw.call(&token, &pos, 1, &token);
        ++pos;
    };
    for (int32_t i = 0; i < a.warmup; ++i) step();
    const auto start = std::chrono::steady_clock::now();
    double half_seconds = 0;  // the first half of the timed tokens (warm-up shows as a slower first half)
    for (int32_t i = 0; i < a.tokens; ++i) {
        if (i == a.tokens / 2) half_seconds = seconds_since(start);
        step();
    }
    const double seconds = seconds_since(start);
    r.first_half_tokens_per_s = (a.tokens / 2) / std::max(half_seconds, 1e-9);
    r.second_half_tokens_per_s = (a.tokens - a.tokens / 2) / std::max(seconds - half_seconds, 1e-9);
    // Where the host's share goes: the same forwards without the writes (launch, read the id),
    // and queued back to back with one read at the end (the same position each time).
    --pos;
    {
        const auto t1 = std::chrono::steady_clock::now();
        for (int32_t i = 0; i < a.tokens; ++i) fw.call(nullptr, nullptr, 1, &token);
        r.launch_read_ms = seconds_since(t1) * 1e3 / a.tokens;
        const auto t2 = std::chrono::steady_clock::now();
        for (int32_t i = 0; i + 1 < a.tokens; ++i) fw.call(nullptr, nullptr, 1, nullptr);
        fw.call(nullptr, nullptr, 1, &token);
        r.back_to_back_ms = seconds_since(t2) * 1e3 / a.tokens;
    }
    ++pos;
    // The breakdown replays a part of one rank's forward; with --gpus the others' collectives would
    // not meet it, so a tensor-parallel forward has none.
    if constexpr (requires { fw.executor().program().device_ms(int64_t(1), std::function<bool(const graph::step&)>{}); }) {
        auto& ex = fw.executor();
        const model::llama_graph& built = fw.built();
        // Telescoped: the forward of the kinds so far, one more kind at a time (at the next
        // position, which the context has room for).
        ex.write(built.tokens, std::span<const int32_t>(&token, 1));
        ex.write(built.positions, std::span<const int32_t>(&pos, 1));
        // The parts: each fused kind, then the op steps one op at a time (top_k, mul_mat_id, ...),
        // in the order their first step runs.
        struct part {
            std::string label;
            graph::step_kind kind;
            graph::op op;  // op steps only
        };
        std::vector<part> parts;
        for (graph::step_kind k : breakdown_order)
            if (k != graph::step_kind::op) parts.push_back({kind_label(k), k, graph::op::input});
        for (const graph::step& st : ex.get_plan().steps) {
            if (st.kind != graph::step_kind::op || st.node < 0) continue;
            const graph::op o = built.g.nodes()[std::size_t(st.node)].op;
            if (std::none_of(parts.begin(), parts.end(),
                             [&](const part& pt) { return pt.kind == graph::step_kind::op && pt.op == o; }))
                parts.push_back({std::string("op: ") + graph::to_string(o), graph::step_kind::op, o});
        }
        auto in_part = [&](const part& pt, const graph::step& st) {
            return st.kind == pt.kind &&
                   (pt.kind != graph::step_kind::op || (st.node >= 0 && built.g.nodes()[std::size_t(st.node)].op == pt.op));
        };
        // The parts' telescoped times for a forward of n tokens (written beforehand); the last
        // entry's running sum is the whole forward's device time.
        auto telescope = [&](int64_t n, double& whole) {
            std::vector<kind_time> times;
            double before = 0;
            for (std::size_t i = 0; i < parts.size(); ++i) {
                const double ms = ex.program().device_ms(
                    n,
                    [&](const graph::step& st) {
                        for (std::size_t j = 0; j <= i; ++j)
                            if (in_part(parts[j], st)) return true;
                        return false;
                    },
                    a.replays);
                const double alone =
                    ex.program().device_ms(n, [&](const graph::step& st) { return in_part(parts[i], st); }, a.replays);
                times.push_back({parts[i].label, ms - before, alone});
                before = ms;
            }
            whole = before;
            return times;
        };
        r.breakdown = telescope(1, r.device_ms);
        for (int32_t n : a.batches) {  // n tokens at pos .. pos + n - 1, every one the same id
            const std::vector<int32_t> ids(std::size_t(n), token);
            std::vector<int32_t> positions(static_cast<std::size_t>(n));
            for (int32_t i = 0; i < n; ++i) positions[std::size_t(i)] = pos + i;
            ex.write(built.tokens, std::span<const int32_t>(ids));
            ex.write(built.positions, std::span<const int32_t>(positions));
            double whole = 0;
            std::vector<kind_time> times = telescope(n, whole);
            times.push_back({"device, all steps", whole, 0});
            r.batch_breakdowns.emplace_back(n, std::move(times));
        }
        ex.write(built.tokens, std::span<const int32_t>(&token, 1));
        ex.write(built.positions, std::span<const int32_t>(&pos, 1));
        r.isolated_ms = ex.program().device_ms(1, [](const graph::step&) { return true; }, a.replays, true);
    }
    r.model = s.name;
    r.weight_type = m.weight_type;
    const auto& h = m.weights.hparams;
    r.n_embd = h.n_embd;
    r.n_layer = h.n_layer;
    r.n_ff = h.n_ff;
    r.n_vocab = h.n_vocab;
    r.depth = a.prompt;
    r.prompt = a.prompt;
    r.weight_bytes = m.bytes_per_token;
    r.floor_tokens_per_s = read_bandwidth / double(m.bytes_per_token);
    r.tokens_per_s = a.tokens / seconds;
    r.ms_per_token = seconds * 1e3 / a.tokens;
    return r;
}

void print(const std::vector<result>& results, const std::string& backend, const arguments& a) {
    std::printf("\nllmrt-bench-decode: greedy decoding at batch 1 after a %d-token prompt, f16 KV cache, %d tokens timed "
                "after %d%s\n",
                a.prompt, a.tokens, a.warmup, a.unfused ? ", unfused" : a.without.empty() ? "" : (", without " + a.without).c_str());
    std::printf("backend: %s\n", backend.c_str());
    std::printf("gpus:    %d%s\n\n", std::max(a.gpus, 1), a.gpus > 1 ? " (tensor parallel)" : "");
    std::printf("| model | weights | layers | weight MB/token | floor tokens/s (3.1 TB/s) | prompt tokens/s | tokens/s | "
                "ms/token | of floor | steps |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& r : results)
        std::printf("| %s | %s | %d | %.1f | %.0f | %.1f | %.1f | %.3f | %.1f%% | %zu |\n", r.model.c_str(),
                    r.weight_type.c_str(), r.n_layer, double(r.weight_bytes) / 1e6, r.floor_tokens_per_s,
                    r.prompt_tokens_per_s, r.tokens_per_s, r.ms_per_token, 100.0 * r.tokens_per_s / r.floor_tokens_per_s,
                    r.steps);
    std::printf("\n");
    for (const auto& r : results)
        std::printf("%s: the first %d timed tokens at %.1f tokens/s, the next %d at %.1f (%+.1f%%)\n", r.model.c_str(),
                    a.tokens / 2, r.first_half_tokens_per_s, a.tokens - a.tokens / 2, r.second_half_tokens_per_s,
                    100.0 * (r.second_half_tokens_per_s / r.first_half_tokens_per_s - 1.0));
    for (const auto& r : results) {
        if (r.breakdown.empty()) continue;
        std::printf("\nwhere a token's %.3f ms go (%s; device time by step kind, telescoped; \"alone\": the kind's steps "
                    "replayed without the others):\n\n| part | ms/token | share | alone ms |\n|---|---|---|---|\n",
                    r.ms_per_token, r.model.c_str());
        for (const auto& k : r.breakdown)
            std::printf("| %s | %.4f | %.1f%% | %.4f |\n", k.kind.c_str(), k.ms, 100.0 * k.ms / r.ms_per_token, k.alone);
        const double host = r.ms_per_token - r.device_ms;
        std::printf("| device, all steps | %.4f | %.1f%% | |\n| host (write, launch, read back) | %.4f | %.1f%% | |\n",
                    r.device_ms, 100.0 * r.device_ms / r.ms_per_token, host, 100.0 * host / r.ms_per_token);
        std::printf("\nthe same forward without writing the token and position: %.4f ms; queued back to back: %.4f ms; "
                    "device time launched on an idle device: %.4f ms\n",
                    r.launch_read_ms, r.back_to_back_ms, r.isolated_ms);
        if (r.batch_breakdowns.empty()) continue;
        std::printf("\ndevice ms of one forward of N tokens at once (%s; telescoped by kind as above):\n\n| part |", r.model.c_str());
        for (const auto& [n, times] : r.batch_breakdowns) std::printf(" N = %d |", n);
        std::printf("\n|---|");
        for (std::size_t c = 0; c < r.batch_breakdowns.size(); ++c) std::printf("---|");
        std::printf("\n");
        for (std::size_t k = 0; k < r.batch_breakdowns.front().second.size(); ++k) {
            std::printf("| %s |", r.batch_breakdowns.front().second[k].kind.c_str());
            for (const auto& [n, times] : r.batch_breakdowns) std::printf(" %.4f |", times[k].ms);
            std::printf("\n");
        }
    }
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
    std::string j = "{\n  \"bench\": \"decode\",\n  \"backend\": \"" + json_escape(backend) + "\",\n"
                    "  \"kv_type\": \"f16\",\n  \"batch\": 1,\n  \"tokens\": " + std::to_string(a.tokens) +
                    ",\n  \"warmup\": " + std::to_string(a.warmup) + ",\n  \"prompt\": " + std::to_string(a.prompt) +
                    ",\n  \"fused\": " + (a.unfused ? "false" : "true") + ",\n  \"without\": \"" + json_escape(a.without) + "\"" +
                    ",\n  \"gpus\": " + std::to_string(std::max(a.gpus, 1)) +
                    ",\n  \"read_bandwidth_bytes_per_s\": 3.1e12,\n  \"results\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        char buf[1024];
        std::snprintf(buf, sizeof buf,
                      "%s\n    {\"model\": \"%s\", \"weight_type\": \"%s\", \"n_embd\": %d, \"n_layer\": %d, \"n_ff\": %d, "
                      "\"n_vocab\": %d, \"depth\": %d, \"weight_bytes_per_token\": %zu, \"floor_tokens_per_s\": %.1f, "
                      "\"prompt_tokens_per_s\": %.2f, \"first_half_tokens_per_s\": %.2f, \"second_half_tokens_per_s\": %.2f, \"tokens_per_s\": %.2f, \"ms_per_token\": %.4f, "
                      "\"fraction_of_floor\": %.4f, \"device_ms_per_token\": %.4f, \"launch_read_ms\": %.4f, "
                      "\"back_to_back_ms\": %.4f, \"steps\": %zu, \"prepare_s\": %.2f, "
                      "\"breakdown_ms\": {",
                      i ? "," : "", json_escape(r.model).c_str(), r.weight_type.c_str(), r.n_embd, r.n_layer, r.n_ff,
                      r.n_vocab, r.depth, r.weight_bytes, r.floor_tokens_per_s, r.prompt_tokens_per_s, r.first_half_tokens_per_s,
                      r.second_half_tokens_per_s, r.tokens_per_s,
                      r.ms_per_token, r.tokens_per_s / r.floor_tokens_per_s, r.device_ms, r.launch_read_ms, r.back_to_back_ms,
                      r.steps, r.prepare_s);
        j += buf;
        for (std::size_t k = 0; k < r.breakdown.size(); ++k) {
            std::snprintf(buf, sizeof buf, "%s\"%s\": %.4f", k ? ", " : "", r.breakdown[k].kind.c_str(), r.breakdown[k].ms);
            j += buf;
        }
        j += "}}";
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
        // Every synthetic model's seed layer is quantized at once, one thread each.
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::future<std::unique_ptr<bench_model>>> pending;
        for (const auto& s : a.models) pending.push_back(std::async(std::launch::async, make_model, s, a.n_ctx));
        std::vector<std::unique_ptr<bench_model>> models;
        for (auto& p : pending) models.push_back(p.get());
        std::printf("made or loaded %zu model(s) in %.1f s\n", models.size(), seconds_since(t0));

        std::vector<result> results;
        std::string description;
        auto report = [&](std::size_t i) {
            std::printf("%s: %.1f tokens/s (prepared in %.1f s)\n", a.models[i].name.c_str(), results.back().tokens_per_s,
                        results.back().prepare_s);
        };
        if (a.gpus != 0) {
            llmrt_examples::with_gpus(a.gpus, a.backend, [&](auto make_backend, auto cancel, const std::string& d) {
                using backend_type = typename decltype(make_backend(0))::element_type;
                description = d;
                for (std::size_t i = 0; i < models.size(); ++i) {
                    const auto t1 = std::chrono::steady_clock::now();
                    llmrt_bench::tensor_parallel_forward<backend_type> fw(a.gpus, make_backend, cancel, models[i]->weights, a.n_ctx,
                                                                          !a.unfused, a.allow);
                    results.push_back(decode(fw, seconds_since(t1), a.models[i], *models[i], a));
                    report(i);
                }
            });
        } else {
            const std::string spec = a.backend.empty() ? llmrt_examples::backends_by_preference().front() : a.backend;
            llmrt_examples::with_backend(spec, [&](auto& b, const std::string& d) {
                using backend_type = std::remove_reference_t<decltype(b)>;
                description = d;
                for (std::size_t i = 0; i < models.size(); ++i) {
                    const auto t1 = std::chrono::steady_clock::now();
                    llmrt_bench::single_forward<backend_type> fw(b, models[i]->weights, a.n_ctx, !a.unfused, a.allow);
                    results.push_back(decode(fw, seconds_since(t1), a.models[i], *models[i], a));
                    report(i);
                }
            });
        }
        print(results, description, a);
        if (!a.json.empty()) write_json(results, description, a);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-bench-decode: %s\n", e.what());
        return 1;
    }
}
