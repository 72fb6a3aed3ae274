#include "resample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace kiln::asr {
namespace {

constexpr double kPi = 3.14159265358979323846;
// Kernel half-width in zero crossings of the (lower-rate) sinc: 32 keeps the
// pass band flat to ~0.1 dB up to 90 % of the new Nyquist frequency.
constexpr int kZeroCrossings = 32;
// Cut-off as a fraction of the lower Nyquist frequency: leaves room for the
// window's transition band.
constexpr double kRolloff = 0.95;
// Rate pairs whose reduced output factor is at most this many phases get a
// precomputed kernel table (e.g. 22050 -> 16000 is 320 phases); others
// evaluate the kernel per tap.
constexpr int64_t kMaxPhases = 4096;

double kernel(double x, double cutoff, double half_width) {
  if (std::abs(x) > half_width) return 0.0;
  const double arg = cutoff * x;
  const double sinc = arg == 0.0 ? 1.0 : std::sin(kPi * arg) / (kPi * arg);
  return cutoff * sinc * (0.5 + 0.5 * std::cos(kPi * x / half_width));
}

}  // namespace

std::vector<float> resample(const std::vector<float>& input, int from_rate, int to_rate) {
  if (from_rate == to_rate || input.empty()) return input;
  const double ratio = static_cast<double>(to_rate) / from_rate;
  const double cutoff = kRolloff * std::min(1.0, ratio);  // in units of the input Nyquist
  const double half_width = kZeroCrossings / cutoff;       // in input samples
  const auto taps_each_side = static_cast<int64_t>(std::ceil(half_width));
  const int64_t taps = 2 * taps_each_side + 2;
  const auto n_out = static_cast<size_t>(std::floor(static_cast<double>(input.size()) * ratio));
  const auto n_in = static_cast<int64_t>(input.size());

  // Output i sits at input position i * up / down = base + phase / up.
  const int64_t g = std::gcd(from_rate, to_rate);
  const int64_t up = to_rate / g, down = from_rate / g;
  std::vector<double> table;
  if (up <= kMaxPhases) {
    table.resize(static_cast<size_t>(up * taps));
    for (int64_t p = 0; p < up; ++p) {
      const double frac = static_cast<double>(p) / static_cast<double>(up);
      for (int64_t k = 0; k < taps; ++k) {
        table[static_cast<size_t>(p * taps + k)] =
            kernel(static_cast<double>(k - taps_each_side) - frac, cutoff, half_width);
      }
    }
  }

  std::vector<float> out(n_out);
  for (size_t i = 0; i < n_out; ++i) {
    const int64_t position = static_cast<int64_t>(i) * down;
    const int64_t base = position / up, phase = position % up;
    const double frac = static_cast<double>(phase) / static_cast<double>(up);
    double acc = 0.0;
    for (int64_t k = 0; k < taps; ++k) {
      const int64_t j = base + k - taps_each_side;
      if (j < 0 || j >= n_in) continue;
      const double w = table.empty() ? kernel(static_cast<double>(k - taps_each_side) - frac, cutoff, half_width)
                                     : table[static_cast<size_t>(phase * taps + k)];
      acc += input[static_cast<size_t>(j)] * w;
    }
    out[i] = static_cast<float>(acc);
  }
  return out;
}

}  // namespace kiln::asr
