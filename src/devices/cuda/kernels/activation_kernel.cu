#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/activation_kernel.h"
#include "devices/cuda/kernels/element_convert.cuh"

namespace kiln::cudadev {
namespace {

template <typename C>
__device__ inline C relu(C v) {
  return v != v ? v : (v > C(0) ? v : C(0));  // v != v: NaN, which ATen's relu keeps
}

template <typename C>
__device__ inline C gelu_tanh(C v) {
  const C sqrt_2_over_pi = C(0.7978845608028654);  // sqrt(2 / pi)
  const C cube = v * v * v;
  return C(0.5) * v * (C(1) + tanh(sqrt_2_over_pi * (v + C(0.044715) * cube)));
}

template <typename T, Activation kAct>
__global__ void activation_kernel(T* x, int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step) {
    const auto v = widen(x[i]);
    x[i] = narrow<T>(kAct == Activation::Relu ? relu(v) : gelu_tanh(v));
  }
}

template <typename T>
void launch_typed(void* x, int64_t numel, Activation act, unsigned blocks, unsigned threads,
                  cudaStream_t stream) {
  if (act == Activation::Relu)
    activation_kernel<T, Activation::Relu><<<blocks, threads, 0, stream>>>(static_cast<T*>(x), numel);
  else
    activation_kernel<T, Activation::GeluTanh><<<blocks, threads, 0, stream>>>(static_cast<T*>(x), numel);
}

}  // namespace

Error launch_activation(void* x, DType dtype, int64_t numel, Activation act, cudaStream_t stream) {
  if (numel <= 0 || act == Activation::None) return Error::Ok;
  constexpr unsigned kThreads = 256;
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>((numel + kThreads - 1) / kThreads, 1 << 20));
  switch (dtype) {
    case DType::Float32:
      launch_typed<float>(x, numel, act, blocks, kThreads, stream);
      break;
    case DType::Float16:
      launch_typed<__half>(x, numel, act, blocks, kThreads, stream);
      break;
    case DType::BFloat16:
      launch_typed<__nv_bfloat16>(x, numel, act, blocks, kThreads, stream);
      break;
    case DType::Float64:
      launch_typed<double>(x, numel, act, blocks, kThreads, stream);
      break;
    default:
      return set_error(Error::NotSupported, std::string("activation of dtype ") + dtype_name(dtype) +
                                                " on CUDA (float16, bfloat16, float32 and float64 only)");
  }
  return cuda_status(cudaGetLastError(), "launching the activation kernel");
}

}  // namespace kiln::cudadev
