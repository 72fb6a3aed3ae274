// What a path that is not a regular file is, for messages: Kiln reads and
// replaces regular files only, and says so naming the kind it found.
#pragma once

#include <sys/stat.h>

namespace kiln {

/// "a directory", "a FIFO (named pipe)", ... for a non-regular `mode`.
inline const char* file_type_name(mode_t mode) noexcept {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace kiln
