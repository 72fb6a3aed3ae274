#include "devices/cuda/device/kernel_modules.h"

#include <cuda.h>
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/log.h"

namespace kiln::cudadev {
namespace {

using ModuleLoadFn = CUresult (*)(CUmodule*, const char*);
using ModuleLoadDataFn = CUresult (*)(CUmodule*, const void*);
using ModuleUnloadFn = CUresult (*)(CUmodule);

// The driver's own entry points. The plugin does not link libcuda (the CUDA
// runtime loads it), so they are looked up once in the already-loaded driver.
struct Driver {
  ModuleLoadFn load = nullptr;
  ModuleLoadDataFn load_data = nullptr;
  ModuleUnloadFn unload = nullptr;

  static const Driver& get() {
    static const Driver driver = [] {
      Driver d;
      void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!lib) return d;  // never closed: the driver stays for the process
      d.load = reinterpret_cast<ModuleLoadFn>(::dlsym(lib, "cuModuleLoad"));
      d.load_data = reinterpret_cast<ModuleLoadDataFn>(::dlsym(lib, "cuModuleLoadData"));
      d.unload = reinterpret_cast<ModuleUnloadFn>(::dlsym(lib, "cuModuleUnload"));
      return d;
    }();
    return driver;
  }
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, std::vector<CUmodule>> modules;  // library base -> its modules
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: libraries may unload during exit
  return *r;
}

const void* library_base_of(const void* code_address) {
  Dl_info info{};
  if (::dladdr(code_address, &info) == 0) return nullptr;
  return info.dli_fbase;
}

CUresult record(CUresult result, CUmodule* module, const void* caller) {
  if (result != CUDA_SUCCESS || module == nullptr || *module == nullptr) return result;
  const void* base = library_base_of(caller);
  if (base == nullptr) return result;  // not from a loaded object: nothing to attribute it to
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.modules[base].push_back(*module);
  return result;
}

}  // namespace

void release_library_modules(const void* library_base) noexcept {
  std::vector<CUmodule> modules;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.modules.find(library_base);
    if (it == r.modules.end()) return;
    modules.swap(it->second);
    r.modules.erase(it);
  }
  const Driver& driver = Driver::get();
  if (!driver.unload) return;
  for (CUmodule m : modules) {
    const CUresult result = driver.unload(m);
    if (result != CUDA_SUCCESS)
      KILN_LOG(Warning, "cuModuleUnload of a model library's kernel module failed (CUresult " +
                            std::to_string(static_cast<int>(result)) + ")");
  }
}

int library_module_count(const void* library_base) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.modules.find(library_base);
  return it == r.modules.end() ? 0 : static_cast<int>(it->second.size());
}

}  // namespace kiln::cudadev

// What a model library's renamed cuModuleLoad / cuModuleLoadData imports bind to.
extern "C" __attribute__((visibility("default"), noinline)) CUresult knModuleLoad(CUmodule* module,
                                                                                 const char* path) {
  const auto& driver = kiln::cudadev::Driver::get();
  if (!driver.load) return CUDA_ERROR_NOT_INITIALIZED;
  return kiln::cudadev::record(driver.load(module, path), module, __builtin_return_address(0));
}

extern "C" __attribute__((visibility("default"), noinline)) CUresult knModuleLoadData(CUmodule* module,
                                                                                     const void* image) {
  const auto& driver = kiln::cudadev::Driver::get();
  if (!driver.load_data) return CUDA_ERROR_NOT_INITIALIZED;
  return kiln::cudadev::record(driver.load_data(module, image), module, __builtin_return_address(0));
}
