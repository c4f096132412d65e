// A mixture-of-experts feed-forward block as a graph, for the op tests of every backend:
//
//   probs = softmax(router · h);  ids = top_k(probs, k);  w = expert_weights(probs, ids, sum)
//   a = swiglu(gate[ids] · h, up[ids] · h);  out = weighted_sum(down[ids] · a, w)
//
// Expert matrices of `type`, the router f32 (as Qwen3-MoE files keep it small), sizes that are not
// multiples of any tile (40 rows of 64, 24 of 40 for f32 experts).
#pragma once

#include <cstdint>
#include <vector>

#include <llmrt/graph/graph.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/reference.hpp>

namespace llmrt::test {

struct moe_net {
    int64_t n_embd, n_ff, n_expert, k;
    std::vector<float> router;
    std::vector<uint8_t> gate, up, down;
    graph::graph g;
    graph::tensor h, probs, ids, weights, gate_out, up_out, act, down_out, out;

    static std::vector<uint8_t> matrix(qtype type, int64_t rows, int64_t k, uint64_t seed) {
        const auto v = testing::gaussian(rows * k, seed, 0.2f);
        return testing::quantize_matrix(type, v.data(), rows, k);
    }

    // n_embd and n_ff multiples of type's block size.
    moe_net(qtype type, int64_t n_embd_, int64_t n_ff_, int64_t n_expert_, int64_t k_, int64_t max_batch, uint64_t seed = 1)
        : n_embd(n_embd_), n_ff(n_ff_), n_expert(n_expert_), k(k_), g(max_batch) {
        router = testing::gaussian(n_embd * n_expert, seed, 0.3f);
        gate = matrix(type, n_ff * n_expert, n_embd, seed + 1);
        up = matrix(type, n_ff * n_expert, n_embd, seed + 2);
        down = matrix(type, n_embd * n_expert, n_ff, seed + 3);
        h = g.input("h", qtype::f32, n_embd);
        probs = g.softmax(g.mul_mat(g.weight("router", qtype::f32, n_embd, n_expert, router.data()), h));
        ids = g.top_k(probs, k);
        weights = g.expert_weights(probs, ids, graph::expert_norm::sum);
        gate_out = g.mul_mat_id(g.weight("gate_exps", type, n_embd, n_ff * n_expert, gate.data()), h, ids, n_expert);
        up_out = g.mul_mat_id(g.weight("up_exps", type, n_embd, n_ff * n_expert, up.data()), h, ids, n_expert);
        act = g.swiglu(gate_out, up_out);
        down_out = g.mul_mat_id(g.weight("down_exps", type, n_ff, n_embd * n_expert, down.data()), act, ids, n_expert);
        out = g.weighted_sum(down_out, weights);
        for (graph::tensor t : {ids, weights, down_out, out}) g.mark_output(t);
    }
    moe_net(const moe_net&) = delete;
    moe_net& operator=(const moe_net&) = delete;
};

}  // namespace llmrt::test
