#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace kiln::llm {

int64_t argmax(std::span<const float> values) {
  if (values.empty()) return -1;
  int64_t best = 0;
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i] > values[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
  return best;
}

std::string Sampler::check(const SamplerConfig& config) {
  if (!std::isfinite(config.temperature) || config.temperature < 0.0f)
    return "temperature must be a finite number >= 0 (0 = greedy), got " + std::to_string(config.temperature);
  if (config.top_k < 0) return "top-k must be >= 0 (0 = no limit), got " + std::to_string(config.top_k);
  if (!(config.top_p > 0.0f && config.top_p <= 1.0f))
    return "top-p must be in (0, 1] (1 = no limit), got " + std::to_string(config.top_p);
  return "";
}

Sampler::Sampler(const SamplerConfig& config) : config_(config), rng_(config.seed) {}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

std::string Sampler::describe() const {
  if (greedy()) return "greedy";
  std::ostringstream out;
  out << "temperature " << config_.temperature;
  if (config_.top_k > 0) out << ", top-k " << config_.top_k;
  if (config_.top_p < 1.0f) out << ", top-p " << config_.top_p;
  out << ", seed " << config_.seed;
  return out.str();
}

int64_t Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) return -1;
  if (greedy()) return argmax(logits);

  const size_t n = logits.size();
  candidates_.resize(n);
  std::iota(candidates_.begin(), candidates_.end(), int64_t{0});
  // Most likely first; equal logits in index order, so the order (and with it
  // every draw) is fully determined.
  auto more_likely = [&](int64_t a, int64_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  size_t kept = n;
  if (config_.top_k > 0 && static_cast<size_t>(config_.top_k) < n) {
    kept = static_cast<size_t>(config_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(kept),
                      candidates_.end(), more_likely);
    candidates_.resize(kept);
  } else if (config_.top_p < 1.0f) {
    std::sort(candidates_.begin(), candidates_.end(), more_likely);
  }

  // Softmax weights over the candidates, relative to the largest logit (so the
  // largest weight is exactly 1 and nothing overflows); double for the sums.
  float max_logit = -INFINITY;
  for (int64_t c : candidates_) max_logit = std::max(max_logit, logits[static_cast<size_t>(c)]);
  if (max_logit == -INFINITY) return argmax(logits);  // nothing has any probability
  const double inv_t = 1.0 / static_cast<double>(config_.temperature);
  weights_.resize(kept);
  double total = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    const double z = (static_cast<double>(logits[static_cast<size_t>(candidates_[i])]) - max_logit) * inv_t;
    weights_[i] = std::exp(z);
    total += weights_[i];
  }

  if (config_.top_p < 1.0f) {
    // Candidates are sorted most likely first: keep the shortest prefix whose
    // mass reaches top_p of the total.
    const double target = static_cast<double>(config_.top_p) * total;
    double mass = 0.0;
    size_t prefix = 0;
    while (prefix < kept) {
      mass += weights_[prefix++];
      if (mass >= target) break;
    }
    kept = prefix;
    total = mass;
  }

  const double u = uniform() * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    cumulative += weights_[i];
    if (u < cumulative) return candidates_[i];
  }
  // Rounding left u at the very top: the last candidate with any weight.
  for (size_t i = kept; i-- > 0;)
    if (weights_[i] > 0.0) return candidates_[i];
  return candidates_[0];
}

}  // namespace kiln::llm
