// AotiLibrary: one model shared library, loaded from bytes in memory.
//
// The bytes (a private copy ProgramFile digest-checked) are patched in memory
// (shim import names, unique bindings), written to an anonymous memfd, sealed
// against any further write, grow or shrink, compared with what was written,
// and dlopen'ed through /proc/self/fd: the code that runs is exactly the
// checked code, and compiled code never touches the filesystem. Where memfd_create is unavailable (or the
// setting disable_memfd is on, which tests use) the fallback is a
// private temporary file under $TMPDIR (0700 mkdtemp directory, file opened
// O_EXCL|O_NOFOLLOW), both removed right after dlopen, on failure too.
// Before dlopen every aoti_torch_* import is checked against the shims this
// process provides; all missing names are reported at once.
//
// Ownership: owns the dlopen handle; the destructor dlcloses it. Symbols
// looked up from it are valid while it lives. Not copyable.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "kiln/error.h"

namespace kiln::aoti {

class AotiLibrary {
 public:
  /// `label` names the library in messages (e.g. "method 'forward'").
  static Result<std::unique_ptr<AotiLibrary>> load(std::span<const uint8_t> bytes, std::string_view label);
  ~AotiLibrary();
  AotiLibrary(const AotiLibrary&) = delete;
  AotiLibrary& operator=(const AotiLibrary&) = delete;

  /// The address of `name`, or nullptr.
  void* symbol(const char* name) const noexcept;
  /// The address the library is loaded at (what dladdr reports as the base of
  /// code inside it); devices key what the library acquired by it.
  const void* base() const noexcept;

 private:
  AotiLibrary(void* handle, int fd) : handle_(handle), fd_(fd) {}
  void* handle_;
  // The memfd stays open while the library is loaded: glibc recognises an
  // already-loaded object by its path, so a reused /proc/self/fd/N would
  // return the previous method's library instead of loading this one.
  int fd_;
};

/// Makes this runtime's aoti_torch_* definitions visible to libraries loaded
/// later, however the runtime itself was loaded (linked executable, dlopen,
/// Python ctypes without RTLD_GLOBAL). Idempotent.
void export_runtime_symbols_globally();

}  // namespace kiln::aoti
