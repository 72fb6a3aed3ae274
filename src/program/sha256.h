// SHA-256 (FIPS 180-4), used to check the program file's FlatBuffer and each
// named data entry. Written here rather than taken from a crypto library so
// the runtime has no extra link dependency; it is not used for secrets, so
// constant-time behaviour does not matter.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace kiln {

using Sha256Digest = std::array<uint8_t, 32>;

/// True when this CPU has the x86 SHA extensions, which Sha256 then uses
/// (about 5-10x faster than the portable code; digests of large weights are
/// on the load path).
bool sha256_hardware_available() noexcept;

/// Incremental hasher. Not thread-safe; one instance per thread of use.
class Sha256 {
 public:
  /// `allow_hardware = false` forces the portable code (tests compare both).
  explicit Sha256(bool allow_hardware = true) noexcept;
  void update(std::span<const uint8_t> bytes) noexcept;
  /// Finishes and returns the digest; the hasher must not be used afterwards
  /// (construct a new one).
  Sha256Digest finish() noexcept;

 private:
  void compress(const uint8_t* blocks, size_t count) noexcept;

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
  bool hardware_ = false;
};

/// One-shot digest of `bytes`.
Sha256Digest sha256(std::span<const uint8_t> bytes) noexcept;

}  // namespace kiln
