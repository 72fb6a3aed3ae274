// Philox4x32-10, the counter-based generator Kiln's random ops draw from (the
// same family cuRAND and ATen use): block (seed, counter) gives four
// independent 32-bit words, so any thread or GPU lane can compute its own
// numbers from (seed, position) with no shared state, and a stream of numbers
// is reproducible from its seed whatever the thread count. Header-only, usable
// from host and CUDA device code.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>

#include "core/host_device.h"

namespace kiln {

struct PhiloxBlock {
  uint32_t v[4];
};

/// The four words of block number `counter` of the stream keyed by `seed`.
KILN_HOST_DEVICE inline PhiloxBlock philox4x32_10(uint64_t seed, uint64_t counter) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

/// A double uniform in [0, 1) from two 32-bit words (53 random bits).
KILN_HOST_DEVICE inline double uniform_double(uint32_t a, uint32_t b) {
  const uint64_t bits = (static_cast<uint64_t>(a) << 21) ^ (static_cast<uint64_t>(b) >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// A standard normal from one block (Box-Muller; 1 - u keeps the logarithm's
/// argument in (0, 1]).
KILN_HOST_DEVICE inline double philox_normal(const PhiloxBlock& b) {
  const double u1 = uniform_double(b.v[0], b.v[1]), u2 = uniform_double(b.v[2], b.v[3]);
  return ::sqrt(-2.0 * ::log(1.0 - u1)) * ::cos(2.0 * 3.14159265358979323846 * u2);
}

/// An integer uniform in [low, high) (high > low) from one block: the top 64
/// bits of a 128-bit product, bias below 2^-64 * range.
KILN_HOST_DEVICE inline int64_t philox_uniform_int(const PhiloxBlock& b, int64_t low, int64_t high) {
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const uint64_t bits = (static_cast<uint64_t>(b.v[0]) << 32) | b.v[1];
#if defined(__CUDA_ARCH__)
  const uint64_t scaled = __umul64hi(bits, range);
#else
  const auto scaled = static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * range) >> 64);
#endif
  return static_cast<int64_t>(static_cast<uint64_t>(low) + scaled);
}

/// Shuffles perm[0, n) in place (Fisher-Yates from the back: position i swaps
/// with a uniform j in [0, i], drawn from block first + i), so randperm gives
/// the same permutation for the same seed on every device. Host only.
inline void philox_shuffle(int64_t* perm, int64_t n, uint64_t seed, uint64_t first) {
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(perm[i], perm[philox_uniform_int(philox4x32_10(seed, first + static_cast<uint64_t>(i)), 0, i + 1)]);
}

}  // namespace kiln
