// Whisper's audio front end in C++: 30 s windows of 16 kHz audio to the
// log-mel spectrogram the encoder takes (80 mel bins x 3000 frames).
//
// Per window: zero-pad to 480000 samples, reflect-pad 200 samples each side,
// 400-point STFT with a periodic Hann window every 160 samples, power
// spectrum, Slaney-normalised triangular mel filters (0-8 kHz, Slaney mel
// scale), log10 floored at 1e-10, clamped to (max - 8), then (x + 4) / 4.
// The last STFT frame is dropped, as Whisper does.
#pragma once

#include <complex>
#include <cstddef>
#include <vector>

namespace kiln::asr {

struct LogMelConfig {
  int sample_rate = 16000;
  int n_fft = 400;
  int hop = 160;
  int n_mels = 80;
  int n_frames = 3000;  // frames per window; window = n_frames * hop samples
};

/// Complex FFT of any length whose prime factors are small (mixed-radix
/// Cooley-Tukey; O(n * sum of factors)).
class Fft {
 public:
  explicit Fft(size_t n);
  size_t size() const { return n_; }
  /// out = DFT(in), both of size(); in and out must not overlap.
  void forward(const std::complex<double>* in, std::complex<double>* out) const;

 private:
  void run(const std::complex<double>* in, std::complex<double>* out, size_t n, size_t stride) const;
  size_t n_;
  std::vector<std::complex<double>> twiddles_;  // exp(-2 pi i k / n)
};

class LogMel {
 public:
  explicit LogMel(const LogMelConfig& config = {});
  const LogMelConfig& config() const { return config_; }
  size_t window_samples() const { return static_cast<size_t>(config_.n_frames) * static_cast<size_t>(config_.hop); }
  /// Log-mel of `count` samples (at most window_samples(); the rest is
  /// silence) into out[n_mels * n_frames], row-major [mel][frame].
  void compute(const float* samples, size_t count, float* out) const;
  /// The mel filter bank, row-major [n_mels][n_fft / 2 + 1].

 private:
  LogMelConfig config_;
  Fft fft_;
  std::vector<double> window_;
  std::vector<float> filters_;
  std::vector<int> first_bin_, last_bin_;  // non-zero range of each filter
};

}  // namespace kiln::asr
