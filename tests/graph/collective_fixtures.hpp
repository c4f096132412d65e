// Graphs of one collective each, for the collective tests of every backend (tests/graph,
// tests/nccl): y = all_reduce(x) and y = all_gather(x), batches up to 4.
#pragma once

#include <cstdint>

#include <llmrt/graph/graph.hpp>

namespace llmrt::test {

// y = all_reduce(x) over `ranks`, for columns of ne0.
struct reduce_net {
    graph::graph g{4};
    graph::tensor x, y;
    reduce_net(int64_t ne0, int32_t ranks) {
        x = g.input("x", qtype::f32, ne0);
        y = g.all_reduce(x, ranks);
        g.mark_output(y);
    }
};

// y = all_gather(x) of `total` elements over `ranks`, x rank r's slice.
struct gather_net {
    graph::graph g{4};
    graph::tensor x, y;
    gather_net(int64_t total, int32_t ranks, int32_t rank) {
        x = g.input("x", qtype::f32, graph::shard_begin(total, ranks, rank + 1) - graph::shard_begin(total, ranks, rank));
        y = g.all_gather(x, total, ranks);
        g.mark_output(y);
    }
};

}  // namespace llmrt::test
