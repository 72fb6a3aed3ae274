#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_access.cuh"
#include "devices/cuda/kernels/element_convert.cuh"
#include "devices/cuda/kernels/scale_kernel.h"

namespace kiln::cudadev {
namespace {

// One real element scaled in its compute type (float32, float64 for float64).
template <typename T>
__device__ inline T scaled(T v, compute_t<T> s) {
  return narrow<T>(s * widen(v));
}

// A complex element is a (real, imaginary) pair of R; both parts scale alike.
template <typename R>
struct alignas(2 * sizeof(R)) ComplexPair {
  R re, im;
};

template <typename T, typename S>
__global__ void scale_kernel(T* x, StridedIndexer ix, int64_t numel, S scale, bool zero) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step) {
    T& v = x[ix.offset(i)];
    if constexpr (std::is_same_v<T, ComplexPair<float>> || std::is_same_v<T, ComplexPair<double>>) {
      v = zero ? T{0, 0} : T{scale * v.re, scale * v.im};
    } else {
      v = zero ? narrow<T>(S(0)) : scaled(v, scale);
    }
  }
}

template <typename T, typename S>
Error launch_typed(void* x, const StridedIndexer& ix, int64_t numel, double scale, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((numel + kThreads - 1) / kThreads, 1 << 20));
  scale_kernel<T, S><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(x), ix, numel, static_cast<S>(scale),
                                                      scale == 0.0);
  return cuda_status(cudaGetLastError(), "launching the scale kernel");
}

}  // namespace

Error launch_scale(void* x, const int64_t* sizes, const int64_t* strides, int64_t ndim, DType dtype, double scale,
                   cudaStream_t stream) {
  if (ndim < 0 || ndim > StridedIndexer::kMaxDims)
    return set_error(Error::NotSupported, "scaling a CUDA tensor of rank " + std::to_string(ndim) + " (at most " +
                                              std::to_string(StridedIndexer::kMaxDims) + ")");
  StridedIndexer ix;
  ix.ndim = static_cast<int>(ndim);
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (sizes[d] < 0) return set_error(Error::InvalidArgument, "scaling a CUDA tensor with a negative size");
    ix.sizes[d] = sizes[d];
    ix.strides[d] = strides[d];
    numel *= sizes[d];
  }
  if (numel == 0) return Error::Ok;
  switch (dtype) {
    case DType::Float16: return launch_typed<__half, float>(x, ix, numel, scale, stream);
    case DType::BFloat16: return launch_typed<__nv_bfloat16, float>(x, ix, numel, scale, stream);
    case DType::Float32: return launch_typed<float, float>(x, ix, numel, scale, stream);
    case DType::Float64: return launch_typed<double, double>(x, ix, numel, scale, stream);
    case DType::Complex64: return launch_typed<ComplexPair<float>, float>(x, ix, numel, scale, stream);
    case DType::Complex128: return launch_typed<ComplexPair<double>, double>(x, ix, numel, scale, stream);
    default:
      return set_error(Error::NotSupported, std::string("scaling a CUDA tensor of dtype ") + dtype_name(dtype));
  }
}

}  // namespace kiln::cudadev
