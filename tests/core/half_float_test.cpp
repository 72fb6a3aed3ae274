// Conversions checked against known encodings and a brute-force nearest-value
// reference (every finite half tried), not against the code's own formulas.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "core/half_float.h"

namespace kiln {
namespace {

// Value of a binary16 encoding computed from the definition.
double half_value(uint16_t bits) {
  const int sign = (bits & 0x8000) ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Nearest finite half by exhaustive search over magnitudes, ties to the even
// encoding, the input's sign applied after; beyond the rounding boundary of
// the largest half, infinity.
uint16_t reference_float_to_half(float value) {
  const double magnitude = std::fabs(static_cast<double>(value));
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (magnitude >= 65520.0) return sign | 0x7c00;
  uint16_t best = 0;
  double best_error = std::numeric_limits<double>::infinity();
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    const double error = std::fabs(half_value(static_cast<uint16_t>(bits)) - magnitude);
    if (error < best_error || (error == best_error && (bits & 1) == 0)) {
      best = static_cast<uint16_t>(bits);
      best_error = error;
    }
  }
  return static_cast<uint16_t>(sign | best);
}

TEST(FloatConvert, HalfKnownValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // tie between 65504 and 2^16 goes to inf
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie to even (zero)
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_NE(float_to_half(std::nanf("")) & 0x3ff, 0);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half_to_float(0xfc00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
}

TEST(FloatConvert, HalfDecodesEveryEncodingByDefinitionAndRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    if (((h >> 10) & 0x1f) == 0x1f) continue;  // inf/NaN checked above
    ASSERT_EQ(static_cast<double>(half_to_float(h)), half_value(h)) << std::hex << bits;
    ASSERT_EQ(float_to_half(half_to_float(h)), h) << std::hex << bits;
  }
}

TEST(FloatConvert, HalfRoundsLikeNearestEvenReference) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-27, 17);
  for (int i = 0; i < 300; ++i) {
    const float v = std::ldexp(mantissa(rng), exponent(rng));
    ASSERT_EQ(float_to_half(v), reference_float_to_half(v)) << v;
  }
  // Exact midpoints between neighbouring halves, both parities.
  for (uint16_t h : {uint16_t{0x3c00}, uint16_t{0x3c01}, uint16_t{0x0001}, uint16_t{0x0002}, uint16_t{0x03ff}}) {
    const float mid = static_cast<float>((half_value(h) + half_value(static_cast<uint16_t>(h + 1))) / 2);
    EXPECT_EQ(float_to_half(mid), (h & 1) ? h + 1 : h) << std::hex << h;
  }
}

TEST(FloatConvert, BFloat16) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0xc040), -3.0f);
  // 1 + 2^-8 is the midpoint between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is the midpoint of 1 + 2^-7 (odd) and 1 + 2^-6: rounds up.
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  // Reference: the nearest of the two truncation neighbours, computed in double.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  for (int i = 0; i < 10000; ++i) {
    const float v = dist(rng);
    const uint16_t low = static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
    const double a = bf16_to_float(low), b = bf16_to_float(static_cast<uint16_t>(low + 1));
    const double ea = std::fabs(a - v), eb = std::fabs(b - v);
    const uint16_t expected = ea < eb ? low : eb < ea ? static_cast<uint16_t>(low + 1) : ((low & 1) ? low + 1 : low);
    ASSERT_EQ(float_to_bf16(v), expected) << v;
  }
}

TEST(FloatConvert, Float8) {
  EXPECT_EQ(float8_e4m3fn_to_float(0x38), 1.0f);
  EXPECT_EQ(float8_e4m3fn_to_float(0xb8), -1.0f);
  EXPECT_EQ(float8_e4m3fn_to_float(0x7e), 448.0f);
  EXPECT_EQ(float8_e4m3fn_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(float8_e4m3fn_to_float(0x08), std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(float8_e4m3fn_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(float8_e4m3fn_to_float(0xff)));
  EXPECT_EQ(float8_e4m3fn_to_float(0x78), 256.0f);  // exponent 15 is finite in e4m3fn
  EXPECT_EQ(float8_e5m2_to_float(0x3c), 1.0f);
  EXPECT_EQ(float8_e5m2_to_float(0x7b), 57344.0f);
  EXPECT_TRUE(std::isinf(float8_e5m2_to_float(0x7c)));
  EXPECT_EQ(float8_e5m2_to_float(0x01), std::ldexp(1.0f, -16));
}

}  // namespace
}  // namespace kiln
