#include "devices/cuda/kernels/pad_kernel.h"

#include <string>

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

// Input index of result index i along one dimension, or -1 for the constant.
__device__ int64_t source_index(PadMode mode, const PadDim& p, int64_t i) {
  int64_t j = i - p.before;
  switch (mode) {
    case PadMode::Constant:
      return j < 0 || j >= p.size ? -1 : j;
    case PadMode::Reflect:
      if (j < 0) j = -j;
      if (j >= p.size) j = 2 * (p.size - 1) - j;
      return j;
    case PadMode::Replicate:
      return j < 0 ? 0 : (j >= p.size ? p.size - 1 : j);
    case PadMode::Circular: {
      const int64_t c = i - (p.before > 0 ? p.before : 0);
      return ((c % p.kept) + p.kept) % p.kept + p.crop_lo;
    }
  }
  return -1;
}

// An element of `bytes` bytes (the dtype's size, so its natural alignment).
template <typename Word>
__device__ void copy_words(char* dst, const char* src, int words) {
  for (int w = 0; w < words; ++w) reinterpret_cast<Word*>(dst)[w] = reinterpret_cast<const Word*>(src)[w];
}

__device__ void copy_element(char* dst, const char* src, size_t bytes) {
  switch (bytes) {
    case 1: *dst = *src; break;
    case 2: copy_words<uint16_t>(dst, src, 1); break;
    case 4: copy_words<uint32_t>(dst, src, 1); break;
    case 8: copy_words<uint64_t>(dst, src, 1); break;
    case 16: copy_words<uint64_t>(dst, src, 2); break;
    default:
      for (size_t b = 0; b < bytes; ++b) dst[b] = src[b];
  }
}

__device__ void store_fill(void* out, DType dtype, size_t bytes, int64_t off, double value) {
  if (dtype == DType::Complex64) {
    static_cast<float2*>(out)[off] = make_float2(static_cast<float>(value), 0.0f);
  } else if (dtype == DType::Complex128) {
    static_cast<double2*>(out)[off] = make_double2(value, 0.0);
  } else if (is_floating_dtype(dtype) || is_integral_dtype(dtype)) {
    store_double(out, dtype, off, value);
  } else {
    char* p = static_cast<char*>(out) + off * static_cast<int64_t>(bytes);
    for (size_t b = 0; b < bytes; ++b) p[b] = 0;
  }
}

__global__ void pad_kernel(const char* in, char* out, DType dtype, size_t bytes, PadGeometry g, int64_t numel,
                           double value) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < numel;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = k;
    int64_t in_off = 0, out_off = 0;
    bool inside = true;
    for (int d = g.ndim - 1; d >= 0; --d) {
      const int64_t n = g.out.sizes[d];
      const int64_t i = rest % n;
      rest /= n;
      out_off += i * g.out.strides[d];
      const int64_t j = source_index(g.mode, g.dims[d], i);
      if (j < 0) inside = false;
      in_off += j * g.in_strides[d];
    }
    if (inside)
      copy_element(out + out_off * static_cast<int64_t>(bytes), in + in_off * static_cast<int64_t>(bytes), bytes);
    else
      store_fill(out, dtype, bytes, out_off, value);
  }
}

}  // namespace

Error launch_pad(const void* in, void* out, DType dtype, const PadGeometry& geometry, double value,
                 cudaStream_t stream) {
  int64_t numel = 1;
  for (int d = 0; d < geometry.ndim; ++d) numel *= geometry.out.sizes[d];
  if (numel == 0) return Error::Ok;
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  pad_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(
      static_cast<const char*>(in), static_cast<char*>(out), dtype, element_size(dtype), geometry, numel, value);
  return cuda_status(cudaGetLastError(), "launching the pad kernel");
}

}  // namespace kiln::cudadev
