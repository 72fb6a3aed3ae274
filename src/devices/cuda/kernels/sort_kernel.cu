#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/device/device_select.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/sort_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < (1 << 16) ? blocks : (1 << 16));
}

size_t align_up(size_t n) { return (n + 255) & ~size_t{255}; }

// Row-major element number of position i of line `line`.
__device__ inline int64_t element_of(const LineShape& s, int64_t line, int64_t i) {
  return ((line / s.inner) * s.size + i) * s.inner + line % s.inner;
}

// Radix keys: every element maps to an unsigned integer whose order is the
// element's order as ATen sorts (NaN above +inf, -0.0 equal to +0.0), so CUB
// sorts plain integers and never compares a NaN.
__device__ inline uint32_t float_key(float v) {
  if (v != v) return 0xFFFFFFFFu;
  if (v == 0.0f) v = 0.0f;
  const uint32_t b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ inline uint64_t double_key(double v) {
  if (v != v) return ~uint64_t{0};
  if (v == 0.0) v = 0.0;
  const auto b = static_cast<uint64_t>(__double_as_longlong(v));
  return (b >> 63) ? ~b : (b | (uint64_t{1} << 63));
}

template <typename K>
__device__ K key_of(const void* in, DType dtype, int64_t off);
template <>
__device__ uint32_t key_of<uint32_t>(const void* in, DType dtype, int64_t off) {
  switch (dtype) {
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: return float_key(static_cast<float>(load_double(in, dtype, off)));
    case DType::Bool:
    case DType::UInt8:
    case DType::UInt16:
    case DType::UInt32: return static_cast<uint32_t>(load_int(in, dtype, off));
    default: return static_cast<uint32_t>(static_cast<int32_t>(load_int(in, dtype, off))) ^ 0x80000000u;
  }
}
template <>
__device__ uint64_t key_of<uint64_t>(const void* in, DType dtype, int64_t off) {
  switch (dtype) {
    case DType::Float64: return double_key(load_double(in, dtype, off));
    case DType::UInt64: return static_cast<uint64_t>(load_int(in, dtype, off));
    default: return static_cast<uint64_t>(load_int(in, dtype, off)) ^ (uint64_t{1} << 63);
  }
}

template <typename K>
__global__ void gather_lines_kernel(const void* in, DType dtype, StridedIndexer in_index, LineShape shape, K* keys,
                                    int64_t* pos) {
  const int64_t n = shape.lines() * shape.size;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < n; b += step) {
    const int64_t line = b / shape.size, i = b % shape.size;
    keys[b] = key_of<K>(in, dtype, in_index.offset(element_of(shape, line, i)));
    pos[b] = i;
  }
}

// Writes the first `count` sorted positions of each line and the input
// elements they name (copied as raw bytes, so values are the input's own).
__global__ void scatter_lines_kernel(const void* in, size_t elem, StridedIndexer in_index, const int64_t* pos,
                                     LineShape shape, int64_t count, StridedIndexer out_index, void* values,
                                     int64_t* indices) {
  const int64_t n = shape.lines() * count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  LineShape out_shape = shape;
  out_shape.size = count;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < n; b += step) {
    const int64_t line = b / count, i = b % count;
    const int64_t p = pos[line * shape.size + i];
    const int64_t src = in_index.offset(element_of(shape, line, p));
    const int64_t off = out_index.offset(element_of(out_shape, line, i));
    const auto* from = static_cast<const unsigned char*>(in) + src * static_cast<int64_t>(elem);
    auto* to = static_cast<unsigned char*>(values) + off * static_cast<int64_t>(elem);
    for (size_t byte = 0; byte < elem; ++byte) to[byte] = from[byte];
    indices[off] = p;
  }
}

__global__ void segment_offsets_kernel(int64_t* offsets, int64_t segments, int64_t size) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i <= segments; i += step)
    offsets[i] = i * size;
}

// Workspace layout: keys_in | keys_out | pos_in | pos_out | offsets | CUB temp.
struct SortLayout {
  size_t keys_in = 0, keys_out = 0, pos_in = 0, pos_out = 0, offsets = 0, temp = 0, total = 0;
};

template <typename K>
Result<SortLayout> sort_layout(const LineShape& shape, bool descending) {
  const int64_t n = shape.lines() * shape.size;
  SortLayout l;
  size_t at = 0;
  l.keys_in = at;
  at += align_up(static_cast<size_t>(n) * sizeof(K));
  l.keys_out = at;
  at += align_up(static_cast<size_t>(n) * sizeof(K));
  l.pos_in = at;
  at += align_up(static_cast<size_t>(n) * sizeof(int64_t));
  l.pos_out = at;
  at += align_up(static_cast<size_t>(n) * sizeof(int64_t));
  l.offsets = at;
  at += align_up(static_cast<size_t>(shape.lines() + 1) * sizeof(int64_t));
  size_t temp = 0;
  if (shape.lines() == 1) {
    const cudaError_t st =
        descending ? cub::DeviceRadixSort::SortPairsDescending(nullptr, temp, static_cast<const K*>(nullptr),
                                                               static_cast<K*>(nullptr),
                                                               static_cast<const int64_t*>(nullptr),
                                                               static_cast<int64_t*>(nullptr), n)
                   : cub::DeviceRadixSort::SortPairs(nullptr, temp, static_cast<const K*>(nullptr),
                                                     static_cast<K*>(nullptr), static_cast<const int64_t*>(nullptr),
                                                     static_cast<int64_t*>(nullptr), n);
    KILN_RETURN_IF_ERROR(cuda_status(st, "sizing the radix sort"));
    l.temp = at;
    l.total = at + align_up(temp);
    return l;
  }
  const cudaError_t st =
      descending ? cub::DeviceSegmentedSort::StableSortPairsDescending(
                       nullptr, temp, static_cast<const K*>(nullptr), static_cast<K*>(nullptr),
                       static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), n, shape.lines(),
                       static_cast<const int64_t*>(nullptr), static_cast<const int64_t*>(nullptr))
                 : cub::DeviceSegmentedSort::StableSortPairs(
                       nullptr, temp, static_cast<const K*>(nullptr), static_cast<K*>(nullptr),
                       static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), n, shape.lines(),
                       static_cast<const int64_t*>(nullptr), static_cast<const int64_t*>(nullptr));
  KILN_RETURN_IF_ERROR(cuda_status(st, "sizing the segmented sort"));
  l.temp = at;
  l.total = at + align_up(temp);
  return l;
}

template <typename K>
Error sort_typed(const void* in, DType dtype, const StridedIndexer& in_index, const LineShape& shape, bool descending,
                 int64_t count, void* values, int64_t* indices, const StridedIndexer& out_index, void* workspace,
                 size_t workspace_bytes, cudaStream_t stream) {
  KILN_ASSIGN_OR_RETURN(SortLayout l, sort_layout<K>(shape, descending));
  if (workspace_bytes < l.total) return set_error(Error::Internal, "sort workspace too small");
  auto* base = static_cast<char*>(workspace);
  auto* keys_in = reinterpret_cast<K*>(base + l.keys_in);
  auto* keys_out = reinterpret_cast<K*>(base + l.keys_out);
  auto* pos_in = reinterpret_cast<int64_t*>(base + l.pos_in);
  auto* pos_out = reinterpret_cast<int64_t*>(base + l.pos_out);
  auto* offsets = reinterpret_cast<int64_t*>(base + l.offsets);
  const int64_t n = shape.lines() * shape.size;
  gather_lines_kernel<K><<<grid_for(n), kThreads, 0, stream>>>(in, dtype, in_index, shape, keys_in, pos_in);
  segment_offsets_kernel<<<grid_for(shape.lines() + 1), kThreads, 0, stream>>>(offsets, shape.lines(), shape.size);
  KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the sort gather kernels"));
  size_t temp = l.total - l.temp;
  // One line (a 1-d sort, a whole-tensor median): the segmented sort would
  // give the one segment to a single thread block; the device-wide radix
  // sort, stable too, spreads it over the whole GPU.
  cudaError_t st = cudaSuccess;
  constexpr int kKeyBits = static_cast<int>(sizeof(K) * 8);
  if (shape.lines() == 1 && descending)
    st = cub::DeviceRadixSort::SortPairsDescending(base + l.temp, temp, keys_in, keys_out, pos_in, pos_out, n, 0,
                                                   kKeyBits, stream);
  else if (shape.lines() == 1)
    st = cub::DeviceRadixSort::SortPairs(base + l.temp, temp, keys_in, keys_out, pos_in, pos_out, n, 0, kKeyBits,
                                         stream);
  else if (descending)
    st = cub::DeviceSegmentedSort::StableSortPairsDescending(base + l.temp, temp, keys_in, keys_out, pos_in, pos_out,
                                                             n, shape.lines(), offsets, offsets + 1, stream);
  else
    st = cub::DeviceSegmentedSort::StableSortPairs(base + l.temp, temp, keys_in, keys_out, pos_in, pos_out, n,
                                                   shape.lines(), offsets, offsets + 1, stream);
  KILN_RETURN_IF_ERROR(cuda_status(st, shape.lines() == 1 ? "the radix sort" : "the segmented sort"));
  if (count > 0) {
    scatter_lines_kernel<<<grid_for(shape.lines() * count), kThreads, 0, stream>>>(
        in, element_size(dtype), in_index, pos_out, shape, count, out_index, values, indices);
  }
  return cuda_status(cudaGetLastError(), "launching the sort scatter kernel");
}

// Calls fn(K{}) with the radix key type for `dtype`.
template <typename Fn>
Error visit_sort_type(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64: return fn(uint64_t{});
    case DType::Float32: case DType::Float16: case DType::BFloat16: case DType::Bool: case DType::UInt8:
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::UInt16: case DType::UInt32:
      return fn(uint32_t{});
    default: break;
  }
  return set_error(Error::NotSupported, std::string("sorting dtype ") + dtype_name(dtype) + " is not supported on CUDA");
}

__global__ void nonzero_flags_kernel(const void* in, DType dtype, StridedIndexer in_index, int64_t numel,
                                     uint8_t* flags, int64_t* iota) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < numel; k += step) {
    const int64_t off = in_index.offset(k);
    if (dtype == DType::Complex64) {
      const float* c = static_cast<const float*>(in) + 2 * off;
      flags[k] = c[0] != 0.0f || c[1] != 0.0f;
    } else if (dtype == DType::Complex128) {
      const double* c = static_cast<const double*>(in) + 2 * off;
      flags[k] = c[0] != 0.0 || c[1] != 0.0;
    } else {
      flags[k] = is_integral_dtype(dtype) ? load_int(in, dtype, off) != 0 : load_double(in, dtype, off) != 0.0;
    }
    iota[k] = k;
  }
}

__global__ void unravel_kernel(const int64_t* flat, int64_t rows, StridedIndexer shape, int64_t* out,
                               int64_t stride_row, int64_t stride_dim) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step) {
    int64_t k = flat[r];
    for (int d = shape.ndim - 1; d >= 0; --d) {
      out[r * stride_row + d * stride_dim] = k % shape.sizes[d];
      k /= shape.sizes[d];
    }
  }
}

}  // namespace

bool sortable(DType dtype) { return is_floating_dtype(dtype) || is_integral_dtype(dtype); }

Result<size_t> sort_lines_workspace(DType dtype, const LineShape& shape) {
  if (shape.lines() * shape.size == 0) return size_t{0};
  size_t bytes = 0;
  KILN_RETURN_IF_ERROR(visit_sort_type(dtype, [&](auto tag) -> Error {
    using T = decltype(tag);
    // Descending sizes the same temp storage as ascending; take the larger to be safe.
    KILN_ASSIGN_OR_RETURN(SortLayout a, sort_layout<T>(shape, false));
    KILN_ASSIGN_OR_RETURN(SortLayout d, sort_layout<T>(shape, true));
    bytes = a.total > d.total ? a.total : d.total;
    return Error::Ok;
  }));
  return bytes;
}

Error launch_sort_lines(const void* in, DType dtype, const StridedIndexer& in_index, const LineShape& shape,
                        bool descending, int64_t count, void* values, int64_t* indices,
                        const StridedIndexer& out_index, void* workspace, size_t workspace_bytes,
                        cudaStream_t stream) {
  if (shape.lines() * shape.size == 0) return Error::Ok;
  return visit_sort_type(dtype, [&](auto tag) -> Error {
    using T = decltype(tag);
    return sort_typed<T>(in, dtype, in_index, shape, descending, count, values, indices, out_index, workspace,
                         workspace_bytes, stream);
  });
}

Result<size_t> nonzero_workspace(int64_t numel) {
  size_t temp = 0;
  const cudaError_t st = cub::DeviceSelect::Flagged(nullptr, temp, static_cast<const int64_t*>(nullptr),
                                                    static_cast<const uint8_t*>(nullptr),
                                                    static_cast<int64_t*>(nullptr),
                                                    static_cast<int64_t*>(nullptr), numel);
  KILN_RETURN_IF_ERROR(cuda_status(st, "sizing the nonzero selection"));
  return align_up(static_cast<size_t>(numel)) + align_up(static_cast<size_t>(numel) * 8) + align_up(temp);
}

Error launch_nonzero_flat(const void* in, DType dtype, const StridedIndexer& in_index, int64_t numel,
                          int64_t* flat_out, int64_t* count_device, void* workspace, size_t workspace_bytes,
                          cudaStream_t stream) {
  auto* base = static_cast<char*>(workspace);
  auto* flags = reinterpret_cast<uint8_t*>(base);
  auto* iota = reinterpret_cast<int64_t*>(base + align_up(static_cast<size_t>(numel)));
  void* temp_ptr = base + align_up(static_cast<size_t>(numel)) + align_up(static_cast<size_t>(numel) * 8);
  size_t temp = workspace_bytes - (align_up(static_cast<size_t>(numel)) + align_up(static_cast<size_t>(numel) * 8));
  if (numel > 0) {
    nonzero_flags_kernel<<<grid_for(numel), kThreads, 0, stream>>>(in, dtype, in_index, numel, flags, iota);
    KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the nonzero flag kernel"));
  }
  return cuda_status(cub::DeviceSelect::Flagged(temp_ptr, temp, iota, flags, flat_out, count_device, numel, stream),
                     "the nonzero selection");
}

Error launch_unravel(const int64_t* flat, int64_t rows, const StridedIndexer& sizes, int64_t* out,
                     int64_t out_stride_row, int64_t out_stride_dim, cudaStream_t stream) {
  if (rows == 0 || sizes.ndim == 0) return Error::Ok;
  unravel_kernel<<<grid_for(rows), kThreads, 0, stream>>>(flat, rows, sizes, out, out_stride_row, out_stride_dim);
  return cuda_status(cudaGetLastError(), "launching the unravel kernel");
}

}  // namespace kiln::cudadev
