// RegularFile: a file Kiln reads (program, external data, package, key,
// tensor file), opened so that no path can hang or crash the process.
//
// - open() never blocks: a FIFO, a character device or a socket given as a
//   path would block in open(2) or read(2) forever, so the file is opened
//   with O_NONBLOCK, its type checked with fstat before anything is read,
//   and anything but a regular file refused with a message naming the path
//   and what it is.
// - Bytes are read with pread into memory the caller owns, never mapped: a
//   file truncated while it is in use makes a read come up short, which is
//   reported as IoError naming the file, instead of a SIGBUS on a mapping.
//
// Ownership: owns the descriptor (closed on destruction). Movable, not
// copyable. Thread-safe: reads take explicit offsets.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kiln/error.h"
#include "program/private_buffer.h"

namespace kiln {

class RegularFile {
 public:
  RegularFile() = default;
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  /// Opens `path` for reading. `what` names the file's role in messages
  /// ("program file", "public key file"). NotFound if it does not exist,
  /// IoError if it cannot be opened or is not a regular file (the message
  /// says what it is: a directory, a FIFO, ...).
  static Result<RegularFile> open(const std::string& path, const std::string& what);

  /// The file's size when it was opened; reads never go past it.
  uint64_t size() const noexcept { return size_; }
  /// "program file 'model.kiln'": the prefix of this file's messages.
  const std::string& label() const noexcept { return label_; }

  /// Fills `out` from `offset`. IoError naming the file and the byte range
  /// when the range lies past the size at open, when the file now ends
  /// earlier (it was truncated) or when the read fails.
  Error read_exact(uint64_t offset, std::span<uint8_t> out) const;
  /// [offset, offset + size) in a new PrivateBuffer.
  Result<PrivateBuffer> read(uint64_t offset, uint64_t size) const;
  /// The whole file, refused with InvalidArgument when it is larger than
  /// `max_size` (key and tensor files are small; this bounds a hostile path).
  Result<PrivateBuffer> read_all(uint64_t max_size) const;

 private:
  void close() noexcept;

  int fd_ = -1;
  uint64_t size_ = 0;
  std::string label_;
};

}  // namespace kiln
