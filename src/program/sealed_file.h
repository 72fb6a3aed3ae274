// An anonymous in-memory file (memfd) holding a copy of some bytes, sealed
// against every later write, shrink or grow before anyone reads it, and
// compared with the bytes after sealing: what is read through it (by dlopen,
// by ProgramFile) is exactly what was checked, and nothing in this process or
// another that reaches the descriptor can change it. Reached by path through
// /proc/self/fd. Owns its descriptor; movable.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kiln/error.h"

namespace kiln {

class SealedFile {
 public:
  /// `bytes` in a new sealed memfd named `name` (shown in /proc/self/maps).
  /// NotSupported where memfd_create or sealing is unavailable (old kernels,
  /// some sandboxes), or setting disable_memfd is on; IoError /
  /// IntegrityError naming `what` otherwise.
  static Result<SealedFile> create(std::span<const uint8_t> bytes, const char* name, std::string_view what);

  SealedFile(SealedFile&& other) noexcept;
  SealedFile& operator=(SealedFile&& other) noexcept;
  SealedFile(const SealedFile&) = delete;
  SealedFile& operator=(const SealedFile&) = delete;
  ~SealedFile();

  int fd() const noexcept { return fd_; }
  /// "/proc/self/fd/N": a path that opens this file while it is alive.
  std::string path() const;
  /// Gives up ownership of the descriptor (the caller closes it).
  int release() noexcept;

 private:
  explicit SealedFile(int fd) noexcept : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace kiln
