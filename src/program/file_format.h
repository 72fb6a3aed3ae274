// Fixed binary headers of the `.kiln` program file and of its external data
// files, and the layout constants both the reader and the writer use. The
// exact byte layout is documented in docs/program-format.md; every integer is
// little-endian and is read byte by byte, so the mapping needs no alignment
// and a big-endian host would still read it correctly.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "program/sha256.h"

namespace kiln::program_format {

/// First 8 bytes of a program file.
inline constexpr std::array<uint8_t, 8> kProgramMagic = {'K', 'I', 'L', 'N', 'P', 'R', 'O', 'G'};
/// First 8 bytes of an external data file.
inline constexpr std::array<uint8_t, 8> kDataMagic = {'K', 'I', 'L', 'N', 'D', 'A', 'T', 'A'};

/// Size of the program header written by this version; readers accept
/// larger values (a later version may append fields) but never smaller.
inline constexpr uint32_t kProgramHeaderSize = 80;
inline constexpr uint32_t kDataHeaderSize = 32;

/// Default alignment of named data, and the one weights are raised to so a
/// mapped blob can be handed to the model in place.
inline constexpr uint64_t kDefaultAlignment = 64;
inline constexpr uint64_t kWeightsAlignment = 4096;
/// Largest alignment a named entry may ask for: mappings (and from_bytes
/// copies) are only guaranteed to start on a 4 KiB boundary.
inline constexpr uint64_t kMaxAlignment = 4096;
/// Where the data region of an external data file starts.
inline constexpr uint64_t kDataBaseOffset = 4096;
/// The FlatBuffer starts on this boundary so its scalars are naturally aligned.
inline constexpr uint64_t kFlatbufferAlignment = 8;

// Byte offsets of the program header fields (named in error messages).
inline constexpr uint64_t kOffMagic = 0;
inline constexpr uint64_t kOffVersion = 8;
inline constexpr uint64_t kOffHeaderSize = 12;
inline constexpr uint64_t kOffFlatbufferOffset = 16;
inline constexpr uint64_t kOffFlatbufferSize = 24;
inline constexpr uint64_t kOffSegmentBase = 32;
inline constexpr uint64_t kOffSegmentDataSize = 40;
inline constexpr uint64_t kOffFlatbufferSha256 = 48;

// Byte offsets of the data file header fields.
inline constexpr uint64_t kDataOffVersion = 8;
inline constexpr uint64_t kDataOffHeaderSize = 12;
inline constexpr uint64_t kDataOffBase = 16;
inline constexpr uint64_t kDataOffSize = 24;

struct ProgramHeader {
  uint32_t version = 0;
  uint32_t header_size = 0;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
  Sha256Digest flatbuffer_sha256{};
};

struct DataHeader {
  uint32_t version = 0;
  uint32_t header_size = 0;
  uint64_t data_base_offset = 0;
  uint64_t data_size = 0;
};

inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline uint64_t load_le64(const uint8_t* p) { return uint64_t{load_le32(p)} | (uint64_t{load_le32(p + 4)} << 32); }
inline void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

/// Field values only; the caller has checked that `bytes` holds at least
/// kProgramHeaderSize bytes and the magic.
inline ProgramHeader decode_program_header(const uint8_t* p) {
  ProgramHeader h;
  h.version = load_le32(p + kOffVersion);
  h.header_size = load_le32(p + kOffHeaderSize);
  h.flatbuffer_offset = load_le64(p + kOffFlatbufferOffset);
  h.flatbuffer_size = load_le64(p + kOffFlatbufferSize);
  h.segment_base_offset = load_le64(p + kOffSegmentBase);
  h.segment_data_size = load_le64(p + kOffSegmentDataSize);
  for (size_t i = 0; i < 32; ++i) h.flatbuffer_sha256[i] = p[kOffFlatbufferSha256 + i];
  return h;
}

inline std::array<uint8_t, kProgramHeaderSize> encode_program_header(const ProgramHeader& h) {
  std::array<uint8_t, kProgramHeaderSize> out{};
  for (size_t i = 0; i < 8; ++i) out[i] = kProgramMagic[i];
  store_le32(out.data() + kOffVersion, h.version);
  store_le32(out.data() + kOffHeaderSize, h.header_size);
  store_le64(out.data() + kOffFlatbufferOffset, h.flatbuffer_offset);
  store_le64(out.data() + kOffFlatbufferSize, h.flatbuffer_size);
  store_le64(out.data() + kOffSegmentBase, h.segment_base_offset);
  store_le64(out.data() + kOffSegmentDataSize, h.segment_data_size);
  for (size_t i = 0; i < 32; ++i) out[kOffFlatbufferSha256 + i] = h.flatbuffer_sha256[i];
  return out;
}

inline DataHeader decode_data_header(const uint8_t* p) {
  DataHeader h;
  h.version = load_le32(p + kDataOffVersion);
  h.header_size = load_le32(p + kDataOffHeaderSize);
  h.data_base_offset = load_le64(p + kDataOffBase);
  h.data_size = load_le64(p + kDataOffSize);
  return h;
}

inline std::array<uint8_t, kDataHeaderSize> encode_data_header(const DataHeader& h) {
  std::array<uint8_t, kDataHeaderSize> out{};
  for (size_t i = 0; i < 8; ++i) out[i] = kDataMagic[i];
  store_le32(out.data() + kDataOffVersion, h.version);
  store_le32(out.data() + kDataOffHeaderSize, h.header_size);
  store_le64(out.data() + kDataOffBase, h.data_base_offset);
  store_le64(out.data() + kDataOffSize, h.data_size);
  return out;
}

/// a + b, false on overflow.
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// Rounds up to a multiple of `alignment` (a power of two); the caller keeps
/// values far below 2^63, so this cannot overflow.
inline uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) & ~(alignment - 1); }

}  // namespace kiln::program_format
