#include "log_mel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kiln::asr {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Plain complex product: std::complex's operator* checks for NaN/inf
// operands (C99 Annex G) and costs several times more in this loop.
inline std::complex<double> mul(std::complex<double> a, std::complex<double> b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

size_t smallest_factor(size_t n) {
  for (size_t p = 2; p * p <= n; ++p) {
    if (n % p == 0) return p;
  }
  return n;
}

// Slaney's mel scale (librosa's default, which Whisper's filters use): linear
// below 1 kHz, logarithmic above.
constexpr double kMinLogHz = 1000.0;
constexpr double kMinLogMel = 15.0;  // kMinLogHz / (200 / 3)
const double kLogStep = std::log(6.4) / 27.0;

double hz_to_mel(double hz) {
  return hz < kMinLogHz ? hz * 3.0 / 200.0 : kMinLogMel + std::log(hz / kMinLogHz) / kLogStep;
}
double mel_to_hz(double mel) {
  return mel < kMinLogMel ? mel * 200.0 / 3.0 : kMinLogHz * std::exp(kLogStep * (mel - kMinLogMel));
}

}  // namespace

Fft::Fft(size_t n) : n_(n), twiddles_(n) {
  if (n == 0) throw std::invalid_argument("FFT size 0");
  for (size_t p = n; p > 1;) {
    const size_t f = smallest_factor(p);
    if (f > 64) throw std::invalid_argument("FFT size " + std::to_string(n) + " has a prime factor > 64");
    p /= f;
  }
  for (size_t k = 0; k < n; ++k) twiddles_[k] = std::polar(1.0, -2.0 * kPi * static_cast<double>(k) / static_cast<double>(n));
}

void Fft::forward(const std::complex<double>* in, std::complex<double>* out) const { run(in, out, n_, 1); }

// Decimation in time: split into p interleaved sub-sequences of length m, take
// their DFTs into consecutive blocks of `out`, then combine with p-point DFTs.
void Fft::run(const std::complex<double>* in, std::complex<double>* out, size_t n, size_t stride) const {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  const size_t p = smallest_factor(n);
  const size_t m = n / p;
  for (size_t r = 0; r < p; ++r) run(in + r * stride, out + r * m, m, stride * p);
  const size_t step = n_ / n;  // twiddle index scale: exp(-2 pi i x / n) = twiddles_[x * step]
  std::complex<double> t[64];
  for (size_t k = 0; k < m; ++k) {
    for (size_t r = 0; r < p; ++r) t[r] = mul(out[r * m + k], twiddles_[(r * k * step) % n_]);
    for (size_t q = 0; q < p; ++q) {
      std::complex<double> sum = t[0];
      for (size_t r = 1; r < p; ++r) sum += mul(t[r], twiddles_[((r * q) % p) * m * step]);
      out[q * m + k] = sum;
    }
  }
}

LogMel::LogMel(const LogMelConfig& config) : config_(config), fft_(static_cast<size_t>(config.n_fft)) {
  const int n_fft = config.n_fft;
  const int bins = n_fft / 2 + 1;
  window_.resize(static_cast<size_t>(n_fft));
  for (int i = 0; i < n_fft; ++i) window_[static_cast<size_t>(i)] = 0.5 - 0.5 * std::cos(2.0 * kPi * i / n_fft);  // periodic Hann

  // n_mels + 2 points evenly spaced on the mel scale from 0 Hz to Nyquist;
  // filter m rises from point m to m+1 and falls to m+2, scaled by
  // 2 / (width in Hz) so each filter has the same area (Slaney norm).
  const double nyquist = config.sample_rate / 2.0;
  std::vector<double> points(static_cast<size_t>(config.n_mels + 2));
  const double top = hz_to_mel(nyquist);
  for (size_t i = 0; i < points.size(); ++i) points[i] = mel_to_hz(top * static_cast<double>(i) / (points.size() - 1));
  filters_.assign(static_cast<size_t>(config.n_mels) * bins, 0.0f);
  first_bin_.assign(static_cast<size_t>(config.n_mels), bins);
  last_bin_.assign(static_cast<size_t>(config.n_mels), -1);
  for (int m = 0; m < config.n_mels; ++m) {
    const double lo = points[static_cast<size_t>(m)], mid = points[static_cast<size_t>(m) + 1],
                 hi = points[static_cast<size_t>(m) + 2];
    const double norm = 2.0 / (hi - lo);
    for (int b = 0; b < bins; ++b) {
      const double hz = nyquist * b / (bins - 1);
      const double w = std::max(0.0, std::min((hz - lo) / (mid - lo), (hi - hz) / (hi - mid)));
      if (w <= 0.0) continue;
      filters_[static_cast<size_t>(m) * bins + b] = static_cast<float>(w * norm);
      first_bin_[static_cast<size_t>(m)] = std::min(first_bin_[static_cast<size_t>(m)], b);
      last_bin_[static_cast<size_t>(m)] = b;
    }
  }
}

void LogMel::compute(const float* samples, size_t count, float* out) const {
  const int n_fft = config_.n_fft, hop = config_.hop, n_frames = config_.n_frames, n_mels = config_.n_mels;
  const int bins = n_fft / 2 + 1;
  const auto total = static_cast<int64_t>(window_samples());
  count = std::min(count, static_cast<size_t>(total));
  const int64_t pad = n_fft / 2;
  // Sample i of the window, zero beyond `count`, reflected (edge excluded) at both ends.
  auto sample = [&](int64_t i) -> double {
    if (i < 0) i = -i;
    if (i >= total) i = 2 * (total - 1) - i;
    return i < static_cast<int64_t>(count) ? samples[i] : 0.0;
  };

  std::vector<std::complex<double>> frame(static_cast<size_t>(n_fft)), spectrum(static_cast<size_t>(n_fft));
  std::vector<double> power(static_cast<size_t>(bins));
  double max_log = -1e30;
  for (int f = 0; f < n_frames; ++f) {
    const int64_t start = static_cast<int64_t>(f) * hop - pad;
    for (int i = 0; i < n_fft; ++i) frame[static_cast<size_t>(i)] = sample(start + i) * window_[static_cast<size_t>(i)];
    fft_.forward(frame.data(), spectrum.data());
    for (int b = 0; b < bins; ++b) power[static_cast<size_t>(b)] = std::norm(spectrum[static_cast<size_t>(b)]);
    for (int m = 0; m < n_mels; ++m) {
      double energy = 0.0;
      const float* row = filters_.data() + static_cast<size_t>(m) * bins;
      for (int b = first_bin_[static_cast<size_t>(m)]; b <= last_bin_[static_cast<size_t>(m)]; ++b)
        energy += row[b] * power[static_cast<size_t>(b)];
      const double value = std::log10(std::max(energy, 1e-10));
      max_log = std::max(max_log, value);
      out[static_cast<size_t>(m) * n_frames + f] = static_cast<float>(value);
    }
  }
  const double floor = max_log - 8.0;
  for (size_t i = 0; i < static_cast<size_t>(n_mels) * n_frames; ++i) {
    out[i] = static_cast<float>((std::max(static_cast<double>(out[i]), floor) + 4.0) / 4.0);
  }
}

}  // namespace kiln::asr
