#include "devices/cuda/loader/cuda_plugin_loader.h"

#include <dlfcn.h>

#include <string>

#include "core/device_table.h"
#include "core/settings.h"
#include "devices/cuda/loader/cuda_plugin_api.h"
#include "kiln/cuda.h"
#include "kiln/log.h"

namespace kiln::cuda_plugin {
namespace {

struct Loaded {
  const KilnCudaPluginApi* api = nullptr;
  DeviceInterface* device = nullptr;
  std::string unavailable;  // why not, when device is null
};

// Directory of the shared object holding this code, or "" when this code is
// linked into an executable (libkiln_static): then the plugin would drag in a
// second copy of libkiln, so only an explicit cuda_plugin path is used.
std::string libkiln_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.rfind("libkiln.so", 0) != 0) return "";
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Loads the plugin and opens the device; sets `unavailable` when it cannot.
void open_plugin(Loaded& loaded) {
  const auto give_up = [&](std::string reason) {
    KILN_LOG(Info, "CUDA device not available: " + reason);
    loaded.unavailable = std::move(reason);
  };
#ifndef KILN_WITH_CUDA
  return give_up("this build of Kiln has no CUDA support (configure with -DKILN_WITH_CUDA=ON)");
#endif
  if (process_settings().get_bool(SettingId::DisableCuda)) return give_up("disabled by KILN_DISABLE_CUDA");
  std::string path = process_settings().get_string(SettingId::CudaPlugin);
  if (path.empty()) {
    const std::string dir = libkiln_directory();
    if (dir.empty())
      return give_up("Kiln is linked statically into this program; set setting cuda_plugin (KILN_CUDA_PLUGIN) "
                     "to libkiln_cuda.so's path");
    path = dir + "/libkiln_cuda.so";
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return give_up("cannot load " + path + ": " + (why ? why : "unknown dlopen error"));
  }
  // The handle stays open whatever follows: unloading a half-initialised CUDA
  // library is riskier than keeping it.
  auto api_fn = reinterpret_cast<KilnCudaPluginApiFn>(dlsym(handle, "kiln_cuda_plugin_api"));
  if (api_fn == nullptr) return give_up(path + " is not a Kiln CUDA plugin (no kiln_cuda_plugin_api)");
  const KilnCudaPluginApi* api = api_fn();
  if (api == nullptr || api->version != KILN_CUDA_PLUGIN_API_VERSION || api->size != sizeof(KilnCudaPluginApi))
    return give_up(path + " is a CUDA plugin of another Kiln build (interface version " +
                   std::to_string(api ? api->version : 0) + ", this libkiln needs " +
                   std::to_string(KILN_CUDA_PLUGIN_API_VERSION) + ")");
  void* device = nullptr;
  if (api->open(&device) != 0 || device == nullptr)
    return give_up(last_error_message().empty() ? std::string("the plugin found no usable GPU") : last_error_message());
  loaded.api = api;
  loaded.device = static_cast<DeviceInterface*>(device);
  publish_device(loaded.device);
}

const Loaded& loaded() {
  static const Loaded* result = [] {
    auto* l = new Loaded();  // never destroyed: the plugin stays loaded
    try {
      open_plugin(*l);
    } catch (...) {
      l->unavailable = "out of memory while loading the CUDA plugin";
    }
    return l;
  }();
  return *result;
}

}  // namespace

DeviceInterface* load(std::string* unavailable) noexcept {
  const Loaded& l = loaded();
  if (l.device == nullptr && unavailable != nullptr) {
    try {
      *unavailable = l.unavailable;
    } catch (...) {
    }
  }
  return l.device;
}

}  // namespace kiln::cuda_plugin

namespace kiln::cuda {
namespace {

const KilnCudaPluginApi* api_or_error() {
  std::string unavailable;
  if (cuda_plugin::load(&unavailable) == nullptr) {
    set_error(Error::NotSupported, "CUDA device not available: " + unavailable);
    return nullptr;
  }
  return cuda_plugin::loaded().api;
}

}  // namespace

bool is_available() noexcept { return cuda_plugin::load(nullptr) != nullptr; }

int device_count() noexcept {
  if (!is_available()) return 0;
  return cuda_plugin::loaded().api->device_count();
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

Error set_allow_tf32(bool allow) { return process_settings().set(SettingId::CudaAllowTf32, allow); }

Result<bool> allow_tf32() { return process_settings().get_bool(SettingId::CudaAllowTf32); }

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
