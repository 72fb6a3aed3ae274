// A shared library opened on first use with dlopen (cuBLASLt, cuDNN), so a
// model that needs neither never loads them and a machine without them can
// still run every other model. Thread-safe; the library stays loaded for the
// life of the process once opened.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "core/settings.h"
#include "kiln/error.h"

namespace kiln::cudadev {

class LazyLibrary {
 public:
  /// `what` names the library in messages ("cuBLASLt"); the string setting
  /// `path` may name a file that is tried first; `sonames` are tried in order
  /// through the dynamic linker's search path (LD_LIBRARY_PATH, ...).
  LazyLibrary(std::string what, SettingId path, std::vector<std::string> sonames);

  /// The dlopen handle; the first call opens the library. Every later call
  /// returns the first call's outcome (a failure is not retried).
  Result<void*> handle();

  /// The address of `name`; NotFound naming the symbol and library if absent.
  Result<void*> symbol(const char* name);

 private:
  std::string what_;
  SettingId path_;
  std::vector<std::string> sonames_;
  std::once_flag once_;
  void* handle_ = nullptr;
  std::string failure_;
};

/// Resolves `name` from `lib` into the function pointer `fn`.
template <typename Fn>
Error resolve(LazyLibrary& lib, Fn& fn, const char* name) {
  KILN_ASSIGN_OR_RETURN(void* p, lib.symbol(name));
  fn = reinterpret_cast<Fn>(p);
  return Error::Ok;
}

}  // namespace kiln::cudadev
