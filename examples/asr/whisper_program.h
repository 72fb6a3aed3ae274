// A Whisper program exported by export_asr.py, run with Kiln: the `encoder`
// method once per 30 s window, then the `decoder` method once per token in a
// greedy loop (argmax over the allowed ids until <|endoftext|>). The decoder
// step writes its self-attention cache in place: the cache is two tensors this
// class allocates once on the method's device and zeroes per window, so no step
// copies it. On a CUDA program the cache and the cross-attention keys/values
// stay on the GPU; only the logits of each step come back to the host, and the
// step replays as a CUDA graph bound to the cache buffers (aoti.cuda_graphs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/module.h"

namespace kiln::asr {

/// What the program's metadata says about the model and its tokens.
struct WhisperSpec {
  int64_t n_mels = 0, n_frames = 0, n_text_ctx = 0, decoder_layers = 0, dim = 0, vocab_size = 0;
  int64_t token_eot = 0, token_sot = 0, token_no_timestamps = 0;
  std::vector<int64_t> suppress_ids, suppress_ids_begin;
};

struct WindowResult {
  std::vector<int64_t> ids;  // generated text tokens (no prompt, no <|endoftext|>)
  double encoder_ms = 0, decoder_ms = 0;
  int steps = 0;             // decoder calls, prompt included
};

class WhisperProgram {
 public:
  /// Loads both methods of `path` and allocates the cache. `cuda_graphs`
  /// replays the decoder step as a CUDA graph (CUDA programs only); `threads`
  /// > 0 sets the CPU threads of the compiled code (aoti.num_threads). False
  /// with *error on failure.
  bool load(const std::string& path, bool cuda_graphs, int64_t threads, std::string* error);
  const WhisperSpec& spec() const { return spec_; }
  const std::string& device() const { return device_; }
  /// Greedy transcription of one window's log-mel, float32[n_mels * n_frames].
  /// `max_new_tokens` bounds the generated ids (Whisper allows n_text_ctx / 2).
  bool transcribe(std::vector<float>& mel, int64_t max_new_tokens, WindowResult* out, std::string* error);

 private:
  // The decoder's self-attention cache: [decoder_layers, n_text_ctx, dim].
  std::vector<int64_t> cache_shape() const { return {spec_.decoder_layers, spec_.n_text_ctx, spec_.dim}; }
  bool check_decoder_contract(const std::string& path, std::string* error) const;
  // Zeroes self_k_ and self_v_.
  bool clear_cache(std::string* error);

  std::unique_ptr<kiln::Module> module_;
  WhisperSpec spec_;
  std::string device_;
  kiln::Tensor self_k_, self_v_;  // float32 cache_shape() on the methods' device
  std::vector<bool> allowed_, allowed_first_;
};

/// Index of the largest of `logits[i]` with allowed[i] (first one on ties).
int64_t argmax_allowed(const float* logits, const std::vector<bool>& allowed);

}  // namespace kiln::asr
