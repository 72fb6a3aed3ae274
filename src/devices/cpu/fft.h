// Discrete Fourier transforms in double precision for the CPU FFT ops
// (_fft_r2c, _fft_c2c): any length, along any set of dimensions of a
// row-major buffer. Lengths whose prime factors are all small run as an
// iterative self-sorting (Stockham) mixed-radix FFT; a length with a large
// prime factor runs as Bluestein's chirp-z transform over a power-of-two FFT,
// so every length costs O(n log n).
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace kiln::cpu {

/// A plan for one transform length; reusable across lines, not thread-safe
/// (it owns scratch space).
class FftPlan {
 public:
  explicit FftPlan(int64_t n);
  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  int64_t size() const noexcept { return n_; }
  /// In place: data[k] = sum_j data[j] * exp(-+2 pi i j k / n), the minus sign
  /// when `forward`. Unnormalized.
  void run(std::complex<double>* data, bool forward);

 private:
  void stockham(std::complex<double>* data, bool forward);
  void bluestein(std::complex<double>* data, bool forward);

  int64_t n_;
  std::vector<int64_t> radices_;             // Stockham stages (empty for Bluestein)
  std::vector<std::complex<double>> roots_;  // exp(-2 pi i k / n), k < n
  std::vector<std::complex<double>> scratch_;
  // Bluestein: chirp exp(-i pi k^2 / n), the transformed conjugate chirp
  // filter, and the power-of-two plan the convolution runs on.
  std::vector<std::complex<double>> chirp_;
  std::vector<std::complex<double>> filter_;
  std::unique_ptr<FftPlan> inner_;
};

/// Transforms the row-major buffer `data` of shape `sizes` in place along
/// each dimension in `dims` (unnormalized; forward uses exp(-2 pi i ...)).
void fft_dims(std::vector<std::complex<double>>& data, std::span<const int64_t> sizes,
              std::span<const int64_t> dims, bool forward);

}  // namespace kiln::cpu
