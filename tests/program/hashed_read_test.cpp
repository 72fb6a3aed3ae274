// read_hashed's two ways of reading a blob while hashing it: both fill the
// buffer with the source's bytes and give the digest of exactly those bytes;
// a read that fails part-way (a file truncated meanwhile) is reported with its
// message, whichever thread saw it.
#include "program/hashed_read.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace kiln {
namespace {

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::vector<uint8_t> out(n);
  std::mt19937 rng(seed);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// A source of `bytes` that fails every read reaching past `fail_from`.
ChunkReader source(const std::vector<uint8_t>& bytes, uint64_t fail_from = UINT64_MAX) {
  return [&bytes, fail_from](uint64_t offset, std::span<uint8_t> out) -> Error {
    if (offset + out.size() > fail_from)
      return set_error(Error::IoError, "fake file ends at " + std::to_string(fail_from));
    std::memcpy(out.data(), bytes.data() + offset, out.size());
    return Error::Ok;
  };
}

TEST(HashedRead, BothWaysCopyAndHashEveryByte) {
  // Not a multiple of the 4 MiB chunk, so the last chunk is short.
  const auto bytes = random_bytes((size_t{9} << 20) + 12345, 1);
  const Sha256Digest want = sha256(bytes);
  std::vector<uint8_t> sequential(bytes.size()), ahead(bytes.size());
  Sha256 first, second;
  ASSERT_EQ(read_then_hash(source(bytes), sequential, &first), Error::Ok);
  ASSERT_EQ(read_ahead_and_hash(source(bytes), ahead, second), Error::Ok);
  EXPECT_EQ(sequential, bytes);
  EXPECT_EQ(ahead, bytes);
  EXPECT_EQ(first.finish(), want);
  EXPECT_EQ(second.finish(), want);
  std::vector<uint8_t> chosen(bytes.size());
  Sha256 third;
  ASSERT_EQ(read_hashed(source(bytes), chosen, &third), Error::Ok);
  EXPECT_EQ(chosen, bytes);
  EXPECT_EQ(third.finish(), want);
  std::vector<uint8_t> unhashed(bytes.size());
  ASSERT_EQ(read_hashed(source(bytes), unhashed, nullptr), Error::Ok);
  EXPECT_EQ(unhashed, bytes);
}

TEST(HashedRead, AFailingReadIsReportedWithItsMessageBothWays) {
  const auto bytes = random_bytes(size_t{10} << 20, 2);
  std::vector<uint8_t> out(bytes.size());
  Sha256 hasher;
  clear_error();
  EXPECT_EQ(read_then_hash(source(bytes, 6 << 20), out, &hasher), Error::IoError);
  EXPECT_NE(last_error_message().find("fake file ends at 6291456"), std::string::npos) << last_error_message();
  clear_error();
  Sha256 other;
  EXPECT_EQ(read_ahead_and_hash(source(bytes, 6 << 20), out, other), Error::IoError);
  EXPECT_NE(last_error_message().find("fake file ends at 6291456"), std::string::npos) << last_error_message();
}

}  // namespace
}  // namespace kiln
