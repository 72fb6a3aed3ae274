// A shared library opened on first use with dlopen (BLAS for the CPU matrix
// ops; cuBLASLt and cuDNN in the CUDA plugin), so a model that needs none of
// them never loads them and a machine without them can still run every other
// model. Thread-safe; the library stays loaded for the life of the process
// once opened.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/settings.h"
#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln {

class KILN_API LazyLibrary {
 public:
  /// `what` names the library in messages ("cuBLASLt"); the string setting
  /// `path` may name a file that is tried first; `sonames` are tried in order
  /// through the dynamic linker's search path (LD_LIBRARY_PATH, ...). A
  /// candidate that lacks one of `required` symbols is passed over. `hint`
  /// ends the message when none fits (how to install one).
  LazyLibrary(std::string what, SettingId path, std::vector<std::string> sonames,
              std::vector<std::string> required = {}, std::string hint = "");

  /// The dlopen handle (RTLD_LOCAL: only Kiln calls into it, through dlsym);
  /// the first call opens the library. Every later call returns the first
  /// call's outcome (a failure is not retried).
  Result<void*> handle();

  /// The address of `name`; NotFound naming the symbol and library if absent.
  Result<void*> symbol(const char* name);
  /// The address of `name`, or null when the library lacks it (or is not loaded).
  void* optional_symbol(const char* name) noexcept;

 private:
  std::string what_;
  SettingId path_;
  std::vector<std::string> sonames_;
  std::vector<std::string> required_;
  std::string hint_;
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

/// A table of functions (`Api`) filled once per process by `load(Api&)`: the
/// table, or the first call's error (with its message) on every call.
template <typename Api, typename Load>
Result<const Api*> load_table_once(Load load) {
  static std::once_flag once;
  static Api api;
  static Error status = Error::Ok;
  static std::string message;
  std::call_once(once, [&] {
    status = load(api);
    if (status != Error::Ok) message = last_error_message();
  });
  if (status != Error::Ok) return set_error(status, message);
  return &api;
}

/// This thread's handle for `device`, made by `create(&handle)` (returning an
/// Error) on the thread's first call for that device. Never shared between
/// threads, and deliberately not destroyed at thread exit (the library or
/// device context it belongs to may be gone by then).
template <typename Handle, typename Create>
Result<Handle> thread_handle(int device, Create create) {
  thread_local std::unordered_map<int, Handle> handles;
  if (auto it = handles.find(device); it != handles.end()) return it->second;
  Handle handle{};
  KILN_RETURN_IF_ERROR(create(&handle));
  handles.emplace(device, handle);
  return handle;
}

}  // namespace kiln
