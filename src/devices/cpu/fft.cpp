#include "devices/cpu/fft.h"

#include <cmath>

#include "devices/cpu/strided_index.h"

namespace kiln::cpu {

namespace {

using Complex = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;
// Primes up to this run as a direct radix-p butterfly (p^2 work per group);
// a larger prime factor makes Bluestein cheaper.
constexpr int64_t kMaxDirectRadix = 31;

// std::complex's operator* checks for NaN/inf operands (C99 Annex G) and is
// several times slower in these loops.
inline Complex mul(Complex a, Complex b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
inline Complex conj_if(Complex a, bool c) { return c ? std::conj(a) : a; }

// Factors with 4 first (fewer passes), then 2, 3, 5, ...; empty if a prime
// factor exceeds kMaxDirectRadix.
std::vector<int64_t> radices_of(int64_t n) {
  std::vector<int64_t> r;
  while (n % 4 == 0) {
    r.push_back(4);
    n /= 4;
  }
  for (int64_t p = 2; p <= n && p <= kMaxDirectRadix; ++p) {
    while (n % p == 0) {
      r.push_back(p);
      n /= p;
    }
  }
  if (n != 1) return {};
  return r;
}

}  // namespace

FftPlan::FftPlan(int64_t n) : n_(n) {
  if (n <= 1) return;
  radices_ = radices_of(n);
  if (!radices_.empty()) {
    roots_.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      roots_[static_cast<size_t>(k)] =
          std::polar(1.0, -2.0 * kPi * static_cast<double>(k) / static_cast<double>(n));
    scratch_.resize(static_cast<size_t>(n));
    return;
  }
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  inner_ = std::make_unique<FftPlan>(m);
  chirp_.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    // k^2 mod 2n keeps the angle small, so it stays exact for large k.
    const int64_t k2 =
        static_cast<int64_t>((static_cast<unsigned __int128>(k) * k) % static_cast<unsigned>(2 * n));
    chirp_[static_cast<size_t>(k)] = std::polar(1.0, -kPi * static_cast<double>(k2) / static_cast<double>(n));
  }
  filter_.assign(static_cast<size_t>(m), Complex{});
  filter_[0] = std::conj(chirp_[0]);
  for (int64_t k = 1; k < n; ++k) {
    filter_[static_cast<size_t>(k)] = std::conj(chirp_[static_cast<size_t>(k)]);
    filter_[static_cast<size_t>(m - k)] = std::conj(chirp_[static_cast<size_t>(k)]);
  }
  inner_->run(filter_.data(), true);
  scratch_.resize(static_cast<size_t>(m));
}

FftPlan::~FftPlan() = default;

void FftPlan::run(Complex* data, bool forward) {
  if (n_ <= 1) return;
  if (!radices_.empty())
    stockham(data, forward);
  else
    bluestein(data, forward);
}

// Stage s with radix p combines p interleaved sub-transforms of length `len`
// (the product of earlier radices): butterfly j < n/p reads x[j + r n/p],
// twiddles by w^(r k) with k = j mod len, and writes its p outputs len apart
// from (j / len) * len * p + k, so the result comes out in natural order.
void FftPlan::stockham(Complex* data, bool forward) {
  const int64_t n = n_;
  Complex* x = data;
  Complex* y = scratch_.data();
  int64_t len = 1;
  Complex v[kMaxDirectRadix + 1];
  Complex w[kMaxDirectRadix + 1];
  for (int64_t p : radices_) {
    const int64_t groups = n / p;
    const int64_t twiddle_step = n / (len * p);  // roots_ index of exp(-2 pi i / (len p))
    const int64_t radix_step = n / p;            // roots_ index of exp(-2 pi i / p)
    for (int64_t r = 0; r < p; ++r) w[r] = conj_if(roots_[static_cast<size_t>(r * radix_step)], !forward);
    for (int64_t j = 0; j < groups; ++j) {
      const int64_t k = j % len;
      for (int64_t r = 0; r < p; ++r) {
        const Complex t = conj_if(roots_[static_cast<size_t>((r * k * twiddle_step) % n)], !forward);
        v[r] = r == 0 ? x[j] : mul(x[j + r * groups], t);
      }
      const int64_t base = (j / len) * len * p + k;
      if (p == 2) {
        y[base] = v[0] + v[1];
        y[base + len] = v[0] - v[1];
      } else if (p == 4) {
        const Complex a = v[0] + v[2], b = v[0] - v[2], c = v[1] + v[3];
        const Complex d = forward ? Complex(v[1].imag() - v[3].imag(), v[3].real() - v[1].real())
                                  : Complex(v[3].imag() - v[1].imag(), v[1].real() - v[3].real());
        y[base] = a + c;
        y[base + len] = b + d;
        y[base + 2 * len] = a - c;
        y[base + 3 * len] = b - d;
      } else {
        for (int64_t q = 0; q < p; ++q) {
          Complex sum = v[0];
          for (int64_t r = 1; r < p; ++r) sum += mul(v[r], w[(r * q) % p]);
          y[base + q * len] = sum;
        }
      }
    }
    len *= p;
    std::swap(x, y);
  }
  if (x != data)
    for (int64_t i = 0; i < n; ++i) data[i] = x[i];
}

// X_k = c_k sum_j (x_j c_j) conj(c_{k-j}) with c_k = exp(-i pi k^2 / n): a
// circular convolution of length m >= 2n - 1 done with the power-of-two plan.
// The inverse transform is the conjugate of the forward one of the conjugate.
void FftPlan::bluestein(Complex* data, bool forward) {
  const int64_t n = n_;
  const int64_t m = inner_->size();
  Complex* a = scratch_.data();
  for (int64_t k = 0; k < n; ++k) a[k] = mul(conj_if(data[k], !forward), chirp_[static_cast<size_t>(k)]);
  for (int64_t k = n; k < m; ++k) a[k] = Complex{};
  inner_->run(a, true);
  for (int64_t k = 0; k < m; ++k) a[k] = mul(a[k], filter_[static_cast<size_t>(k)]);
  inner_->run(a, false);
  const double inv_m = 1.0 / static_cast<double>(m);
  for (int64_t k = 0; k < n; ++k)
    data[k] = conj_if(mul(a[k], chirp_[static_cast<size_t>(k)]) * inv_m, !forward);
}

void fft_dims(std::vector<Complex>& data, std::span<const int64_t> sizes, std::span<const int64_t> dims,
              bool forward) {
  if (data.empty()) return;
  std::vector<Complex> line;
  for (int64_t d : dims) {
    const DimSplit s = DimSplit::of(sizes, d);
    if (s.size <= 1) continue;
    FftPlan plan(s.size);
    line.resize(static_cast<size_t>(s.size));
    for (int64_t l = 0; l < s.lines(); ++l) {
      const int64_t start = s.line_start(l);
      for (int64_t i = 0; i < s.size; ++i)
        line[static_cast<size_t>(i)] = data[static_cast<size_t>(start + i * s.inner)];
      plan.run(line.data(), forward);
      for (int64_t i = 0; i < s.size; ++i)
        data[static_cast<size_t>(start + i * s.inner)] = line[static_cast<size_t>(i)];
    }
  }
}

}  // namespace kiln::cpu
