#include "devices/cuda/kernels/window_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_convert.cuh"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

__device__ float cos_of(float v) { return cosf(v); }
__device__ double cos_of(double v) { return cos(v); }

// Each of ATen's in-place steps computes in the op math type (float32 for
// narrow floats, the scalar cast to it) and stores the dtype.
template <typename T>
__global__ void hann_window_kernel(T* out, int64_t n, double scale) {
  using A = compute_t<T>;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (n == 1) {
      out[i] = narrow<T>(A(1));
      continue;
    }
    T v = narrow<T>(static_cast<A>(i));                      // arange
    v = narrow<T>(widen(v) * static_cast<A>(scale));          // mul_(2 pi / n)
    v = narrow<T>(cos_of(widen(v)));                          // cos_
    v = narrow<T>(widen(v) * static_cast<A>(-0.5));           // mul_(-beta)
    out[i] = narrow<T>(widen(v) + static_cast<A>(0.5));       // add_(alpha)
  }
}

template <typename T>
Error launch_typed(void* out, int64_t n, cudaStream_t stream) {
  // The periodic window is the first n of a symmetric window of n + 1.
  constexpr double kPi = 3.14159265358979323846;
  const double scale = kPi * 2.0 / static_cast<double>(n);
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65535) blocks = 65535;
  hann_window_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<T*>(out), n, scale);
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
