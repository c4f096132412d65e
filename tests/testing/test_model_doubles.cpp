// The model doubles for llmrt::sample (llmrt/testing/model_doubles.hpp): what a call charges the
// fake clock, which the speculative-decoding tests and llmrt-bench-speculative-policy time with.
#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "llmrt/testing/model_doubles.hpp"

using namespace llmrt::sample::testing;

TEST_CASE("a function_model charges its clock per_call + per_token n + extra(n, whether it hands out logits)") {
    fake_clock clock;
    std::vector<std::pair<int32_t, bool>> asked;
    const auto extra = [&](int32_t n, bool logits) {
        asked.emplace_back(n, logits);
        return logits ? 10.0 : 100.0;
    };
    function_model model(make_vocabulary(8), 64, hash_logits(1, 0), {&clock, 1.0, 0.25, extra});
    const std::vector<int32_t> tokens{1, 2, 3};
    std::vector<float> logits(tokens.size() * 8);
    model.eval(tokens, 0, logits);
    CHECK(clock.seconds == 1.0 + 0.25 * 3 + 10.0);
    model.eval(std::span(tokens).first(1), 3, {});
    CHECK(clock.seconds == 11.75 + 1.0 + 0.25 + 100.0);
    CHECK(asked == std::vector<std::pair<int32_t, bool>>{{3, true}, {1, false}});
}
