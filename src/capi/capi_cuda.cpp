// The C face of kiln/cuda.h: streams and allocator statistics of the CUDA
// plugin, for callers that share a GPU with Kiln (Python tools, servers).
#include "capi/capi_internal.h"
#include "kiln/cuda.h"

namespace {
using kiln::Error;
}  // namespace

extern "C" {

int32_t kiln_cuda_device_count(void) noexcept { return kiln::cuda::device_count(); }

kiln_status_t kiln_cuda_current_stream(int32_t device, void** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(out);
    KILN_ASSIGN_OR_RETURN(*out, kiln::cuda::current_stream(device));
    return Error::Ok;
  });
}

kiln_status_t kiln_cuda_set_current_stream(int32_t device, void* stream, void** previous) noexcept {
  return kiln::capi::guard(__func__, [&](const char*) -> Error {
    KILN_ASSIGN_OR_RETURN(void* before, kiln::cuda::set_current_stream(device, stream));
    if (previous) *previous = before;
    return Error::Ok;
  });
}

kiln_status_t kiln_cuda_memory_stats(int32_t device, uint64_t* bytes_in_use, uint64_t* peak_bytes_in_use,
                                     uint64_t* bytes_reserved, uint64_t* allocations_in_use) noexcept {
  return kiln::capi::guard(__func__, [&](const char*) -> Error {
    KILN_ASSIGN_OR_RETURN(kiln::cuda::MemoryStats stats, kiln::cuda::memory_stats(device));
    if (bytes_in_use) *bytes_in_use = stats.bytes_in_use;
    if (peak_bytes_in_use) *peak_bytes_in_use = stats.peak_bytes_in_use;
    if (bytes_reserved) *bytes_reserved = stats.bytes_reserved;
    if (allocations_in_use) *allocations_in_use = stats.allocations_in_use;
    return Error::Ok;
  });
}

kiln_status_t kiln_cuda_reset_peak_memory_stats(int32_t device) noexcept {
  return kiln::capi::guard(__func__, [&](const char*) { return kiln::cuda::reset_peak_memory_stats(device); });
}

kiln_status_t kiln_cuda_release_cached_memory(int32_t device) noexcept {
  return kiln::capi::guard(__func__, [&](const char*) { return kiln::cuda::release_cached_memory(device); });
}

}  // extern "C"
