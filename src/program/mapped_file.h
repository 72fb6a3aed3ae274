// Read-only bytes of a file, memory-mapped (MAP_PRIVATE, PROT_READ), or a
// page-aligned heap copy of caller bytes. Either way data() starts on a page
// boundary, so an entry's file offset alignment is also its address alignment.
//
// Ownership: owns the mapping/copy and releases it on destruction. Movable,
// not copyable. Thread-safe for concurrent reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kiln/error.h"

namespace kiln {

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  /// Maps `path` read-only. NotFound if it does not exist, IoError for other
  /// OS failures. An empty file maps to an empty span (nothing is mapped).
  /// `what` names the file's role in messages ("program file", "external data file").
  static Result<MappedFile> map(const std::string& path, const std::string& what);
  /// Copies `bytes` into page-aligned memory. OutOfMemory if that fails.
  static Result<MappedFile> copy_of(std::span<const uint8_t> bytes);

  const uint8_t* data() const noexcept { return data_; }
  uint64_t size() const noexcept { return size_; }
  std::span<const uint8_t> bytes() const noexcept { return {data_, static_cast<size_t>(size_)}; }

 private:
  void release() noexcept;

  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;  // munmap vs free
};

}  // namespace kiln
