// A small, bounded, thread-safe map from a matrix-product problem to what
// cuBLASLt's heuristic chose for it. Creating the descriptors and asking the
// heuristic costs ~10+ us of host time per product, which dominates decode
// steps launched without CUDA graphs; models repeat the same few shapes, so
// the answer is looked up instead of asked for again.
//
// The key is a fixed array of integers that must spell out everything the
// heuristic's answer depends on (device, operand, result and compute types,
// epilogue, transposes, sizes, leading dimensions, batch geometry,
// alignments); the caller builds it. When the
// cache is full it is emptied: shapes that vary without end (an attention
// product whose length grows every step) cost one heuristic call per new
// shape and cannot grow memory without bound. Header-only and free of CUDA
// types so the host tests exercise it without a GPU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace kiln::cudadev {

inline constexpr size_t kLtKeyFields = 24;
using LtProblemKey = std::array<int64_t, kLtKeyFields>;

struct LtProblemKeyHash {
  size_t operator()(const LtProblemKey& key) const noexcept {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields' 64-bit values
    for (int64_t v : key) {
      h ^= static_cast<uint64_t>(v);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

template <typename Value>
class LtAlgoCache {
 public:
  explicit LtAlgoCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  std::optional<Value> find(const LtProblemKey& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }

  /// Records `value` for `key` (replacing an earlier one: two threads that
  /// missed together both insert, with the same answer).
  void insert(const LtProblemKey& key, const Value& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.size() >= capacity_ && map_.find(key) == map_.end()) map_.clear();
    map_[key] = value;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return map_.size();
  }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<LtProblemKey, Value, LtProblemKeyHash> map_;
};

}  // namespace kiln::cudadev
