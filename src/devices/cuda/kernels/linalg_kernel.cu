#include "devices/cuda/kernels/linalg_kernel.h"

#include <cstring>
#include <string>

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

struct alignas(16) Bytes16 {
  unsigned long long lo, hi;
};

unsigned blocks_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65535) blocks = 65535;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

template <typename E>
__device__ E element_from(ElementBits bits) {
  E e;
  const Bytes16 b{bits.lo, bits.hi};
  memcpy(&e, &b, sizeof(E));
  return e;
}

template <typename E>
__global__ void lu_lower_kernel(const E* lu, StridedIndexer lu_index, E* l, int64_t batches, int64_t m, int64_t n,
                                int64_t k, ElementBits one_bits) {
  const E one = element_from<E>(one_bits);
  const int64_t total = batches * m * k;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = idx % k;
    const int64_t i = (idx / k) % m;
    const int64_t b = idx / (k * m);
    E v{};
    if (i > j) v = lu[lu_index.offset((b * m + i) * n + j)];
    else if (i == j) v = one;
    l[idx] = v;
  }
}

template <typename E>
__global__ void lu_upper_kernel(const E* lu, StridedIndexer lu_index, E* u, int64_t batches, int64_t m, int64_t n,
                                int64_t k) {
  const int64_t total = batches * k * n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = idx % n;
    const int64_t i = (idx / n) % k;
    const int64_t b = idx / (n * k);
    E v{};
    if (j >= i) v = lu[lu_index.offset((b * m + i) * n + j)];
    u[idx] = v;
  }
}

// One thread per matrix: the swaps are sequential. Row perm[j] of A is row j
// of L U, so P has a one at (perm[j], j).
template <typename E>
__global__ void lu_pivots_kernel(const int32_t* pivots, StridedIndexer pivots_index, E* p, int64_t* perm,
                                 int64_t batches, int64_t m, int64_t k, ElementBits one_bits,
                                 unsigned long long* first_bad) {
  const E one = element_from<E>(one_bits);
  for (int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; b < batches;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t* row = perm + b * m;
    for (int64_t j = 0; j < m; ++j) row[j] = j;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t pos = b * k + i;
      const int64_t target = static_cast<int64_t>(pivots[pivots_index.offset(pos)]) - 1;
      if (target < 0 || target >= m) {
        if (first_bad != nullptr) atomicMin(first_bad, static_cast<unsigned long long>(pos));
        continue;
      }
      const int64_t t = row[i];
      row[i] = row[target];
      row[target] = t;
    }
    E* mat = p + b * m * m;
    for (int64_t j = 0; j < m; ++j) mat[row[j] * m + j] = one;
  }
}

template <typename E>
__global__ void set_diagonal_kernel(E* out, int64_t batches, int64_t n, int64_t matrix_stride, ElementBits one_bits) {
  const E one = element_from<E>(one_bits);
  const int64_t total = batches * n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx % n;
    out[(idx / n) * matrix_stride + i * (n + 1)] = one;
  }
}

__global__ void batch_pointers_kernel(void** pointers, char* base, int64_t stride_bytes, int64_t count) {
  for (int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; b < count;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x)
    pointers[b] = base + b * stride_bytes;
}

/// Calls fn(E{}) with E an unsigned type (or Bytes16) of `bytes` bytes.
template <typename Fn>
Error by_size(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    case 16: return fn(Bytes16{});
    default: break;
  }
  return set_error(Error::NotSupported, "elements of " + std::to_string(bytes) + " bytes are not supported");
}

}  // namespace

bool one_bits(DType dtype, ElementBits* one) {
  *one = ElementBits{};
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64: one->lo = 1; return true;
    case DType::Float16: one->lo = 0x3C00; return true;
    case DType::BFloat16: one->lo = 0x3F80; return true;
    case DType::Float32:
    case DType::Complex64: one->lo = 0x3F800000ull; return true;  // the real part is the low float
    case DType::Float64:
    case DType::Complex128: one->lo = 0x3FF0000000000000ull; return true;
    default: return false;
  }
}

Error launch_lu_unpack_data(const void* lu, const StridedIndexer& lu_index, void* l, void* u, int64_t batches,
                            int64_t m, int64_t n, size_t element_bytes, ElementBits one, cudaStream_t stream) {
  const int64_t k = m < n ? m : n;
  return by_size(element_bytes, [&](auto tag) -> Error {
    using E = decltype(tag);
    if (batches * m * k > 0) {
      lu_lower_kernel<E><<<blocks_for(batches * m * k), kThreads, 0, stream>>>(
          static_cast<const E*>(lu), lu_index, static_cast<E*>(l), batches, m, n, k, one);
      KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching lu_unpack's L kernel"));
    }
    if (batches * k * n > 0) {
      lu_upper_kernel<E><<<blocks_for(batches * k * n), kThreads, 0, stream>>>(
          static_cast<const E*>(lu), lu_index, static_cast<E*>(u), batches, m, n, k);
      KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching lu_unpack's U kernel"));
    }
    return Error::Ok;
  });
}

Error launch_lu_unpack_pivots(const int32_t* pivots, const StridedIndexer& pivots_index, void* p, int64_t* perm,
                              int64_t batches, int64_t m, int64_t k, size_t element_bytes, ElementBits one,
                              unsigned long long* first_bad, cudaStream_t stream) {
  if (batches == 0 || m == 0) return Error::Ok;
  return by_size(element_bytes, [&](auto tag) -> Error {
    using E = decltype(tag);
    lu_pivots_kernel<E><<<blocks_for(batches), kThreads, 0, stream>>>(pivots, pivots_index, static_cast<E*>(p), perm,
                                                                       batches, m, k, one, first_bad);
    return cuda_status(cudaGetLastError(), "launching lu_unpack's P kernel");
  });
}

Error launch_set_diagonal(void* out, int64_t batches, int64_t n, int64_t matrix_stride, size_t element_bytes,
                          ElementBits one, cudaStream_t stream) {
  if (batches * n == 0) return Error::Ok;
  return by_size(element_bytes, [&](auto tag) -> Error {
    using E = decltype(tag);
    set_diagonal_kernel<E><<<blocks_for(batches * n), kThreads, 0, stream>>>(static_cast<E*>(out), batches, n,
                                                                              matrix_stride, one);
    return cuda_status(cudaGetLastError(), "launching the diagonal kernel");
  });
}

Error launch_batch_pointers(void** pointers, void* base, int64_t stride_bytes, int64_t count, cudaStream_t stream) {
  if (count == 0) return Error::Ok;
  batch_pointers_kernel<<<blocks_for(count), kThreads, 0, stream>>>(pointers, static_cast<char*>(base), stride_bytes,
                                                                    count);
  return cuda_status(cudaGetLastError(), "launching the batch pointers kernel");
}

}  // namespace kiln::cudadev
