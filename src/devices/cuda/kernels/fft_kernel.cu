#include "devices/cuda/kernels/fft_kernel.h"

#include <cuComplex.h>

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

// T is float2 or double2; S its component type. The scale is applied in S as
// ATen's mul_ applies a double scalar to a complex64 tensor (rounded to float).
template <typename T, typename S>
__global__ void fft_finish_kernel(const T* src, StridedIndexer src_index, T* dst, StridedIndexer dst_index,
                                  int64_t numel, S scale, FftSymmetry symmetry) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < numel;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = k;
    int64_t src_off = 0, dst_off = 0;
    bool conjugate = false;
    int64_t idx[StridedIndexer::kMaxDims];
    for (int d = dst_index.ndim - 1; d >= 0; --d) {
      const int64_t n = dst_index.sizes[d];
      idx[d] = rest % n;
      rest /= n;
      dst_off += idx[d] * dst_index.strides[d];
    }
    if (symmetry.fill && idx[symmetry.last_dim] >= symmetry.half) {
      conjugate = true;
      for (int d = 0; d < dst_index.ndim; ++d)
        if ((symmetry.mirrored >> d) & 1u) idx[d] = idx[d] == 0 ? 0 : dst_index.sizes[d] - idx[d];
    }
    for (int d = 0; d < dst_index.ndim; ++d) src_off += idx[d] * src_index.strides[d];
    T v = src[src_off];
    if (conjugate) v.y = -v.y;
    v.x *= scale;
    v.y *= scale;
    dst[dst_off] = v;
  }
}

int blocks_for(int64_t numel) {
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65536 ? blocks : 65536);
}

}  // namespace

Error launch_fft_finish(const void* src, const StridedIndexer& src_index, void* dst, const StridedIndexer& dst_index,
                        bool is_double, double scale, const FftSymmetry& symmetry, cudaStream_t stream) {
  int64_t numel = 1;
  for (int d = 0; d < dst_index.ndim; ++d) numel *= dst_index.sizes[d];
  if (numel == 0) return Error::Ok;
  if (is_double)
    fft_finish_kernel<double2, double><<<blocks_for(numel), kThreads, 0, stream>>>(
        static_cast<const double2*>(src), src_index, static_cast<double2*>(dst), dst_index, numel, scale, symmetry);
  else
    fft_finish_kernel<float2, float><<<blocks_for(numel), kThreads, 0, stream>>>(
        static_cast<const float2*>(src), src_index, static_cast<float2*>(dst), dst_index, numel,
        static_cast<float>(scale), symmetry);
  return cuda_status(cudaGetLastError(), "launching the FFT normalisation kernel");
}

}  // namespace kiln::cudadev
