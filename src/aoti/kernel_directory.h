// KernelDirectory: a private directory holding a method's GPU kernel files
// when its library does not embed them (a .pt2 package compiled with
// aot_inductor.embed_kernel_binary=False). The library loads each kernel by
// file name from the directory given at container creation (its "cubin_dir"),
// lazily at the first run that needs it, so the directory lives as long as the
// method. The program names the files in method metadata `kernel_files`: a
// comma-separated list of named-data keys, each ending in "/<file name>".
//
// Ownership: owns the directory and its files; the destructor removes them.
// Not copyable; used by one AotiMethod.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln::aoti {

class KernelDirectory {
 public:
  /// Writes the method's kernel files (each checked against its SHA-256) into
  /// a new directory under $TMPDIR (default /tmp). nullptr when the method has
  /// none. IoError if the directory or a file cannot be written.
  static Result<std::unique_ptr<KernelDirectory>> create(const ProgramFile& program, const MethodInfo& method);
  ~KernelDirectory();
  KernelDirectory(const KernelDirectory&) = delete;
  KernelDirectory& operator=(const KernelDirectory&) = delete;

  const std::string& path() const noexcept { return path_; }

 private:
  KernelDirectory() = default;
  std::string path_;
  std::vector<std::string> files_;
};

/// The method metadata key listing the kernel files' named-data keys.
inline constexpr const char* kKernelFilesKey = "kernel_files";

}  // namespace kiln::aoti
