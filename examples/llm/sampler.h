// Sampler: picks the next token from a vector of logits: greedy (argmax), or
// a random draw from softmax(logits / temperature) restricted to the top-k
// tokens and then to the nucleus (the smallest set of most likely tokens whose
// probability adds up to top_p).
//
// Deterministic for a given seed on every platform: the random numbers come
// from std::mt19937_64, whose output the C++ standard fixes, turned into
// uniform doubles by this file's own arithmetic (std::uniform_real_distribution
// differs between standard libraries). Greedy draws consume no random numbers.
// Not thread-safe; one per generation.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace kiln::llm {

struct SamplerConfig {
  /// <= 0: greedy. Otherwise logits are divided by it before the softmax.
  float temperature = 0.0f;
  /// Keep only the k most likely tokens; 0 (or >= vocabulary size): all.
  int64_t top_k = 0;
  /// Keep the smallest set of most likely tokens whose probability is at least
  /// top_p (after top-k); 1: all. Must be in (0, 1].
  float top_p = 1.0f;
  uint64_t seed = 0;
};

class Sampler {
 public:
  /// An error message for an invalid configuration, or "" when it is valid.
  static std::string check(const SamplerConfig& config);

  /// `config` must pass check().
  explicit Sampler(const SamplerConfig& config);

  /// The chosen token index, or -1 for empty logits. Ties in greedy mode and
  /// in the top-k / top-p ordering go to the lower index. Tokens whose logit is
  /// -inf are never drawn unless every logit is -inf (then greedy picks 0).
  int64_t sample(std::span<const float> logits);

  bool greedy() const noexcept { return config_.temperature <= 0.0f || config_.top_k == 1; }
  /// A one-line description, e.g. "greedy" or "temperature 0.8, top-k 40, top-p 0.95, seed 7".
  std::string describe() const;

 private:
  // Uniform double in [0, 1) from the top 53 bits of one generator output.
  double uniform();

  SamplerConfig config_;
  std::mt19937_64 rng_;
  std::vector<int64_t> candidates_;  // scratch, reused between calls
  std::vector<double> weights_;
};

/// Index of the largest value (the lowest such index on ties); -1 when empty.
int64_t argmax(std::span<const float> values);

}  // namespace kiln::llm
