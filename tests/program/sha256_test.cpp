// SHA-256 against the FIPS 180-4 / NIST example vectors.
#include "program/sha256.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln {
namespace {

std::string hex(const Sha256Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string digest_with(bool hardware, std::span<const uint8_t> bytes) {
  Sha256 h(hardware);
  h.update(bytes);
  return hex(h.finish());
}

// Both code paths (SHA extensions when the CPU has them, and portable).
class Sha256Paths : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(HardwareAndPortable, Sha256Paths, ::testing::Values(true, false));

TEST_P(Sha256Paths, NistVectorsOnEachPath) {
  const bool hw = GetParam();
  EXPECT_EQ(digest_with(hw, as_bytes("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest_with(hw, as_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(digest_with(hw, as_bytes(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, HardwareAndPortableAgreeOnManyInputs) {
  if (!sha256_hardware_available()) GTEST_SKIP() << "no SHA extensions: only the portable path exists here";
  std::vector<uint8_t> data(5000);
  uint32_t x = 12345;
  for (auto& b : data) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 16);
  for (size_t n = 0; n <= data.size(); n += 37)
    EXPECT_EQ(digest_with(true, {data.data(), n}), digest_with(false, {data.data(), n})) << "n=" << n;
}

TEST(Sha256, NistVectors) {
  EXPECT_EQ(hex(sha256(as_bytes(""))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256(as_bytes("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256(as_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(as_bytes("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
                                "lmnopqrsmnopqrstnopqrstu"))),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  const std::string million(1000000, 'a');
  EXPECT_EQ(hex(sha256(as_bytes(million))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShotAtEveryPaddingBoundary) {
  // Lengths around 55/56/64 bytes exercise the one- vs two-block padding paths.
  std::vector<uint8_t> data(200);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  for (size_t n : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200}) {
    const auto whole = sha256({data.data(), n});
    for (size_t split : {size_t{0}, size_t{1}, n / 2, n}) {
      if (split > n) continue;
      Sha256 h;
      h.update({data.data(), split});
      h.update({data.data() + split, n - split});
      EXPECT_EQ(whole, h.finish()) << "n=" << n << " split=" << split;
    }
  }
}

}  // namespace
}  // namespace kiln
