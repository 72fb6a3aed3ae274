// Sampler: greedy, temperature, top-k, top-p and seeding. Expected
// distributions are computed here from the logits (softmax written out in the
// test), never taken from the sampler.
#include "sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace kiln::llm {
namespace {

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  double max_logit = -INFINITY;
  for (float l : logits) max_logit = std::max(max_logit, static_cast<double>(l));
  std::vector<double> p(logits.size());
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) total += p[i] = std::exp((logits[i] - max_logit) / temperature);
  for (double& x : p) x /= total;
  return p;
}

std::vector<int64_t> draw(Sampler& sampler, const std::vector<float>& logits, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(sampler.sample(logits));
  return out;
}

std::map<int64_t, int> histogram(const std::vector<int64_t>& tokens) {
  std::map<int64_t, int> counts;
  for (int64_t t : tokens) ++counts[t];
  return counts;
}

// Logits of a known distribution: log(p) (the softmax at temperature 1 is p).
std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> out;
  for (double x : p) out.push_back(static_cast<float>(std::log(x)));
  return out;
}

TEST(Sampler, GreedyIsArgmaxAndIgnoresTheSeed) {
  const std::vector<float> logits = {0.1f, 2.5f, -1.0f, 2.4f, 0.0f};
  for (uint64_t seed : {0u, 1u, 99u}) {
    Sampler sampler({.temperature = 0.0f, .seed = seed});
    EXPECT_TRUE(sampler.greedy());
    for (int i = 0; i < 10; ++i) EXPECT_EQ(sampler.sample(logits), 1);
  }
  EXPECT_EQ(argmax(std::vector<float>{3.0f, 7.0f, 7.0f, 1.0f}), 1) << "ties go to the lowest index";
  EXPECT_EQ(argmax(std::vector<float>{}), -1);
}

TEST(Sampler, TopKOfOneIsGreedyAtAnyTemperature) {
  const std::vector<float> logits = {0.3f, -0.2f, 0.31f, 0.1f};
  Sampler sampler({.temperature = 5.0f, .top_k = 1, .seed = 3});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sampler.sample(logits), 2);
}

TEST(Sampler, FrequenciesFollowTheTemperedSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f, -3.0f};
  for (float temperature : {0.7f, 1.0f, 1.8f}) {
    Sampler sampler({.temperature = temperature, .seed = 11});
    const int n = 40000;
    auto counts = histogram(draw(sampler, logits, n));
    const auto p = softmax(logits, temperature);
    for (size_t i = 0; i < logits.size(); ++i) {
      const double expected = p[i] * n;
      const double sigma = std::sqrt(n * p[i] * (1 - p[i]));
      EXPECT_NEAR(counts[static_cast<int64_t>(i)], expected, 5 * sigma + 1)
          << "token " << i << " at temperature " << temperature;
    }
  }
}

TEST(Sampler, LowTemperatureConcentratesOnTheArgmax) {
  const std::vector<float> logits = {1.0f, 1.5f, 0.2f};
  Sampler sampler({.temperature = 0.05f, .seed = 5});
  auto counts = histogram(draw(sampler, logits, 2000));
  EXPECT_GE(counts[1], 1990);  // p(token 1) = 1 - 2e-4 or so
}

TEST(Sampler, TopKKeepsExactlyTheKMostLikely) {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f, -1.0f, 2.5f};
  Sampler sampler({.temperature = 1.0f, .top_k = 3, .seed = 17});
  const int n = 30000;
  auto counts = histogram(draw(sampler, logits, n));
  EXPECT_EQ(std::set<int64_t>({1, 3, 5}), [&] {
    std::set<int64_t> seen;
    for (auto& [t, c] : counts) seen.insert(t);
    return seen;
  }());
  // Renormalised over the three kept tokens.
  const auto p = softmax({3.0f, 2.0f, 2.5f}, 1.0);
  const int64_t kept[] = {1, 3, 5};
  for (int i = 0; i < 3; ++i) {
    const double sigma = std::sqrt(n * p[i] * (1 - p[i]));
    EXPECT_NEAR(counts[kept[i]], p[i] * n, 5 * sigma) << "token " << kept[i];
  }
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 stored out of order.
  const std::vector<float> logits = log_probs({0.15, 0.5, 0.05, 0.3});
  struct Case {
    float top_p;
    std::set<int64_t> allowed;
  };
  for (const Case& c : {Case{0.4f, {1}}, Case{0.7f, {1, 3}}, Case{0.85f, {1, 3, 0}}, Case{0.97f, {1, 3, 0, 2}},
                        Case{1e-6f, {1}}}) {
    Sampler sampler({.temperature = 1.0f, .top_p = c.top_p, .seed = 23});
    std::set<int64_t> seen;
    for (int64_t t : draw(sampler, logits, 5000)) seen.insert(t);
    EXPECT_EQ(seen, c.allowed) << "top_p " << c.top_p;
  }
  // Within the nucleus {1, 3}: renormalised 0.5 : 0.3.
  Sampler sampler({.temperature = 1.0f, .top_p = 0.7f, .seed = 29});
  const int n = 40000;
  auto counts = histogram(draw(sampler, logits, n));
  const double p1 = 0.5 / 0.8;
  EXPECT_NEAR(counts[1], p1 * n, 5 * std::sqrt(n * p1 * (1 - p1)));
}

TEST(Sampler, TopKThenTopP) {
  // top-k 3 keeps {1, 3, 0} (0.5, 0.3, 0.15 -> renormalised 0.526, 0.316, 0.158);
  // top-p 0.8 then keeps {1, 3} (0.842 >= 0.8).
  const std::vector<float> logits = log_probs({0.15, 0.5, 0.05, 0.3});
  Sampler sampler({.temperature = 1.0f, .top_k = 3, .top_p = 0.8f, .seed = 31});
  std::set<int64_t> seen;
  for (int64_t t : draw(sampler, logits, 5000)) seen.insert(t);
  EXPECT_EQ(seen, (std::set<int64_t>{1, 3}));
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(0.37 * i));
  const SamplerConfig config{.temperature = 1.0f, .top_k = 50, .top_p = 0.9f, .seed = 1234};
  Sampler a(config), b(config);
  const auto first = draw(a, logits, 200);
  EXPECT_EQ(first, draw(b, logits, 200));
  SamplerConfig other = config;
  other.seed = 1235;
  Sampler c(other);
  EXPECT_NE(first, draw(c, logits, 200));
  EXPECT_GT(histogram(first).size(), 10u) << "the draws should not collapse onto a few tokens";
}

TEST(Sampler, NeverDrawsMinusInfinity) {
  const std::vector<float> logits = {-INFINITY, 0.0f, -INFINITY, 0.0f};
  Sampler sampler({.temperature = 2.0f, .seed = 7});
  for (int64_t t : draw(sampler, logits, 2000)) EXPECT_TRUE(t == 1 || t == 3) << t;
  const std::vector<float> none = {-INFINITY, -INFINITY};
  EXPECT_EQ(sampler.sample(none), 0);
}

TEST(Sampler, EmptyLogitsGiveMinusOne) {
  Sampler sampler({.temperature = 1.0f});
  EXPECT_EQ(sampler.sample({}), -1);
}

TEST(Sampler, CheckNamesTheBadSetting) {
  EXPECT_EQ(Sampler::check({}), "");
  EXPECT_EQ(Sampler::check({.temperature = 0.8f, .top_k = 40, .top_p = 0.95f}), "");
  EXPECT_NE(Sampler::check({.temperature = -1.0f}).find("temperature"), std::string::npos);
  EXPECT_NE(Sampler::check({.temperature = NAN}).find("temperature"), std::string::npos);
  EXPECT_NE(Sampler::check({.top_k = -2}).find("top-k"), std::string::npos);
  EXPECT_NE(Sampler::check({.top_p = 0.0f}).find("top-p"), std::string::npos);
  EXPECT_NE(Sampler::check({.top_p = 1.5f}).find("top-p"), std::string::npos);
}

TEST(Sampler, Describe) {
  EXPECT_EQ(Sampler({}).describe(), "greedy");
  EXPECT_EQ(Sampler({.temperature = 0.5f, .top_k = 40, .top_p = 0.9f, .seed = 7}).describe(),
            "temperature 0.5, top-k 40, top-p 0.9, seed 7");
}

}  // namespace
}  // namespace kiln::llm
