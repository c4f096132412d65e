// The sampler chain, its members and the counter-based RNG.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "llmrt/sample/rng.hpp"
#include "llmrt/sample/sampler_chain.hpp"

using namespace llmrt::sample;

namespace {

// Runs a single stage over logits and returns the surviving ids in ascending order.
template <class Stage>
std::vector<int32_t> survivors(const Stage& stage, const std::vector<float>& logits, std::vector<int32_t> history = {}) {
    candidate_set c;
    c.load(logits);
    stage.apply(c, history);
    std::vector<int32_t> ids;
    for (const auto& x : c.items) ids.push_back(x.id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::map<int32_t, float> logits_after(const penalty_stage& stage, const std::vector<float>& logits,
                                      const std::vector<int32_t>& history) {
    candidate_set c;
    c.load(logits);
    stage.apply(c, history);
    std::map<int32_t, float> out;
    for (const auto& x : c.items) out[x.id] = x.logit;
    return out;
}

sampling_params no_filters(float temperature) {
    sampling_params p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    return p;
}

}  // namespace

TEST_CASE("Philox-4x32-10 matches the Random123 known-answer vectors") {
    CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == philox_counter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
    CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
          philox_counter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
    CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
          philox_counter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("the uniform for a position is a pure function of seed, position and stream") {
    CHECK(uniform01(7, 123, rng_stream::target_sample) == uniform01(7, 123, rng_stream::target_sample));
    CHECK(uniform01(7, 123, rng_stream::target_sample) != uniform01(8, 123, rng_stream::target_sample));
    CHECK(uniform01(7, 123, rng_stream::target_sample) != uniform01(7, 124, rng_stream::target_sample));
    CHECK(uniform01(7, 123, rng_stream::target_sample) != uniform01(7, 123, rng_stream::accept_coin));
    CHECK(uniform01(7, uint64_t(1) << 40, rng_stream::residual) != uniform01(7, 0, rng_stream::residual));
}

TEST_CASE("uniforms are in [0, 1) with the moments of a uniform distribution") {
    const int n = 200000;
    double sum = 0.0, sum_sq = 0.0;
    int bins[10] = {};
    for (int i = 0; i < n; ++i) {
        const double u = uniform01(42, uint64_t(i), rng_stream::target_sample);
        REQUIRE(u >= 0.0);
        REQUIRE(u < 1.0);
        sum += u;
        sum_sq += u * u;
        ++bins[int(u * 10)];
    }
    CHECK(sum / n == doctest::Approx(0.5).epsilon(0.005));
    CHECK(sum_sq / n == doctest::Approx(1.0 / 3.0).epsilon(0.005));
    double chi2 = 0.0;
    for (int b : bins) chi2 += (b - n / 10.0) * (b - n / 10.0) / (n / 10.0);
    CHECK(chi2 < 27.9);  // χ²(9) at p = 0.001
}

TEST_CASE("a distribution draws by inverse CDF in id order and residual keeps max(0, p - q)") {
    const auto p = token_distribution::from_weights({{5, 1.0}, {2, 2.0}, {9, 1.0}});
    REQUIRE(p.size() == 3);
    CHECK(p.entries()[0].id == 2);
    CHECK(p.probability(2) == doctest::Approx(0.5));
    CHECK(p.probability(3) == 0.0f);
    CHECK(p.draw(0.0) == 2);
    CHECK(p.draw(0.49) == 2);
    CHECK(p.draw(0.51) == 5);
    CHECK(p.draw(0.99) == 9);
    const auto q = token_distribution::from_weights({{2, 3.0}, {5, 1.0}});
    const auto r = residual(p, q);  // p − q = (2: −0.25, 5: 0, 9: 0.25) → only 9
    REQUIRE(r.size() == 1);
    CHECK(r.entries()[0].id == 9);
    CHECK(total_variation(p, q) == doctest::Approx(0.25));
    CHECK(residual(p, p).empty());
    CHECK_THROWS_AS(token_distribution::from_weights({{1, -0.5}, {2, 1.0}}), llmrt::error);
    CHECK_THROWS_AS(token_distribution::from_weights({{1, 0.0}}), llmrt::error);
    CHECK_THROWS_AS(token_distribution::from_weights({{1, 1.0}, {1, 1.0}}), llmrt::error);
}

TEST_CASE("greedy keeps the largest logit and the lowest id among ties") {
    CHECK(survivors(greedy_stage{}, {0.1f, 3.0f, -1.0f, 3.0f}) == std::vector<int32_t>{1});
    sampler_chain chain(sampling_params::greedy());
    CHECK(chain.is_greedy());
    CHECK(chain.sample(std::vector<float>{0.0f, 2.0f, 5.0f, 5.0f}) == 2);
}

TEST_CASE("temperature scales the logits before the softmax") {
    const std::vector<float> logits{0.0f, std::log(3.0f)};
    CHECK(sampler_chain(no_filters(1.0f)).distribution(logits).probability(1) == doctest::Approx(0.75));
    // T = 2: exp(ln3 / 2) = √3 → p1 = √3 / (1 + √3)
    CHECK(sampler_chain(no_filters(2.0f)).distribution(logits).probability(1) ==
          doctest::Approx(std::sqrt(3.0) / (1.0 + std::sqrt(3.0))));
    CHECK_THROWS_AS(temperature_stage{-1.0f}.validate(), llmrt::error);
}

TEST_CASE("top-k keeps the k largest logits") {
    CHECK(survivors(top_k_stage{2}, {1.0f, 5.0f, 3.0f, 4.0f}) == std::vector<int32_t>{1, 3});
    CHECK(survivors(top_k_stage{0}, {1.0f, 5.0f, 3.0f}) == std::vector<int32_t>{0, 1, 2});
    CHECK(survivors(top_k_stage{9}, {1.0f, 5.0f, 3.0f}) == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("loading the top k of a row gives what loading it whole and top-k give, ties and -inf included") {
    std::vector<float> row(5000);
    uint64_t h = 7;
    for (float& l : row) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        l = float(int32_t(h >> 54) - 512) / 8.0f;  // 1024 values: many ties
    }
    for (size_t i = 0; i < row.size(); i += 7) row[i] = -std::numeric_limits<float>::infinity();
    row[4999] = 200.0f;  // the best at the end
    for (size_t k : {size_t(1), size_t(2), size_t(40), size_t(999), size_t(4999)}) {
        CAPTURE(k);
        candidate_set whole, top;
        whole.load(row);
        top_k_stage{int32_t(k)}.apply(whole, {});
        top.load_top_k(row, k);
        REQUIRE(top.items.size() == whole.items.size());
        for (size_t i = 0; i < k; ++i) {
            CHECK(top.items[i].id == whole.items[i].id);
            CHECK(top.items[i].logit == whole.items[i].logit);
        }
        CHECK(top.sorted);
        CHECK_FALSE(top.identity);
    }
    // A chain that starts with top-k (which takes that path) gives the distribution of the same
    // stages after a no-op one (which loads the whole row).
    sampling_params p;
    p.seed = 5;
    const std::vector<sampler_stage> fast = p.build_stages();
    std::vector<sampler_stage> slow{typical_stage{1.0f}};
    slow.insert(slow.end(), fast.begin(), fast.end());
    REQUIRE(std::holds_alternative<top_k_stage>(fast.front()));
    const sampler_chain a(fast, 5), b(slow, 5);
    const token_distribution da = a.distribution(row), db = b.distribution(row);
    REQUIRE(da.size() == db.size());
    for (size_t i = 0; i < da.size(); ++i) {
        CHECK(da.entries()[i].id == db.entries()[i].id);
        CHECK(da.entries()[i].p == db.entries()[i].p);
    }
    std::vector<float> bad(row);
    bad[3000] = std::nanf("");
    CHECK_THROWS_AS(a.distribution(bad), llmrt::error);
    bad[3000] = std::numeric_limits<float>::infinity();
    CHECK_THROWS_AS(a.distribution(bad), llmrt::error);
}

TEST_CASE("top-p keeps the smallest prefix whose mass reaches p") {
    // probabilities 0.5, 0.25, 0.125, 0.125 for ids 0..3
    const std::vector<float> logits{std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
    CHECK(survivors(top_p_stage{0.5f}, logits) == std::vector<int32_t>{0});
    CHECK(survivors(top_p_stage{0.6f}, logits) == std::vector<int32_t>{0, 1});
    CHECK(survivors(top_p_stage{0.8f}, logits) == std::vector<int32_t>{0, 1, 2});
    CHECK(survivors(top_p_stage{1.0f}, logits) == std::vector<int32_t>{0, 1, 2, 3});
    CHECK_THROWS_AS(top_p_stage{0.0f}.validate(), llmrt::error);
}

TEST_CASE("min-p keeps tokens at least p times as likely as the most likely one") {
    // probabilities relative to the max: 1, 0.5, 0.1, 0.05
    const std::vector<float> logits{0.0f, std::log(0.5f), std::log(0.1f), std::log(0.05f)};
    CHECK(survivors(min_p_stage{0.3f}, logits) == std::vector<int32_t>{0, 1});
    CHECK(survivors(min_p_stage{0.09f}, logits) == std::vector<int32_t>{0, 1, 2});
    CHECK(survivors(min_p_stage{0.0f}, logits) == std::vector<int32_t>{0, 1, 2, 3});
}

TEST_CASE("typical sampling keeps the tokens whose surprise is closest to the entropy") {
    // p = 0.6, 0.2, 0.15, 0.05. H = 1.0627; |−ln p − H| = 0.552, 0.547, 0.834, 1.933:
    // ranked 1, 0, 2, 3 → mass 0.2, 0.8, 0.95, 1.
    const std::vector<float> logits{std::log(0.6f), std::log(0.2f), std::log(0.15f), std::log(0.05f)};
    CHECK(survivors(typical_stage{0.1f}, logits) == std::vector<int32_t>{1});
    CHECK(survivors(typical_stage{0.5f}, logits) == std::vector<int32_t>{0, 1});
    CHECK(survivors(typical_stage{0.9f}, logits) == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("penalties divide positive and multiply negative logits of seen tokens, then subtract count and presence terms") {
    const std::vector<float> logits{2.0f, -1.0f, 3.0f, 1.0f};
    const std::vector<int32_t> history{0, 1, 0, 3};
    const auto out = logits_after(penalty_stage{-1, 2.0f, 0.5f, 0.25f}, logits, history);
    CHECK(out.at(0) == doctest::Approx(2.0f / 2 - 2 * 0.5f - 0.25f));
    CHECK(out.at(1) == doctest::Approx(-1.0f * 2 - 1 * 0.5f - 0.25f));
    CHECK(out.at(2) == doctest::Approx(3.0f));
    CHECK(out.at(3) == doctest::Approx(1.0f / 2 - 0.5f - 0.25f));
    // last_n = 2 only sees {0, 3}
    const auto windowed = logits_after(penalty_stage{2, 2.0f, 0.0f, 0.0f}, logits, history);
    CHECK(windowed.at(0) == doctest::Approx(1.0f));
    CHECK(windowed.at(1) == doctest::Approx(-1.0f));
    CHECK(windowed.at(3) == doctest::Approx(0.5f));
}

TEST_CASE("the chain applies penalties from its own history and restore rolls that history back") {
    sampling_params params = sampling_params::greedy();
    params.repeat_penalty = 10.0f;
    params.penalty_last_n = -1;
    sampler_chain chain(params);
    const std::vector<float> logits{1.0f, 2.0f, 0.5f};
    CHECK(chain.sample(logits) == 1);
    const size_t mark = chain.checkpoint();
    chain.accept(1);  // token 1 now penalised to 0.2
    CHECK(chain.sample(logits) == 0);
    chain.accept(0);
    CHECK(chain.sample(logits) == 2);
    chain.restore(mark);
    CHECK(chain.position() == 0);
    CHECK(chain.sample(logits) == 1);
    CHECK_THROWS_AS(chain.restore(5), llmrt::error);
}

TEST_CASE("sampling is reproducible from the seed and depends on the position, not on call history") {
    sampling_params params = no_filters(1.0f);
    params.seed = 1234;
    const std::vector<float> logits{0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f};
    sampler_chain a(params), b(params);
    std::vector<int32_t> first, second;
    for (int i = 0; i < 64; ++i) {
        first.push_back(a.sample(logits));
        a.accept(first.back());
    }
    for (int i = 0; i < 64; ++i) {
        b.sample(logits);  // extra draws at the same position change nothing
        second.push_back(b.sample(logits));
        b.accept(second.back());
    }
    CHECK(first == second);
    params.seed = 1235;
    sampler_chain c(params);
    std::vector<int32_t> third;
    for (int i = 0; i < 64; ++i) {
        third.push_back(c.sample(logits));
        c.accept(third.back());
    }
    CHECK(first != third);
}

TEST_CASE("draws follow the processed distribution") {
    sampling_params params = no_filters(0.7f);
    params.top_k = 3;
    params.seed = 99;
    sampler_chain chain(params);
    const std::vector<float> logits{0.3f, 1.0f, -0.5f, 0.8f, 0.0f};
    const token_distribution p = chain.distribution(logits);
    CHECK(p.size() == 3);  // ids 0, 1, 3 survive top-k
    const int n = 60000;
    std::map<int32_t, int> counts;
    for (int i = 0; i < n; ++i) {
        counts[chain.sample(logits)]++;
        chain.accept(0);  // advance the position; no penalties in this chain
    }
    double chi2 = 0.0;
    for (const auto& e : p.entries()) {
        const double expected = n * double(e.p);
        chi2 += (counts[e.id] - expected) * (counts[e.id] - expected) / expected;
    }
    CHECK(counts.size() == 3);
    CHECK(chi2 < 13.8);  // χ²(2) at p = 0.001
}

TEST_CASE("bad logits and bad parameters raise llmrt::error") {
    sampler_chain chain(no_filters(1.0f));
    CHECK_THROWS_AS(chain.distribution(std::vector<float>{0.0f, std::nanf("")}), llmrt::error);
    CHECK_THROWS_AS(chain.distribution(std::vector<float>{}), llmrt::error);
    const float inf = std::numeric_limits<float>::infinity();
    CHECK_THROWS_AS(chain.distribution(std::vector<float>{-inf, -inf}), llmrt::error);
    CHECK_THROWS_AS(chain.accept(-3), llmrt::error);
    sampling_params bad;
    bad.top_p = 1.5f;
    CHECK_THROWS_AS(sampler_chain{bad}, llmrt::error);
    bad = {};
    bad.repeat_penalty = 0.0f;
    CHECK_THROWS_AS(sampler_chain{bad}, llmrt::error);
    bad = {};
    bad.temperature = std::nanf("");
    CHECK_THROWS_AS(sampler_chain{bad}, llmrt::error);
}

TEST_CASE("the default chain orders its members as llama.cpp does") {
    sampling_params params;
    params.repeat_penalty = 1.1f;
    const auto stages = params.build_stages();
    REQUIRE(stages.size() == 6);
    CHECK(std::holds_alternative<penalty_stage>(stages[0]));
    CHECK(std::holds_alternative<top_k_stage>(stages[1]));
    CHECK(std::holds_alternative<typical_stage>(stages[2]));
    CHECK(std::holds_alternative<top_p_stage>(stages[3]));
    CHECK(std::holds_alternative<min_p_stage>(stages[4]));
    CHECK(std::holds_alternative<temperature_stage>(stages[5]));
}
