#include "program/sha256.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define KILN_SHA256_X86 1
#endif

namespace kiln {
namespace {

// First 32 bits of the fractional parts of the cube roots of the first 64
// primes (FIPS 180-4, 4.2.2).
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

inline uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// FIPS 180-4 6.2.2 on one 64-byte block, one round at a time.
void compress_portable(std::array<uint32_t, 8>& state_, const uint8_t* block) noexcept {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) w[t] = load_be32(block + 4 * t);
  for (int t = 16; t < 64; ++t) {
    const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    const uint32_t big_s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    const uint32_t ch = (e & f) ^ (~e & g);
    const uint32_t t1 = h + big_s1 + ch + kRound[t] + w[t];
    const uint32_t big_s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    const uint32_t t2 = big_s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

#if KILN_SHA256_X86
bool cpu_has_sha() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool ssse3 = (c & (1u << 9)) != 0, sse41 = (c & (1u << 19)) != 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return ssse3 && sse41 && (b & (1u << 29)) != 0;  // CPUID.7.0:EBX.SHA
}

// The same rounds with the SHA extensions. SHA256RNDS2 does two rounds on the
// state split as {A,B,E,F} / {C,D,G,H} (A, C in the top lane); after two
// rounds the old {A,B,E,F} is the new {C,D,G,H}. SHA256MSG1/MSG2 compute the
// sigma0 / sigma1 parts of the message schedule four words at a time.
__attribute__((target("sha,sse4.1,ssse3"))) void compress_sha_ni(std::array<uint32_t, 8>& state,
                                                                  const uint8_t* blocks, size_t count) noexcept {
  // Byte order within each 32-bit word: the message is big-endian.
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[0]));  // lanes a,b,c,d
  __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[4]));  // lanes e,f,g,h
  const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);                            // lanes b,a,d,c
  const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);                            // lanes h,g,f,e
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);                                 // lanes f,e,b,a
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);                              // lanes h,g,d,c
  for (; count > 0; --count, blocks += 64) {
    const __m128i abef_in = abef, cdgh_in = cdgh;
    __m128i msg[4];  // msg[g % 4] holds schedule words 4g..4g+3 of the latest group g
    for (int g = 0; g < 16; ++g) {
      __m128i m;
      if (g < 4) {
        m = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 16 * g)), bswap);
      } else {
        // W[t-16] + s0(W[t-15]) + W[t-7], then + s1(W[t-2]).
        const __m128i partial = _mm_add_epi32(_mm_sha256msg1_epu32(msg[g % 4], msg[(g + 1) % 4]),
                                              _mm_alignr_epi8(msg[(g + 3) % 4], msg[(g + 2) % 4], 4));
        m = _mm_sha256msg2_epu32(partial, msg[(g + 3) % 4]);
      }
      msg[g % 4] = m;
      __m128i wk = _mm_add_epi32(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kRound[4 * g])));
      __m128i next = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      cdgh = abef;
      abef = next;
      wk = _mm_shuffle_epi32(wk, 0x0E);  // the upper two W+K values
      next = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      cdgh = abef;
      abef = next;
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);  // lanes a,b,e,f
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);  // lanes g,h,c,d
  dcba = _mm_blend_epi16(feba, dchg, 0xF0);             // lanes a,b,c,d
  hgfe = _mm_alignr_epi8(dchg, feba, 8);                // lanes e,f,g,h
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[0]), dcba);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[4]), hgfe);
}
#endif

}  // namespace

bool sha256_hardware_available() noexcept {
#if KILN_SHA256_X86
  static const bool available = cpu_has_sha();
  return available;
#else
  return false;
#endif
}

Sha256::Sha256(bool allow_hardware) noexcept
    // Initial hash value (FIPS 180-4, 5.3.3).
    : state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19},
      hardware_(allow_hardware && sha256_hardware_available()) {}

void Sha256::compress(const uint8_t* blocks, size_t count) noexcept {
#if KILN_SHA256_X86
  if (hardware_) {
    compress_sha_ni(state_, blocks, count);
    return;
  }
#endif
  for (; count > 0; --count, blocks += 64) compress_portable(state_, blocks);
}

void Sha256::update(std::span<const uint8_t> bytes) noexcept {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  total_bytes_ += n;
  if (buffered_ > 0) {
    const size_t take = std::min(n, buffer_.size() - buffered_);
    std::memcpy(buffer_.data() + buffered_, p, take);
    buffered_ += take;
    p += take;
    n -= take;
    if (buffered_ < buffer_.size()) return;
    compress(buffer_.data(), 1);
    buffered_ = 0;
  }
  // Whole blocks straight from the caller's memory: no copy for large inputs.
  const size_t whole = n / 64;
  if (whole > 0) compress(p, whole);
  p += whole * 64;
  n -= whole * 64;
  if (n > 0) {
    std::memcpy(buffer_.data(), p, n);
    buffered_ = n;
  }
}

Sha256Digest Sha256::finish() noexcept {
  // Padding (FIPS 180-4, 5.1.1): a 1 bit, zeros, then the length in bits as a
  // 64-bit big-endian integer, ending on a block boundary.
  const uint64_t bit_length = total_bytes_ * 8;
  buffer_[buffered_++] = 0x80;
  if (buffered_ > 56) {
    std::memset(buffer_.data() + buffered_, 0, 64 - buffered_);
    compress(buffer_.data(), 1);
    buffered_ = 0;
  }
  std::memset(buffer_.data() + buffered_, 0, 56 - buffered_);
  for (int i = 0; i < 8; ++i) buffer_[56 + i] = static_cast<uint8_t>(bit_length >> (56 - 8 * i));
  compress(buffer_.data(), 1);
  Sha256Digest out;
  for (int i = 0; i < 8; ++i) {
    out[4 * i] = static_cast<uint8_t>(state_[i] >> 24);
    out[4 * i + 1] = static_cast<uint8_t>(state_[i] >> 16);
    out[4 * i + 2] = static_cast<uint8_t>(state_[i] >> 8);
    out[4 * i + 3] = static_cast<uint8_t>(state_[i]);
  }
  return out;
}

Sha256Digest sha256(std::span<const uint8_t> bytes) noexcept {
  Sha256 hasher;
  hasher.update(bytes);
  return hasher.finish();
}

}  // namespace kiln
