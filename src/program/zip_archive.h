// ZipArchive: a read-only view of a ZIP file's stored (uncompressed) entries,
// as PyTorch writes them for `.pt2` packages (torch's PyTorchFileWriter stores
// every entry uncompressed, with sizes in a trailing data descriptor, and
// switches to ZIP64 records past 4 GiB). Kiln reads packages without zlib:
// entries compressed with any other method are listed but refused on read.
//
// open() reads the whole file into private memory (RegularFile: a FIFO or a
// file truncated meanwhile is an error, never a hang or a SIGBUS) and validates the end-of-central-directory record
// (ZIP64 included), every central directory entry and its local header, all
// with overflow-checked bounds; read() checks the entry's CRC-32.
//
// Ownership: owns its private copy; spans from read() are valid while the
// ZipArchive lives. Movable, not copyable. Thread-safe for concurrent reads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"
#include "program/private_buffer.h"

namespace kiln {

struct ZipEntry {
  std::string name;
  /// 0: stored; 8: deflate; others as the ZIP specification numbers them.
  uint16_t method = 0;
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;  ///< uncompressed
  /// Absolute offset of the entry's bytes (after its local header).
  uint64_t data_offset = 0;
};

class ZipArchive {
 public:
  /// Reads and validates `path`. NotFound / IoError for the file, InvalidProgram
  /// naming the record and offset for a corrupt or truncated archive.
  static Result<ZipArchive> open(const std::string& path);
  /// Validates a copy of `bytes`; `label` names it in messages (tests, fuzzing).
  static Result<ZipArchive> from_bytes(std::span<const uint8_t> bytes, const std::string& label);

  /// Whether `bytes` starts like a ZIP file (a local file header, or the end
  /// record of an empty archive).
  static bool has_zip_magic(std::span<const uint8_t> bytes) noexcept;

  const std::vector<ZipEntry>& entries() const noexcept { return entries_; }
  /// nullptr if no entry has that exact name.
  const ZipEntry* find(std::string_view name) const noexcept;
  /// The entry's bytes in place. NotSupported for a compressed or encrypted
  /// entry (naming it and its method), IntegrityError on a CRC-32 mismatch.
  Result<std::span<const uint8_t>> read(const ZipEntry& entry) const;

  const std::string& label() const noexcept { return label_; }

 private:
  ZipArchive() = default;
  static Result<ZipArchive> parse(PrivateBuffer file, const std::string& label);

  PrivateBuffer file_;
  std::string label_;
  std::vector<ZipEntry> entries_;
};

/// CRC-32 (ISO-HDLC, the one ZIP uses) of `bytes`.
uint32_t crc32_of(std::span<const uint8_t> bytes) noexcept;

}  // namespace kiln
