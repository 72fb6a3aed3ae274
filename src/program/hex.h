// Lower-case hexadecimal text of bytes (digests, keys, magic numbers in messages).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace kiln {

inline std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace kiln
