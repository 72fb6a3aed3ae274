#include <algorithm>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/strided_copy.h"

namespace kiln::cudadev {
namespace {

// One extra slot: a misaligned copy adds an innermost byte dimension.
constexpr int kSlots = kMaxStridedCopyDims + 1;

struct Geometry {
  int32_t ndim;
  int64_t sizes[kSlots];
  int64_t dst_strides[kSlots];
  int64_t src_strides[kSlots];
};

struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};

template <typename T>
__global__ void strided_copy_kernel(T* __restrict__ dst, const T* __restrict__ src, Geometry g, int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; linear < numel;
       linear += step) {
    int64_t rest = linear;
    int64_t d_off = 0;
    int64_t s_off = 0;
    // Row-major decomposition of the linear index (last dimension fastest).
    for (int d = g.ndim - 1; d >= 0; --d) {
      const int64_t i = rest % g.sizes[d];
      rest /= g.sizes[d];
      d_off += i * g.dst_strides[d];
      s_off += i * g.src_strides[d];
    }
    dst[d_off] = src[s_off];
  }
}

template <typename T>
Error launch(void* dst, const void* src, const Geometry& g, int64_t numel, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t wanted = (numel + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(wanted, int64_t{1} << 20));
  strided_copy_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), g, numel);
  return cuda_status(cudaGetLastError(), "launching the strided copy kernel");
}

}  // namespace

Error launch_strided_copy(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                          const int64_t* sizes, int64_t ndim, size_t element_size, cudaStream_t stream) {
  if (ndim < 0 || ndim > kMaxStridedCopyDims)
    return set_error(Error::NotSupported,
                     "strided CUDA copy of rank " + std::to_string(ndim) + " (at most 8 dimensions are supported)");
  if (element_size != 1 && element_size != 2 && element_size != 4 && element_size != 8 && element_size != 16)
    return set_error(Error::InvalidArgument,
                     "strided CUDA copy with element size " + std::to_string(element_size) + " bytes");
  if (ndim > 0 && (sizes == nullptr || dst_strides == nullptr || src_strides == nullptr))
    return set_error(Error::InvalidArgument, "strided CUDA copy with null sizes or strides");
  Geometry g{};
  g.ndim = static_cast<int32_t>(ndim);
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (sizes[d] < 0) return set_error(Error::InvalidArgument, "strided CUDA copy with a negative size");
    if (__builtin_mul_overflow(numel, sizes[d], &numel))
      return set_error(Error::InvalidArgument, "strided CUDA copy: element count overflows");
    g.sizes[d] = sizes[d];
    g.dst_strides[d] = dst_strides[d];
    g.src_strides[d] = src_strides[d];
  }
  if (numel == 0) return Error::Ok;
  if (dst == nullptr || src == nullptr) return set_error(Error::InvalidArgument, "strided CUDA copy with a null pointer");
  const auto misaligned = [&](const void* p) { return reinterpret_cast<uintptr_t>(p) % std::min<size_t>(element_size, 8) != 0; };
  if (element_size > 1 && (misaligned(dst) || misaligned(src))) {
    // Copy bytes: strides become byte strides plus an innermost byte dimension.
    for (int64_t d = 0; d < ndim; ++d) {
      g.dst_strides[d] *= static_cast<int64_t>(element_size);
      g.src_strides[d] *= static_cast<int64_t>(element_size);
    }
    g.sizes[ndim] = static_cast<int64_t>(element_size);
    g.dst_strides[ndim] = 1;
    g.src_strides[ndim] = 1;
    g.ndim += 1;
    return launch<uint8_t>(dst, src, g, numel * static_cast<int64_t>(element_size), stream);
  }
  switch (element_size) {
    case 1: return launch<uint8_t>(dst, src, g, numel, stream);
    case 2: return launch<uint16_t>(dst, src, g, numel, stream);
    case 4: return launch<uint32_t>(dst, src, g, numel, stream);
    case 8: return launch<uint64_t>(dst, src, g, numel, stream);
    default: return launch<Bytes16>(dst, src, g, numel, stream);
  }
}

}  // namespace kiln::cudadev
