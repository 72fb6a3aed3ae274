#include "devices/cpu/blas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/settings.h"
#include "kiln/log.h"

namespace kiln::cpu {
namespace {
struct Loaded {
  BlasFunctions functions{};
  std::string failure;  // empty on success
};

Loaded load() {
  Loaded loaded;
  std::string tried;
  const std::string chosen = process_settings().get_string(SettingId::BlasLibrary);
  const char* candidates[] = {chosen.empty() ? nullptr : chosen.c_str(), "libopenblas.so.0", "libblas.so.3"};
  for (const char* name : candidates) {
    if (!name) continue;
    // RTLD_LOCAL: BLAS symbols must not leak into model libraries' scope.
    void* handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + name + ": " + (why ? why : "not found");
      continue;
    }
    loaded.functions.sgemm = reinterpret_cast<decltype(loaded.functions.sgemm)>(::dlsym(handle, "cblas_sgemm"));
    loaded.functions.dgemm = reinterpret_cast<decltype(loaded.functions.dgemm)>(::dlsym(handle, "cblas_dgemm"));
    if (loaded.functions.sgemm && loaded.functions.dgemm) {
      auto sgemv = reinterpret_cast<decltype(loaded.functions.sgemv)>(::dlsym(handle, "cblas_sgemv"));
      auto dgemv = reinterpret_cast<decltype(loaded.functions.dgemv)>(::dlsym(handle, "cblas_dgemv"));
      if (sgemv && dgemv) {
        loaded.functions.sgemv = sgemv;
        loaded.functions.dgemv = dgemv;
      }
      // Searched in the library and its dependencies: the libgomp it is bound to.
      auto get = reinterpret_cast<int (*)()>(::dlsym(handle, "omp_get_max_threads"));
      auto set = reinterpret_cast<void (*)(int)>(::dlsym(handle, "omp_set_num_threads"));
      if (get && set) {
        loaded.functions.omp_get_max_threads = get;
        loaded.functions.omp_set_num_threads = set;
      }
      KILN_LOG(Info, std::string("CPU BLAS: ") + name);
      return loaded;  // the handle stays open for the life of the process
    }
    tried += std::string(tried.empty() ? "" : "; ") + name + ": has no cblas_sgemm/cblas_dgemm";
    ::dlclose(handle);
  }
  loaded.failure = "no CBLAS library could be opened for the CPU matrix ops (" + tried +
                   "). Install OpenBLAS (Debian/Ubuntu: apt-get install libopenblas0) or point "
                   "KILN_BLAS_LIBRARY at a library that provides cblas_sgemm.";
  return loaded;
}
}  // namespace

Result<const BlasFunctions*> blas() {
  static const Loaded loaded = load();
  if (!loaded.failure.empty()) return set_error(Error::NotSupported, loaded.failure);
  return &loaded.functions;
}

}  // namespace kiln::cpu
