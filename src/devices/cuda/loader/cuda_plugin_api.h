// The one interface between libkiln (which dlopens the CUDA plugin) and
// libkiln_cuda.so: a versioned function table, the plugin's only entry point.
// Plain C types only, so the two libraries agree on it whatever C++ runtime
// each was linked with. Free of CUDA headers. Private to Kiln: the plugin and
// libkiln are built from the same tree, and the loader refuses a plugin of
// another version.
//
// Errors: functions returning int32_t return a kiln::Error code (0 = Ok); the
// message is recorded in libkiln's thread-local error (the plugin calls
// kiln::set_error, which lives in libkiln).
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

/// The table's layout; the loader needs exactly this version.
#define KILN_CUDA_PLUGIN_API_VERSION 3

struct KilnCudaMemoryStats {
  uint64_t bytes_in_use;
  uint64_t peak_bytes_in_use;
  uint64_t bytes_reserved;
  uint64_t allocations_in_use;
};

struct KilnCudaPluginApi {
  uint32_t version;  ///< KILN_CUDA_PLUGIN_API_VERSION of the plugin.
  uint32_t size;     ///< sizeof(KilnCudaPluginApi) of the plugin.
  /// Checks that a GPU is usable; on success *device is the plugin's
  /// kiln::DeviceInterface (a static object), which libkiln publishes.
  int32_t (*open)(void** device);
  int32_t (*device_count)(void);
  int32_t (*memory_stats)(int32_t device, KilnCudaMemoryStats* out);
  int32_t (*reset_peak_memory_stats)(int32_t device);
  int32_t (*release_cached_memory)(int32_t device);
  int32_t (*copy_strided)(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                          const int64_t* sizes, int64_t ndim, uint64_t element_size, int32_t device, void* stream);
  int32_t (*compute_capability)(int32_t device, int32_t* out);  ///< 10 * major + minor
  int32_t (*create_stream)(int32_t device, void** out);          ///< caller destroys it
  int32_t (*destroy_stream)(int32_t device, void* stream);
  int32_t (*current_stream)(int32_t device, void** out);         ///< calling thread's
  int32_t (*set_current_stream)(int32_t device, void* stream, void** previous);
};

/// Exported by libkiln_cuda.so as kiln_cuda_plugin_api: its function table
/// (static; never freed).
typedef const KilnCudaPluginApi* (*KilnCudaPluginApiFn)(void);

}  // extern "C"
