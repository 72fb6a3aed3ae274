// AtomicFile: replaces a file by writing a temporary file in the target's
// directory and renaming it over the target. A process that has the old file
// open or mapped keeps the old bytes (the rename gives the path a new inode;
// the old one lives on until its last user lets go), and whoever opens the
// path sees the old file or the complete new one, never a mix or a truncated
// file. Every writer of program files, data files and CLI outputs goes
// through it.
//
// Ownership: owns the temporary file; it is removed when the object is
// destroyed before commit() succeeded, whatever failed. Movable, not
// copyable. One object per thread; distinct objects may be used concurrently.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>

#include "kiln/error.h"

namespace kiln {

class AtomicFile {
 public:
  /// Creates a fresh temporary file (a unique name, never an existing file)
  /// next to `target`. Its permissions are `mode` when given; otherwise those
  /// of the existing target, or for a new target what creating it directly
  /// gives (0666 less the umask), so replacing a file never changes who may
  /// read it. A symbolic link as `target` is followed: the file it names is
  /// replaced, as writing through the link would. IoError naming `target`
  /// when the directory does not admit a new file.
  static Result<AtomicFile> create(const std::string& target, std::optional<mode_t> mode = std::nullopt);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  /// Appends `bytes` to the temporary file. IoError naming the target.
  Error write(std::span<const uint8_t> bytes);

  /// Forces the written bytes to the disk and closes the temporary file, so
  /// that a later commit() cannot fail on the data. commit() does it when it
  /// was not done; callers replacing several files sync all before renaming any.
  Error sync();

  /// Renames the temporary file over the target (after sync()). On failure
  /// the temporary file is removed and the target is untouched.
  Error commit();

  /// The target as the caller named it.
  const std::string& target() const noexcept { return target_; }
  /// The temporary file's path ("" once committed or discarded).
  const std::string& temp_path() const noexcept { return temp_; }

 private:
  AtomicFile() = default;
  void discard() noexcept;

  std::string target_;  // as the caller named it, for messages
  std::string final_;   // what the rename replaces
  std::string temp_;
  int fd_ = -1;
  bool failed_ = false;  // a write failed: nothing may be committed
};

/// Writes the concatenation of `parts` to `target` through an AtomicFile.
Error replace_file_atomically(const std::string& target,
                              std::initializer_list<std::span<const uint8_t>> parts,
                              std::optional<mode_t> mode = std::nullopt);

}  // namespace kiln
