#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/mask_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < (1 << 16) ? blocks : (1 << 16));
}

// 1 for a non-zero element k (NaN counts, -0.0 does not), 0 past the end, so
// that an exclusive scan over numel + 1 items also yields the total.
struct NonzeroFlag {
  const void* in = nullptr;
  DType dtype = DType::Bool;
  StridedIndexer index;
  int64_t numel = 0;

  __device__ int64_t operator()(int64_t k) const {
    if (k >= numel) return 0;
    const int64_t off = index.offset(k);
    switch (dtype) {
      case DType::Bool:
      case DType::UInt8: return static_cast<const uint8_t*>(in)[off] != 0;
      case DType::Complex64: {
        const float* c = static_cast<const float*>(in) + 2 * off;
        return c[0] != 0.0f || c[1] != 0.0f;
      }
      case DType::Complex128: {
        const double* c = static_cast<const double*>(in) + 2 * off;
        return c[0] != 0.0 || c[1] != 0.0;
      }
      default: return is_integral_dtype(dtype) ? load_int(in, dtype, off) != 0 : load_double(in, dtype, off) != 0.0;
    }
  }
};

// A repeat count, negative ones counted as 0 (they are reported separately).
struct RepeatCount {
  const void* data = nullptr;
  DType dtype = DType::Int64;
  int64_t stride = 1;

  __device__ int64_t operator()(int64_t i) const {
    const int64_t v = dtype == DType::Int32 ? static_cast<const int32_t*>(data)[i * stride]
                                            : static_cast<const int64_t*>(data)[i * stride];
    return v < 0 ? 0 : v;
  }
};

auto flag_iterator(const NonzeroFlag& f) {
  return thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), f);
}
auto repeat_iterator(const RepeatCount& r) {
  return thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), r);
}

// Element copies by size: every dtype moves as its bytes.
struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};

template <typename E>
__global__ void masked_scatter_kernel(E* out, const E* self, StridedIndexer self_index, const int64_t* positions,
                                      const E* source, StridedIndexer source_index, int64_t source_numel,
                                      int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < numel; k += step) {
    const int64_t p = positions[k];
    if (positions[k + 1] != p && source_numel > 0) {
      const int64_t q = p < source_numel ? p : source_numel - 1;
      out[k] = source[source_index.offset(q)];
    } else {
      out[k] = self[self_index.offset(k)];
    }
  }
}

template <typename E>
__global__ void masked_select_kernel(E* out, const E* self, StridedIndexer self_index, const int64_t* positions,
                                     int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < numel; k += step) {
    const int64_t p = positions[k];
    if (positions[k + 1] != p) out[p] = self[self_index.offset(k)];
  }
}

template <typename F>
Error by_element_size(int64_t element_bytes, F&& launch) {
  switch (element_bytes) {
    case 1: return launch(uint8_t{});
    case 2: return launch(uint16_t{});
    case 4: return launch(uint32_t{});
    case 8: return launch(uint64_t{});
    case 16: return launch(Bytes16{});
    default:
      return set_error(Error::NotSupported,
                       "elements of " + std::to_string(element_bytes) + " bytes are not supported by this CUDA op");
  }
}

__global__ void nonzero_static_scatter_kernel(const int64_t* positions, int64_t numel, StridedIndexer shape,
                                              int64_t size, int64_t* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < numel; k += step) {
    const int64_t r = positions[k];
    if (positions[k + 1] == r || r >= size) continue;
    int64_t rest = k;
    for (int d = shape.ndim - 1; d >= 0; --d) {
      out[r + d * size] = rest % shape.sizes[d];
      rest /= shape.sizes[d];
    }
  }
}

// Element e of the (size, ndim) result with strides (1, size) is row e % size.
__global__ void nonzero_static_fill_kernel(const int64_t* total_device, int64_t size, int64_t elements,
                                           int64_t fill_value, int64_t* out) {
  const int64_t total = *total_device;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < elements; e += step)
    if (e % size >= total) out[e] = fill_value;
}

__global__ void repeat_check_kernel(RepeatCount r, int64_t n, unsigned long long* first_negative) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t v = r.dtype == DType::Int32 ? static_cast<const int32_t*>(r.data)[i * r.stride]
                                              : static_cast<const int64_t*>(r.data)[i * r.stride];
    if (v < 0) atomicMin(first_negative, static_cast<unsigned long long>(i));
  }
}

template <typename T>
__global__ void repeat_expand_kernel(const int64_t* ends, int64_t n, T* out, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total; j += step) {
    // The first i whose end is past j.
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (ends[mid] <= j) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= n) lo = n > 0 ? n - 1 : 0;
    out[j] = static_cast<T>(lo);
  }
}

}  // namespace

Result<size_t> mask_positions_workspace(int64_t numel) {
  size_t bytes = 0;
  const cudaError_t st = cub::DeviceScan::ExclusiveSum(nullptr, bytes, flag_iterator(NonzeroFlag{}),
                                                       static_cast<int64_t*>(nullptr), numel + 1);
  KILN_RETURN_IF_ERROR(cuda_status(st, "sizing the mask scan"));
  return bytes;
}

Error launch_mask_positions(const void* in, DType dtype, const StridedIndexer& in_index, int64_t numel,
                            int64_t* positions, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  NonzeroFlag f;
  f.in = in;
  f.dtype = dtype;
  f.index = in_index;
  f.numel = numel;
  size_t bytes = workspace_bytes;
  return cuda_status(cub::DeviceScan::ExclusiveSum(workspace, bytes, flag_iterator(f), positions, numel + 1, stream),
                     "the mask scan");
}

Error launch_masked_scatter(void* out, const void* self, const StridedIndexer& self_index, const int64_t* positions,
                            const void* source, const StridedIndexer& source_index, int64_t source_numel,
                            int64_t numel, int64_t element_bytes, cudaStream_t stream) {
  if (numel == 0) return Error::Ok;
  return by_element_size(element_bytes, [&](auto tag) -> Error {
    using E = decltype(tag);
    masked_scatter_kernel<E><<<grid_for(numel), kThreads, 0, stream>>>(
        static_cast<E*>(out), static_cast<const E*>(self), self_index, positions, static_cast<const E*>(source),
        source_index, source_numel, numel);
    return cuda_status(cudaGetLastError(), "launching the masked_scatter kernel");
  });
}

Error launch_masked_select(void* out, const void* self, const StridedIndexer& self_index, const int64_t* positions,
                           int64_t numel, int64_t element_bytes, cudaStream_t stream) {
  if (numel == 0) return Error::Ok;
  return by_element_size(element_bytes, [&](auto tag) -> Error {
    using E = decltype(tag);
    masked_select_kernel<E><<<grid_for(numel), kThreads, 0, stream>>>(
        static_cast<E*>(out), static_cast<const E*>(self), self_index, positions, numel);
    return cuda_status(cudaGetLastError(), "launching the masked_select kernel");
  });
}

Error launch_nonzero_static(const int64_t* positions, int64_t numel, const StridedIndexer& shape, int64_t size,
                            int64_t fill_value, int64_t* out, cudaStream_t stream) {
  const int64_t elements = size * shape.ndim;
  if (elements == 0) return Error::Ok;
  nonzero_static_fill_kernel<<<grid_for(elements), kThreads, 0, stream>>>(positions + numel, size, elements,
                                                                          fill_value, out);
  KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the nonzero_static fill kernel"));
  if (numel == 0) return Error::Ok;
  nonzero_static_scatter_kernel<<<grid_for(numel), kThreads, 0, stream>>>(positions, numel, shape, size, out);
  return cuda_status(cudaGetLastError(), "launching the nonzero_static kernel");
}

Result<size_t> repeat_ends_workspace(int64_t n) {
  size_t bytes = 0;
  const cudaError_t st = cub::DeviceScan::InclusiveSum(nullptr, bytes, repeat_iterator(RepeatCount{}),
                                                       static_cast<int64_t*>(nullptr), n);
  KILN_RETURN_IF_ERROR(cuda_status(st, "sizing the repeat scan"));
  return bytes;
}

Error launch_repeat_ends(const void* repeats, DType dtype, int64_t stride, int64_t n, int64_t* ends,
                         unsigned long long* first_negative, void* workspace, size_t workspace_bytes,
                         cudaStream_t stream) {
  if (n == 0) return Error::Ok;
  RepeatCount r;
  r.data = repeats;
  r.dtype = dtype;
  r.stride = stride;
  if (first_negative != nullptr) {
    repeat_check_kernel<<<grid_for(n), kThreads, 0, stream>>>(r, n, first_negative);
    KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the repeat check kernel"));
  }
  size_t bytes = workspace_bytes;
  return cuda_status(cub::DeviceScan::InclusiveSum(workspace, bytes, repeat_iterator(r), ends, n, stream),
                     "the repeat scan");
}

Error launch_repeat_expand(const int64_t* ends, int64_t n, void* out, DType dtype, int64_t total,
                           cudaStream_t stream) {
  if (total == 0) return Error::Ok;
  if (dtype == DType::Int32)
    repeat_expand_kernel<int32_t><<<grid_for(total), kThreads, 0, stream>>>(ends, n, static_cast<int32_t*>(out), total);
  else
    repeat_expand_kernel<int64_t><<<grid_for(total), kThreads, 0, stream>>>(ends, n, static_cast<int64_t*>(out), total);
  return cuda_status(cudaGetLastError(), "launching the repeat_interleave kernel");
}

}  // namespace kiln::cudadev
