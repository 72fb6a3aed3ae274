#include "devices/cuda/cuda_plugin_loader.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "devices/cuda/cuda_plugin_api.h"
#include "kiln/cuda.h"
#include "kiln/device_interface.h"
#include "kiln/log.h"

namespace kiln::cuda_plugin {
namespace {

// Set once by load_and_register (under register_builtin_devices' call_once)
// and read afterwards; the table is static in the plugin, which stays loaded.
std::atomic<const KilnCudaPluginApi*> g_api{nullptr};
// Why the CUDA device is unavailable (for kiln::cuda::* errors); written only
// before g_api would have been published.
std::string& unavailable_reason() {
  static std::string reason = "CUDA device plugin not loaded yet";
  return reason;
}

void give_up(std::string reason) {
  KILN_LOG(Info, "CUDA device not available: " + reason);
  unavailable_reason() = std::move(reason);
}

// Directory of the shared object holding this code, or "" when this code is
// linked into an executable (libkiln_static): then the plugin would drag in a
// second copy of libkiln, so only an explicit KILN_CUDA_PLUGIN is used.
std::string libkiln_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_and_register), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.rfind("libkiln.so", 0) != 0) return "";
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

void load_and_register() noexcept {
  try {
    const char* disable = std::getenv("KILN_DISABLE_CUDA");
    if (disable != nullptr && *disable != '\0' && std::strcmp(disable, "0") != 0) {
      give_up("disabled by KILN_DISABLE_CUDA");
      return;
    }
    std::string path;
    if (const char* explicit_path = std::getenv("KILN_CUDA_PLUGIN"); explicit_path && *explicit_path) {
      path = explicit_path;
    } else {
      const std::string dir = libkiln_directory();
      if (dir.empty()) {
        give_up("Kiln is linked statically into this program; set KILN_CUDA_PLUGIN to libkiln_cuda.so's path");
        return;
      }
      path = dir + "/libkiln_cuda.so";
    }
    // RTLD_GLOBAL: model libraries leave the CUDA shims and cudart symbols
    // undefined and must find them in the global scope.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      give_up("cannot load " + path + ": " + (why ? why : "unknown dlopen error"));
      return;
    }
    auto reg = reinterpret_cast<KilnCudaRegisterFn>(dlsym(handle, "kiln_cuda_register"));
    auto api_fn = reinterpret_cast<KilnCudaPluginApiFn>(dlsym(handle, "kiln_cuda_plugin_api"));
    if (reg == nullptr || api_fn == nullptr) {
      give_up(path + " is not a Kiln CUDA plugin (kiln_cuda_register/kiln_cuda_plugin_api missing)");
      return;  // the handle stays open: unloading a half-initialised CUDA library is riskier
    }
    const KilnCudaPluginApi* api = api_fn();
    if (api == nullptr || api->version < KILN_CUDA_PLUGIN_API_VERSION || api->size < sizeof(KilnCudaPluginApi)) {
      give_up(path + " has an incompatible plugin interface version");
      return;
    }
    const int status = reg();
    if (status != 0) {
      give_up(last_error_message().empty() ? std::string("kiln_cuda_register failed") : last_error_message());
      return;
    }
    g_api.store(api, std::memory_order_release);
  } catch (...) {
    // Out of host memory while building a message: stay without CUDA.
  }
}

}  // namespace kiln::cuda_plugin

namespace kiln::cuda {
namespace {

const KilnCudaPluginApi* api_or_error() {
  (void)get_device_interface(DeviceType::CUDA);  // loads the plugin on first use
  const KilnCudaPluginApi* api = cuda_plugin::g_api.load(std::memory_order_acquire);
  if (api == nullptr) set_error(Error::NotSupported, "CUDA device not available: " + cuda_plugin::unavailable_reason());
  return api;
}

}  // namespace

bool is_available() noexcept {
  try {
    (void)get_device_interface(DeviceType::CUDA);
  } catch (...) {
    return false;
  }
  return cuda_plugin::g_api.load(std::memory_order_acquire) != nullptr;
}

int device_count() noexcept {
  if (!is_available()) return 0;
  return cuda_plugin::g_api.load(std::memory_order_acquire)->device_count();
}

Result<MemoryStats> memory_stats(int device) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  KilnCudaMemoryStats raw{};
  const auto code = static_cast<Error>(api->memory_stats(device, &raw));
  if (code != Error::Ok) return code;
  MemoryStats out;
  out.bytes_in_use = raw.bytes_in_use;
  out.peak_bytes_in_use = raw.peak_bytes_in_use;
  out.bytes_reserved = raw.bytes_reserved;
  out.allocations_in_use = raw.allocations_in_use;
  return out;
}

Error reset_peak_memory_stats(int device) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  return static_cast<Error>(api->reset_peak_memory_stats(device));
}

Error release_cached_memory(int device) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  return static_cast<Error>(api->release_cached_memory(device));
}

Error set_allow_tf32(bool allow) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  return static_cast<Error>(api->set_allow_tf32(allow ? 1 : 0));
}

Result<bool> allow_tf32() {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  return api->allow_tf32() != 0;
}

Error copy_strided(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                   const int64_t* sizes, int64_t ndim, size_t element_size, int device, void* stream) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  return static_cast<Error>(
      api->copy_strided(dst, dst_strides, src, src_strides, sizes, ndim, element_size, device, stream));
}

Result<int> compute_capability(int device) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  int32_t cc = 0;
  const auto code = static_cast<Error>(api->compute_capability(device, &cc));
  if (code != Error::Ok) return code;
  return static_cast<int>(cc);
}

Result<void*> create_stream(int device) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  void* stream = nullptr;
  const auto code = static_cast<Error>(api->create_stream(device, &stream));
  if (code != Error::Ok) return code;
  return stream;
}

Error destroy_stream(int device, void* stream) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  return static_cast<Error>(api->destroy_stream(device, stream));
}

Result<void*> current_stream(int device) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  void* stream = nullptr;
  const auto code = static_cast<Error>(api->current_stream(device, &stream));
  if (code != Error::Ok) return code;
  return stream;
}

Result<void*> set_current_stream(int device, void* stream) {
  const KilnCudaPluginApi* api = api_or_error();
  if (api == nullptr) return Error::NotSupported;
  void* previous = nullptr;
  const auto code = static_cast<Error>(api->set_current_stream(device, stream, &previous));
  if (code != Error::Ok) return code;
  return previous;
}

StreamGuard::StreamGuard(int device, void* stream) : device_(device) {
  auto previous = set_current_stream(device, stream);
  status_ = previous.error();
  if (previous.ok()) previous_ = *previous;
}

StreamGuard::~StreamGuard() {
  if (status_ == Error::Ok) (void)set_current_stream(device_, previous_);
}

}  // namespace kiln::cuda
