// Writes every byte, retrying short writes and EINTR.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <span>

namespace kiln {

/// 0 once all of `bytes` is written to `fd`, else the errno of the failure
/// (ENOSPC for a write that made no progress). Callers word their own error.
inline int write_all(int fd, std::span<const uint8_t> bytes) noexcept {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return 0;
}

}  // namespace kiln
