#include "devices/cuda/kernels/window_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_convert.cuh"
#include "shims/common/window_value.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void hann_window_kernel(T* out, int64_t n) {
  using A = compute_t<T>;
  const auto round = [](A v) { return widen(narrow<T>(v)); };
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = narrow<T>(aoti::hann_value<A>(i, n, round));
}

template <typename T>
Error launch_typed(void* out, int64_t n, cudaStream_t stream) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65535) blocks = 65535;
  hann_window_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<T*>(out), n);
  return cuda_status(cudaGetLastError(), "launching the hann_window kernel");
}

}  // namespace

Error launch_hann_window(void* out, DType dtype, int64_t n, cudaStream_t stream) {
  if (n == 0) return Error::Ok;
  switch (dtype) {
    case DType::Float32: return launch_typed<float>(out, n, stream);
    case DType::Float64: return launch_typed<double>(out, n, stream);
    case DType::Float16: return launch_typed<__half>(out, n, stream);
    case DType::BFloat16: return launch_typed<__nv_bfloat16>(out, n, stream);
    default:
      return set_error(Error::NotSupported,
                       std::string("hann_window of dtype ") + dtype_name(dtype) + " is not supported on CUDA");
  }
}

}  // namespace kiln::cudadev
