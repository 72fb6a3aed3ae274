#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/bias_kernel.h"
#include "devices/cuda/kernels/element_convert.cuh"

namespace kiln::cudadev {
namespace {

template <typename T>
__global__ void add_channel_bias_kernel(T* y, const T* bias, int64_t numel, int64_t channels, int64_t channel_stride) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step) {
    const int64_t c = (i / channel_stride) % channels;
    y[i] = from_float<T>(to_float(y[i]) + to_float(bias[c]));
  }
}

__global__ void add_channel_bias_kernel_f64(double* y, const double* bias, int64_t numel, int64_t channels,
                                            int64_t channel_stride) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step)
    y[i] += bias[(i / channel_stride) % channels];
}

}  // namespace

Error launch_add_channel_bias(void* y, const void* bias, DType dtype, int64_t numel, int64_t channels,
                              int64_t channel_stride, cudaStream_t stream) {
  if (numel == 0) return Error::Ok;
  if (channels <= 0 || channel_stride <= 0)
    return set_error(Error::InvalidArgument, "bias add with " + std::to_string(channels) + " channels");
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((numel + kThreads - 1) / kThreads, 1 << 20));
  switch (dtype) {
    case DType::Float32:
      add_channel_bias_kernel<float><<<blocks, kThreads, 0, stream>>>(static_cast<float*>(y), static_cast<const float*>(bias), numel, channels, channel_stride);
      break;
    case DType::Float16:
      add_channel_bias_kernel<__half><<<blocks, kThreads, 0, stream>>>(static_cast<__half*>(y), static_cast<const __half*>(bias), numel, channels, channel_stride);
      break;
    case DType::BFloat16:
      add_channel_bias_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(y), static_cast<const __nv_bfloat16*>(bias), numel, channels, channel_stride);
      break;
    case DType::Float64:
      add_channel_bias_kernel_f64<<<blocks, kThreads, 0, stream>>>(static_cast<double*>(y), static_cast<const double*>(bias), numel, channels, channel_stride);
      break;
    default:
      return set_error(Error::NotSupported, std::string("bias add for dtype ") + dtype_name(dtype));
  }
  return cuda_status(cudaGetLastError(), "launching the bias-add kernel");
}

}  // namespace kiln::cudadev
