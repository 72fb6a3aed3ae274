// PrivateBuffer: bytes in anonymous memory that belongs to this process alone.
//
// Why: whatever Kiln checks (a digest, a signature) and then uses must be a
// copy that nothing outside the process can change. A file mapping is not:
// another process may rewrite the file (the mapping shows the new bytes) or
// truncate it (the next access raises SIGBUS). Everything Kiln keeps from a
// file after opening it is read into a PrivateBuffer.
//
// The memory starts on a page boundary (4 KiB), so an entry's alignment in
// its file (at most 4 KiB) is also its address alignment. Buffers under 2 MiB
// are page-aligned heap memory; larger ones are anonymous mappings of their
// own on a huge-page boundary, given back to the system when freed.
//
// Ownership: owns the pages; releases them on destruction. Movable, not
// copyable. Filled through mutable_data() by its creator, then read-only by
// convention (shared as std::shared_ptr<const PrivateBuffer>). Thread-safe for
// concurrent reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "kiln/error.h"

namespace kiln {

class PrivateBuffer {
 public:
  PrivateBuffer() = default;
  PrivateBuffer(PrivateBuffer&& other) noexcept;
  PrivateBuffer& operator=(PrivateBuffer&& other) noexcept;
  PrivateBuffer(const PrivateBuffer&) = delete;
  PrivateBuffer& operator=(const PrivateBuffer&) = delete;
  ~PrivateBuffer();

  /// `size` bytes of zeroed, page-aligned memory. OutOfMemory naming `what`
  /// when the system refuses. A zero size allocates nothing.
  static Result<PrivateBuffer> allocate(uint64_t size, std::string_view what);
  /// A copy of `bytes`.
  static Result<PrivateBuffer> copy_of(std::span<const uint8_t> bytes, std::string_view what);

  const uint8_t* data() const noexcept { return data_; }
  uint8_t* mutable_data() noexcept { return data_; }
  uint64_t size() const noexcept { return size_; }
  std::span<const uint8_t> bytes() const noexcept { return {data_, static_cast<size_t>(size_)}; }

 private:
  void release() noexcept;

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  size_t mapped_ = 0;  // bytes mapped (size rounded up to pages); 0: heap memory
};

}  // namespace kiln
