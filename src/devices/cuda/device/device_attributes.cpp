#include "devices/cuda/device/device_attributes.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/cuda_thread_state.h"

namespace kiln::cudadev {
namespace {

std::array<std::atomic<int>, kMaxDevices> g_sm_count{};  // 0: not read yet

}  // namespace

Result<int> multiprocessor_count(int device) {
  if (device < 0 || device >= kMaxDevices)
    return set_error(Error::InvalidArgument, "CUDA device index " + std::to_string(device) + " out of range");
  const int known = g_sm_count[static_cast<size_t>(device)].load(std::memory_order_relaxed);
  if (known > 0) return known;
  int count = 0;
  KILN_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device),
                                   "cudaDeviceGetAttribute(multiprocessor count)"));
  g_sm_count[static_cast<size_t>(device)].store(count, std::memory_order_relaxed);
  return count;
}

}  // namespace kiln::cudadev
