// llmrt-bench-mmvq-vulkan: how close the Vulkan mat-vec comes to the memory bandwidth.
//
// For every weight type, shape (rows × k) and number of columns: the time per mmvq dispatch in
// steady state, on activations already quantized to Q8_1. One command buffer records about 20 ms
// of dispatches untimed (clocks and caches settle), then --batches batches of back-to-back
// dispatches (about --batch-us each), a timestamp before and after each batch; the time per
// dispatch is a batch's time over its dispatches, and the figure is the median over the batches.
// W rotates among copies that together exceed three times the 50 MB L2, so every dispatch reads
// W from memory; all dispatches write the same Y.
//   * chained (the headline figure): a compute-to-compute pipeline barrier between consecutive
//     dispatches, so each starts when the previous one has finished, as in a decoding step whose
//     mat-vecs depend on each other;
//   * overlapped (extra column): no barrier, consecutive dispatches may overlap.
// GB/s counts the bytes of W, of X (Q8_1: 36 bytes per 32 values) and of Y (f32) over the time;
// the fraction is of 3.1 TB/s, the read bandwidth measured on the H100. Prints a table, then JSON
// (also written to --json FILE).
//
//   llmrt-bench-mmvq-vulkan [--device NAME|INDEX] [--types q4_K,q8_0] [--shapes 4096x4096,...]
//                           [--ncols 1,2,4,8] [--batches 7] [--batch-us 2000] [--json FILE]
//                           [--passes N]  measure the whole table N times over and report, per
//                                 entry, the fastest pass and the spread (slowest / fastest)
//                           [--sweep [--quick] [--bench-shapes S]]  first try work-group shapes per
//                                 type on --shapes, print the fastest, then run the table with them on S
//                           [--probe]  per-dispatch cost of each kind of barrier, on --shapes
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/codec.hpp"
#include "llmrt/quant/types.hpp"
#include "llmrt/testing/generate.hpp"
#include "llmrt/vulkan/vulkan.hpp"

#include "../../examples/generate/arguments.hpp"

using namespace llmrt;
namespace vk_ = llmrt::vulkan;

namespace {

constexpr double peak_bytes_per_s = 3.1e12;   // measured read bandwidth of the H100 (bench/RESULTS.md)
constexpr double l2_bytes = 50e6;

struct options {
    std::string device;
    std::vector<std::string> types;
    std::vector<std::pair<int64_t, int64_t>> shapes = {{4096, 4096}, {14336, 4096}, {4096, 14336}, {128256, 4096}};
    std::vector<int64_t> ncols = {1, 2, 4, 8};
    int batches = 7;
    int passes = 1;  // --passes N: the table N times over; each entry reports its fastest pass
    double batch_us = 2000;
    std::string json;
    bool sweep = false;
    bool probe = false;  // --probe: the cost of the barrier between dispatches, then exit
    // --quick: a smaller sweep (work-groups of 4 subgroups, k split 1-2 with the default's
    // long-row split, rows 1-2)
    bool quick = false;
    std::vector<std::pair<int64_t, int64_t>> bench_shapes;  // after a sweep: the shapes of the table
};

options parse(int argc, char** argv) {
    options o;
    weight_types::for_each([&](auto tag) { o.types.push_back(decltype(tag)::type::name); });
    for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
        const std::string& a = cl.option();
        if (a == "--device") o.device = cl.value();
        else if (a == "--types") o.types = cl.list_value();
        else if (a == "--batches") o.batches = cl.int_value(3);
        else if (a == "--batch-us") o.batch_us = cl.number_value(100.0, 1e7);
        else if (a == "--json") o.json = cl.value();
        else if (a == "--sweep") o.sweep = true;
        else if (a == "--probe") o.probe = true;
        else if (a == "--quick") o.quick = true;
        else if (a == "--passes") o.passes = cl.int_value(1);
        else if (a == "--bench-shapes") o.bench_shapes = llmrt_examples::to_shapes(a, cl.value());
        else if (a == "--shapes") o.shapes = llmrt_examples::to_shapes(a, cl.value());
        else if (a == "--ncols") o.ncols = cl.int_list_value<int64_t>(1, 8);
        else {
            cl.reject("the top of bench/mmvq_vulkan/mmvq_vulkan.cpp");
        }
    }
    return o;
}

// W's bytes: 8 MiB of random blocks with sane scales, repeated (timing does not depend on values).
std::vector<uint8_t> weight_bytes(qtype t, int64_t rows, int64_t k) {
    return dispatch<weight_types>(t, "bench", [&](auto tag) {
        using B = typename decltype(tag)::type;
        const std::size_t total = std::size_t(rows) * row_size(t, k);
        const std::size_t pattern_blocks = std::min<std::size_t>(total / sizeof(B), (8u << 20) / sizeof(B));
        std::vector<uint8_t> pattern(pattern_blocks * sizeof(B));
        for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(testing::random_bits(1, 1, i) >> 56);
        for (std::size_t b = 0; b < pattern_blocks; ++b) {
            B block;
            std::memcpy(&block, pattern.data() + b * sizeof(B), sizeof(B));
            if constexpr (requires(B& x) { x.e; }) block.e = uint8_t(120 + b % 11);
            else block.d = fp32_to_fp16(0.001f + 0.009f * float(b % 97) / 97.0f);
            if constexpr (requires(B& x) { x.dmin; }) block.dmin = fp32_to_fp16(0.002f);
            std::memcpy(pattern.data() + b * sizeof(B), &block, sizeof(B));
        }
        std::vector<uint8_t> bytes(total);
        for (std::size_t at = 0; at < total; at += pattern.size())
            std::memcpy(bytes.data() + at, pattern.data(), std::min(pattern.size(), total - at));
        return bytes;
    });
}

// Steady-state nanoseconds per dispatch of record(cmd, i): about 20 ms of dispatches untimed,
// then `batches` batches of `per_batch` dispatches back to back between two timestamps (a barrier
// between consecutive dispatches when `chained`); the median over the batches of batch time /
// per_batch. The first pass, short, only estimates the time to size the second.
// How consecutive dispatches are separated.
enum class separation {
    library_barrier,  // chained: what llmrt records between dependent ops (shader write -> shader read)
    full_barrier,     // chained: shader read|write -> read|write
    execution_only,   // chained in execution, no memory dependency (not enough for real data flow)
    overlapped,       // nothing: consecutive dispatches may overlap
};

template <class Record>
double steady_ns(const vk_::context& ctx, separation sep, int batches, double batch_us, int min_per_batch,
                 Record&& record) {
    const bool chained = sep != separation::overlapped;
    auto run = [&](int warmup, int per_batch) {
        const uint32_t queries = uint32_t(2 * batches);
        vk::raii::QueryPool pool(ctx.device(), vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, queries));
        ctx.run([&](vk::CommandBuffer cmd) {
            cmd.resetQueryPool(*pool, 0, queries);
            const vk::MemoryBarrier full(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eShaderRead,
                                         vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eShaderRead);
            auto compute_barrier = [&] {
                if (sep == separation::library_barrier) vk_::detail::compute_barrier(cmd);
                else if (sep == separation::execution_only)
                    cmd.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {},
                                        {}, {}, {});
                else
                    cmd.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {},
                                        full, {}, {});
            };
            int i = 0;
            for (; i < warmup; ++i) {
                if (chained) compute_barrier();
                record(cmd, i);
            }
            for (int b = 0; b < batches; ++b) {
                compute_barrier();  // batches never overlap
                cmd.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *pool, uint32_t(2 * b));
                for (int j = 0; j < per_batch; ++j, ++i) {
                    if (chained && j > 0) compute_barrier();
                    record(cmd, i);
                }
                cmd.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *pool, uint32_t(2 * b + 1));
            }
        });
        const auto [result, stamps] =
            pool.getResults<uint64_t>(0, queries, queries * sizeof(uint64_t), sizeof(uint64_t),
                                      vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
        check(result == vk::Result::eSuccess, errc::device_error, "bench: timestamp queries not ready");
        std::vector<double> ns;
        for (int b = 0; b < batches; ++b)
            ns.push_back(double(stamps[std::size_t(2 * b + 1)] - stamps[std::size_t(2 * b)]) * ctx.info().timestamp_period_ns /
                         per_batch);
        std::sort(ns.begin(), ns.end());
        return ns[ns.size() / 2];
    };
    const double estimate = run(10, std::max(min_per_batch, 10));
    const int warmup = int(std::clamp(20e6 / std::max(estimate, 1.0), 20.0, 50000.0));
    const int per_batch = std::max(min_per_batch, int(std::clamp(batch_us * 1e3 / std::max(estimate, 1.0), 5.0, 20000.0)));
    return run(warmup, per_batch);
}

// One type and shape: W copies, X quantized once, Y.
struct setup {
    qtype type;
    int64_t rows, k, max_cols;
    std::vector<std::unique_ptr<vk_::buffer>> w;
    std::unique_ptr<vk_::buffer> x, scratch, y;
    double w_bytes;

    setup(vk_::context& ctx, vk_::mmvq& kernels, qtype t, int64_t rows_, int64_t k_, int64_t max_cols_)
        : type(t), rows(rows_), k(k_), max_cols(max_cols_) {
        const std::vector<uint8_t> bytes = weight_bytes(t, rows, k);
        w_bytes = double(bytes.size());
        const int copies = std::max(2, int(std::ceil(3 * l2_bytes / w_bytes)) + 1);
        for (int c = 0; c < copies; ++c) w.push_back(std::make_unique<vk_::buffer>(ctx, bytes.size()));
        w[0]->upload(bytes.data(), bytes.size());
        ctx.run([&](vk::CommandBuffer cmd) {
            for (int c = 1; c < copies; ++c) cmd.copyBuffer(w[0]->handle(), w[std::size_t(c)]->handle(), vk::BufferCopy(0, 0, w[0]->size()));
        });
        const std::vector<float> xs = testing::gaussian(k * max_cols, 2);
        x = std::make_unique<vk_::buffer>(ctx, xs.size() * 4);
        x->upload(xs.data(), xs.size() * 4);
        scratch = std::make_unique<vk_::buffer>(ctx, vk_::q8_1_activation_layout(k, max_cols).bytes);
        y = std::make_unique<vk_::buffer>(ctx, std::size_t(rows * max_cols) * 4);
        ctx.run([&](vk::CommandBuffer cmd) {
            kernels.record_quantize(cmd, {.k = k, .ncols = max_cols}, x->span(), scratch->span());
        });
    }

    // Steady-state ns per mmvq dispatch with ncols columns (the first ncols of the quantized X).
    double time(vk_::context& ctx, vk_::mmvq& kernels, int64_t ncols, const options& o,
                separation sep = separation::library_barrier) {
        // The scratch holds max_cols columns; ncols of them are one batch of a max_cols-wide layout
        // only when ncols == max_cols, so quantize again for the narrower case.
        ctx.run([&](vk::CommandBuffer cmd) {
            kernels.record_quantize(cmd, {.k = k, .ncols = ncols}, x->span(), scratch->span());
        });
        kernels.prepare(type, ncols);  // no pipeline is created while recording
        return steady_ns(ctx, sep, o.batches, o.batch_us, int(w.size()), [&](vk::CommandBuffer cmd, int i) {
            kernels.record_mmvq(cmd, type, {.rows = rows, .k = k, .ncols = ncols}, w[std::size_t(i) % w.size()]->span(),
                                scratch->span(), y->span());
        });
    }

    double bytes(int64_t ncols) const { return w_bytes + double(k * ncols) * 36.0 / 32.0 + double(rows * ncols) * 4.0; }
};

std::string tuning_text(const vk_::mmvq_tuning& t, int64_t ncols) {
    char text[96];
    std::snprintf(text, sizeof text, "wg%u ks%u/%u spl%u rows%u %s", t.workgroup_size, t.k_split, t.long_row_k_split,
                  t.slices_per_lane,
                  t.rows[ncols - 1], t.staged ? "staged" : ("direct u" + std::to_string(t.unroll[ncols - 1])).c_str());
    return text;
}

// The rows and unroll of a tuning for 1..8 columns, as C++ initializers (for detail::nvidia_shapes).
std::string per_column_text(const uint32_t (&v)[vk_::mmvq_max_columns]) {
    std::string text = "{";
    for (int64_t i = 0; i < vk_::mmvq_max_columns; ++i) text += (i ? ", " : "") + std::to_string(v[i]);
    return text + "}";
}

// Per type: every work-group size × k split × slices per lane × rows per team × (staged, or read
// in place with 1, 2 or 4 slices unrolled) at one column, scored by the mean fraction of peak over
// --shapes; then, with that fixed, rows (and unroll) for 2, 4 and 8 columns by the summed time.
std::map<qtype, vk_::mmvq_tuning> sweep(vk_::context& ctx, const options& o) {
    std::map<qtype, vk_::mmvq_tuning> chosen;
    std::printf("sweep: 1 column over work-group shapes (score: mean fraction of peak over the shapes), then 2..8 columns\n");
    for (const std::string& type_name : o.types) {
        const qtype t = qtype_from_name(type_name);
        vk_::mmvq kernels(ctx);
        std::vector<std::unique_ptr<setup>> setups;
        for (auto [rows, k] : o.shapes) setups.push_back(std::make_unique<setup>(ctx, kernels, t, rows, k, 8));
        const vk_::mmvq_tuning base = kernels.tuning(t);
        vk_::mmvq_tuning best = base;
        double best_score = 0;
        std::vector<vk_::mmvq_tuning> candidates;
        const uint32_t sg = base.subgroup_size;
        const std::vector<uint32_t> subgroup_counts = o.quick ? std::vector<uint32_t>{4} : std::vector<uint32_t>{2, 4, 8};
        const std::vector<uint32_t> k_splits = o.quick ? std::vector<uint32_t>{1, 2} : std::vector<uint32_t>{1, 2, 4};
        const std::vector<uint32_t> row_counts = o.quick ? std::vector<uint32_t>{1, 2} : std::vector<uint32_t>{1, 2, 4};
        for (uint32_t subgroups : subgroup_counts)
            for (uint32_t k_split : k_splits) {
                if (subgroups % k_split != 0) continue;
                for (uint32_t rows : row_counts)
                    for (int mode = 0; mode < 4; ++mode) {  // 0: staged; 1..3: direct, unroll 1, 2, 4
                        if (mode > 0 && type_size(t) % 4 != 0) continue;
                        for (uint32_t spl : {1u, 2u}) {
                            if (mode > 0 && spl > 1) continue;  // in place, spl only regroups the same loads
                            vk_::mmvq_tuning c = base;
                            c.workgroup_size = subgroups * sg;
                            c.k_split = k_split;
                            c.long_row_k_split = o.quick && subgroups % std::max(base.long_row_k_split, 1u) == 0
                                                     ? base.long_row_k_split : 0;
                            c.slices_per_lane = spl;
                            c.rows[0] = rows;
                            c.staged = mode == 0;
                            c.unroll[0] = mode == 0 ? 1u : 1u << (mode - 1);
                            candidates.push_back(c);
                        }
                    }
            }
        for (const vk_::mmvq_tuning& c : candidates) {
            try {
                kernels.set_tuning(t, c);
            } catch (const error& e) {
                std::printf("  %-6s %-28s skipped: %s\n", type_name.c_str(), tuning_text(c, 1).c_str(), e.what());
                continue;
            }
            double score = 0;
            std::string line;
            for (auto& s : setups) {
                const double ns = s->time(ctx, kernels, 1, o);
                const double fraction = s->bytes(1) / (ns * 1e-9) / peak_bytes_per_s;
                score += fraction / double(setups.size());
                char cell[48];
                std::snprintf(cell, sizeof cell, " %7.2fus %4.1f%%", ns / 1e3, 100 * fraction);
                line += cell;
            }
            std::printf("  %-6s %-28s%s  mean %4.1f%%\n", type_name.c_str(), tuning_text(c, 1).c_str(), line.c_str(), 100 * score);
            std::fflush(stdout);
            if (score > best_score) {
                best_score = score;
                best = c;
            }
        }
        kernels.set_tuning(t, best);
        // Rows (and unroll) for 2..3 columns from a trial at 2, 4..7 from 4, 8 from 8.
        for (int64_t ncols : {2, 4, 8}) {
            uint32_t best_rows = best.rows[ncols - 1], best_unroll = best.unroll[ncols - 1];
            double best_ns = 1e30;
            for (uint32_t rows : {1u, 2u, 4u, 8u})
                for (uint32_t unroll : {1u, 2u, 4u}) {
                    if ((best.staged || o.quick) && unroll > 1) continue;
                    if (o.quick && rows == 8) continue;
                    vk_::mmvq_tuning c = best;
                    c.rows[ncols - 1] = rows;
                    c.unroll[ncols - 1] = o.quick ? best.unroll[0] : unroll;
                    try {
                        kernels.set_tuning(t, c);
                    } catch (const error&) {
                        continue;
                    }
                    double ns = 0;
                    for (auto& s : setups) ns += s->time(ctx, kernels, ncols, o);
                    std::printf("  %-6s ncols %lld rows %u unroll %u: %.1fus summed over shapes\n", type_name.c_str(),
                                (long long)ncols, rows, unroll, ns / 1e3);
                    if (ns < best_ns) {
                        best_ns = ns;
                        best_rows = rows;
                        best_unroll = unroll;
                    }
                }
            const int64_t last = ncols == 2 ? 3 : ncols == 4 ? 7 : 8;
            for (int64_t n = ncols; n <= last; ++n) {
                best.rows[n - 1] = best_rows;
                best.unroll[n - 1] = best_unroll;
            }
            kernels.set_tuning(t, best);
        }
        std::printf("BEST {qtype::%s, %u, %u, %u, %u, %s, %s, %s},  // mean %.1f%% at 1 column\n", type_name.c_str(),
                    best.workgroup_size, best.k_split, best.long_row_k_split, best.slices_per_lane, best.staged ? "true" : "false",
                    per_column_text(best.rows).c_str(), per_column_text(best.unroll).c_str(), 100 * best_score);
        std::fflush(stdout);
        chosen[t] = best;
    }
    return chosen;
}

// What a dispatch costs beyond its bytes when each waits for the one before: every separation
// on a tiny mat-vec (the floor) and on the given shapes, with 1 column.
void probe(vk_::context& ctx, const options& o) {
    const std::pair<separation, const char*> seps[] = {{separation::library_barrier, "write->read barrier"},
                                                       {separation::full_barrier, "rw->rw barrier"},
                                                       {separation::execution_only, "execution-only barrier"},
                                                       {separation::overlapped, "no barrier"}};
    std::vector<std::pair<int64_t, int64_t>> shapes = {{128, 256}};
    shapes.insert(shapes.end(), o.shapes.begin(), o.shapes.end());
    for (const std::string& type_name : o.types) {
        const qtype t = qtype_from_name(type_name);
        vk_::mmvq kernels(ctx);
        for (auto [rows, k] : shapes) {
            setup s(ctx, kernels, t, rows, k, 1);
            for (auto [sep, what] : seps)
                std::printf("probe %-6s %6lldx%-6lld %-24s %8.2f us\n", type_name.c_str(), (long long)rows, (long long)k, what,
                            s.time(ctx, kernels, 1, o, sep) / 1e3);
            std::fflush(stdout);
        }
    }
}

}  // namespace

int main(int argc, char** argv) try {
    const options o = parse(argc, argv);
    vk_::context ctx({.device = o.device, .pipeline_statistics = false});
    const vk_::device_info& dev = ctx.info();
    std::printf("device: %s (vendor 0x%x, subgroup %u, integer dot %s)\n", dev.name.c_str(), dev.vendor_id,
                dev.subgroup_size, dev.integer_dot_accelerated ? "accelerated" : "not accelerated");
    if (o.probe) {
        probe(ctx, o);
        return 0;
    }
    std::map<qtype, vk_::mmvq_tuning> tunings;
    if (o.sweep) tunings = sweep(ctx, o);
    options bench = o;
    if (!o.bench_shapes.empty()) bench.shapes = o.bench_shapes;

    std::string json = "{\n  \"device\": \"" + dev.name +
                       "\",\n  \"peak_bytes_per_s\": 3.1e12,\n  \"timing\": \"steady state, median over batches of back-to-back "
                       "dispatches; us, gbps, fraction_of_peak: chained (a compute barrier between consecutive dispatches); "
                       "*_overlapped: no barrier; the fastest of " + std::to_string(o.passes) +
                       " passes, spread: slowest / fastest\",\n  \"results\": [\n";
    std::printf("\nchained: a compute barrier between consecutive dispatches (the headline figure); overlapped: none\n");
    // Every pass measures the whole table; a shared GPU can slow a stretch of one pass down.
    struct entry {
        std::string type, tuning;
        int64_t rows, k, ncols;
        double bytes, ns = 1e300, ns_overlapped = 1e300, ns_worst = 0, ns_overlapped_worst = 0;
    };
    std::vector<entry> entries;
    for (int pass = 0; pass < o.passes; ++pass) {
        std::size_t e = 0;
        for (const std::string& type_name : o.types) {
            const qtype t = qtype_from_name(type_name);
            vk_::mmvq kernels(ctx);
            if (tunings.count(t)) kernels.set_tuning(t, tunings[t]);
            for (auto [rows, k] : bench.shapes) {
                const int64_t max_cols = *std::max_element(o.ncols.begin(), o.ncols.end());
                setup s(ctx, kernels, t, rows, k, max_cols);
                for (int64_t ncols : o.ncols) {
                    if (pass == 0) entries.push_back({type_name, tuning_text(kernels.tuning(t), ncols), rows, k, ncols, s.bytes(ncols)});
                    entry& en = entries[e++];
                    const double ns = s.time(ctx, kernels, ncols, o);
                    const double ns_overlapped = s.time(ctx, kernels, ncols, o, separation::overlapped);
                    en.ns = std::min(en.ns, ns);
                    en.ns_worst = std::max(en.ns_worst, ns);
                    en.ns_overlapped = std::min(en.ns_overlapped, ns_overlapped);
                    en.ns_overlapped_worst = std::max(en.ns_overlapped_worst, ns_overlapped);
                    std::fprintf(stderr, "pass %d %-6s %7lld %6lld %lld: %.2f us, overlapped %.2f us\n", pass, type_name.c_str(),
                                 (long long)rows, (long long)k, (long long)ncols, ns / 1e3, ns_overlapped / 1e3);
                }
            }
        }
    }
    std::printf("%-6s %7s %6s %5s %10s %9s %7s %12s %7s %7s   %s\n", "type", "rows", "k", "ncols", "us", "GB/s", "of 3.1",
                "overlap us", "of 3.1", "spread", "tuning");
    bool first = true;
    for (const entry& en : entries) {
        const double gbps = en.bytes / en.ns, gbps_overlapped = en.bytes / en.ns_overlapped;  // bytes per ns = GB/s
        const double spread = std::max(en.ns_worst / en.ns, en.ns_overlapped_worst / en.ns_overlapped);
        std::printf("%-6s %7lld %6lld %5lld %10.2f %9.1f %6.1f%% %12.2f %6.1f%% %6.2fx   %s\n", en.type.c_str(), (long long)en.rows,
                    (long long)en.k, (long long)en.ncols, en.ns / 1e3, gbps, 100 * gbps * 1e9 / peak_bytes_per_s,
                    en.ns_overlapped / 1e3, 100 * gbps_overlapped * 1e9 / peak_bytes_per_s, spread, en.tuning.c_str());
        char record[440];
        std::snprintf(record, sizeof record,
                      "    {\"type\": \"%s\", \"rows\": %lld, \"k\": %lld, \"ncols\": %lld, \"us\": %.3f, \"gbps\": %.1f, "
                      "\"fraction_of_peak\": %.4f, \"us_overlapped\": %.3f, \"gbps_overlapped\": %.1f, "
                      "\"fraction_of_peak_overlapped\": %.4f, \"spread\": %.3f, \"tuning\": \"%s\"}",
                      en.type.c_str(), (long long)en.rows, (long long)en.k, (long long)en.ncols, en.ns / 1e3, gbps,
                      gbps * 1e9 / peak_bytes_per_s, en.ns_overlapped / 1e3, gbps_overlapped,
                      gbps_overlapped * 1e9 / peak_bytes_per_s, spread, en.tuning.c_str());
        json += std::string(first ? "" : ",\n") + record;
        first = false;
    }
    json += "\n  ]\n}\n";
    std::printf("\n%s", json.c_str());
    if (!o.json.empty()) std::ofstream(o.json) << json;
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "llmrt-bench-mmvq-vulkan: %s\n", e.what());
    return 1;
}
