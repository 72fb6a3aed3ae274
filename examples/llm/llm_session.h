// LlmSession: one exported decoder-only LLM program (methods `prefill` and
// `decode`, see export_llm.py) plus the KV cache it runs with.
//
// The cache is two tensors, k_cache and v_cache, [n_layers, n_kv_heads,
// max_seq, head_dim] in the program's dtype, allocated once on the device the
// methods run on and passed to every call. The compiled methods write the new
// keys/values into them in place (a user-input mutation that AOTInductor
// compiles to stores into the input buffer), and Kiln hands an input that is
// already on the method's device to the library without a copy, so:
//   * on CPU the cache stays in the same host buffers for the whole generation;
//   * on CUDA it lives in device memory and never crosses to the host. Only the
//     token ids go up (8 bytes each) and the logits come down (vocab floats).
// Nothing copies the whole cache per step. (Returning the caches as outputs
// and feeding them back would make every step allocate and fill a complete new
// cache; and a CPU tensor given to a CUDA method is staged into a temporary
// device copy, so writes into it would be lost: the cache must be allocated on
// the method's device, which is what this class does.)
//
// Not thread-safe: one generation at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/module.h"

namespace kiln::llm {

class LlmSession {
 public:
  /// Loads the program's two methods with `options` and allocates a zeroed
  /// cache on their device. The contract is checked: inputs named as
  /// export_llm.py writes them, caches of one shape and dtype, logits
  /// float32[1, vocab]; errors name what differs. With `decode_cuda_graphs`, a
  /// CUDA program's decode method replays CUDA graphs (aoti.cuda_graphs): its
  /// shapes never change and the cache it writes in place is the same two
  /// buffers on every step, which the graph binds by address. Prefill runs
  /// eagerly (each prompt length would be a graph of its own).
  static Result<std::unique_ptr<LlmSession>> open(const std::string& path, const LoadBackendOptionsMap& options,
                                                  bool decode_cuda_graphs = true);

  /// Logits (float32, vocab_size) of the last prompt token; the cache then
  /// holds positions 0..prompt.size()-1. A one-token prompt runs `decode` at
  /// position 0 (the prefill method takes at least 2 tokens).
  Result<std::span<const float>> prefill(std::span<const int64_t> prompt);
  /// Logits after `token` at position `pos` (positions before it must be in
  /// the cache); writes the cache at `pos`.
  Result<std::span<const float>> decode(int64_t token, int64_t pos);

  /// Zeroes the cache (not needed between generations: positions after the
  /// current one are masked out, but the cache starts zeroed so that nothing
  /// undefined is ever read).
  Error clear_cache();

  int64_t vocab_size() const noexcept { return vocab_size_; }
  /// Positions the cache holds: prompt + generated tokens must fit.
  int64_t max_seq() const noexcept { return cache_shape_[2]; }
  /// Longest prompt the prefill method accepts.
  int64_t max_prompt() const noexcept { return max_prompt_; }
  Device device() const noexcept { return device_; }
  bool decode_uses_cuda_graphs() const noexcept { return decode_cuda_graphs_; }
  DType cache_dtype() const noexcept { return cache_dtype_; }
  const std::vector<int64_t>& cache_shape() const noexcept { return cache_shape_; }
  /// Bytes of both caches together.
  size_t cache_bytes() const noexcept { return 2 * k_cache_.nbytes(); }

 private:
  explicit LlmSession(const std::string& path) : path_(path), module_(path) {}
  Error check_contract(const MethodInfo& prefill, const MethodInfo& decode);
  Error contract_error(const std::string& what) const;
  // Runs a method and copies its logits output to logits_.
  Result<std::span<const float>> run(const char* method, const std::vector<Tensor>& inputs);

  std::string path_;
  Module module_;
  Device device_;
  DType cache_dtype_ = DType::Float32;
  std::vector<int64_t> cache_shape_;
  int64_t vocab_size_ = 0;
  int64_t max_prompt_ = 0;
  Tensor k_cache_;
  Tensor v_cache_;
  bool decode_cuda_graphs_ = false;
  std::vector<int64_t> ids_;       // token ids of the current call (host)
  std::vector<int64_t> position_;  // decode's position (host)
  std::vector<float> logits_;
};

}  // namespace kiln::llm
