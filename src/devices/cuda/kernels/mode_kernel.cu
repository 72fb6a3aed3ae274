#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/mode_kernel.h"

namespace kiln::cudadev {
namespace {

// Comparisons as ATen makes them on its element types: float16 and bfloat16
// compare as float, so -0.0 == 0.0 and a NaN is neither less than, greater
// than nor equal to anything.
template <typename T>
__device__ inline bool mode_less(T a, T b) { return a < b; }
template <typename T>
__device__ inline bool mode_equal(T a, T b) { return a == b; }
template <>
__device__ inline bool mode_less<__half>(__half a, __half b) { return __half2float(a) < __half2float(b); }
template <>
__device__ inline bool mode_equal<__half>(__half a, __half b) { return __half2float(a) == __half2float(b); }
template <>
__device__ inline bool mode_less<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __bfloat162float(a) < __bfloat162float(b);
}
template <>
__device__ inline bool mode_equal<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __bfloat162float(a) == __bfloat162float(b);
}

__device__ inline unsigned reverse5(unsigned v) { return __brev(v) >> 27; }

// Where ATen's block reduction ranks sorted position p among positions whose
// runs are equally long (smaller wins). Thread p/2 first keeps its even slot
// over its odd one; a warp's shuffle-down tree (offsets 16, 8, .., 1, each
// keeping the lower lane on a tie) then prefers lanes by their bits read
// from the lowest up, that is by the bit-reversed lane number; warp results
// meet in warp 0 the same way, by bit-reversed warp number. The warp ranks
// above the lane, the lane above the slot. Fits 11 bits for p < 2048.
__device__ inline unsigned tie_rank(unsigned p) {
  const unsigned thread = p >> 1;
  return (reverse5(thread >> 5) << 6) | (reverse5(thread & 31u) << 1) | (p & 1u);
}

// One block of P/2 threads per line (a grid-stride loop over lines), as
// ATen's fused kernel: the line padded to P slots is bitonic-sorted in shared
// memory with the same network, so NaNs (which `<` leaves unordered) end
// where ATen's end, and the runs of equal neighbours are counted there.
template <typename T, int P>
__global__ void __launch_bounds__(P / 2) mode_block_kernel(const T* in, StridedIndexer line_index, int64_t lines,
                                                           int64_t size, T* values, int64_t* indices) {
  __shared__ T keys[P];
  __shared__ bool valid[P];
  __shared__ unsigned long long best;
  __shared__ unsigned last_position;
  const int tid = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(size);
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const int64_t base = line * size;
    for (int i = tid; i < P; i += P / 2) {
      valid[i] = i < n;
      keys[i] = i < n ? in[line_index.offset(base + i)] : T{};
    }
    if (tid == 0) {
      best = 0;
      last_position = 0;
    }
    // Padding slots are greater than everything, NaN included, so they end last.
    const auto compare_swap = [&](int a, int b, bool dir) {
      const bool ordered = (mode_less(keys[a], keys[b]) && valid[a]) || !valid[b];
      if (ordered == dir) {
        const T k = keys[a];
        keys[a] = keys[b];
        keys[b] = k;
        const bool v = valid[a];
        valid[a] = valid[b];
        valid[b] = v;
      }
    };
    for (int span = 2; span < P; span *= 2) {
      const bool dir = (tid & (span / 2)) != 0;
      for (int stride = span / 2; stride > 0; stride /= 2) {
        __syncthreads();
        const int pos = 2 * tid - (tid & (stride - 1));
        compare_swap(pos, pos + stride, dir);
      }
    }
    for (int stride = P / 2; stride > 0; stride /= 2) {
      __syncthreads();
      const int pos = 2 * tid - (tid & (stride - 1));
      compare_swap(pos, pos + stride, false);
    }
    __syncthreads();
    // Each run's last slot offers (run length, tie rank, slot); the largest
    // length wins, then the smallest rank. Only a run's last slot can carry
    // the longest count ATen's segmented scan finds, so no other slot offers.
    for (int p = 2 * tid; p < 2 * tid + 2 && p < n; ++p) {
      if (p + 1 < n && mode_equal(keys[p], keys[p + 1])) continue;
      int start = p;
      while (start > 0 && mode_equal(keys[start - 1], keys[start])) --start;
      const auto length = static_cast<unsigned long long>(p - start + 1);
      const auto rank = static_cast<unsigned long long>(2047u - tie_rank(static_cast<unsigned>(p)));
      atomicMax(&best, (length << 32) | (rank << 11) | static_cast<unsigned long long>(p));
    }
    __syncthreads();
    const T mode = keys[best & 2047u];
    // The index: the largest position holding a value equal to the mode (0 if none, as for a NaN mode).
    for (int i = tid; i < n; i += P / 2)
      if (mode_equal(in[line_index.offset(base + i)], mode)) atomicMax(&last_position, static_cast<unsigned>(i));
    __syncthreads();
    if (tid == 0) {
      values[line] = mode;
      indices[line] = last_position;
    }
    __syncthreads();
  }
}

// One thread per sorted line: the first longest run (strictly longer
// replaces), its first element's value and position.
template <typename T>
__global__ void mode_sorted_kernel(const T* sorted, const int64_t* positions, int64_t lines, int64_t size, T* values,
                                   int64_t* indices) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines; line += step) {
    const T* s = sorted + line * size;
    int64_t best_start = 0, best_length = 0, start = 0;
    for (int64_t i = 0; i < size; ++i) {
      if (i + 1 < size && mode_equal(s[i], s[i + 1])) continue;
      if (i + 1 - start > best_length) {
        best_length = i + 1 - start;
        best_start = start;
      }
      start = i + 1;
    }
    values[line] = s[best_start];
    indices[line] = positions[line * size + best_start];
  }
}

// Calls fn(T{}) with the element type of `dtype`.
template <typename Fn>
Error visit_mode_type(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Bool: return fn(bool{});
    case DType::UInt8: return fn(uint8_t{});
    case DType::Int8: return fn(int8_t{});
    case DType::Int16: return fn(int16_t{});
    case DType::Int32: return fn(int32_t{});
    case DType::Int64: return fn(int64_t{});
    case DType::Float16: return fn(__half{});
    case DType::BFloat16: return fn(__nv_bfloat16{});
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    default: break;
  }
  return set_error(Error::NotSupported, std::string("mode of dtype ") + dtype_name(dtype) + " is not supported on CUDA");
}

unsigned grid_for(int64_t work, int64_t per_block) {
  const int64_t blocks = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

}  // namespace

bool mode_supports(DType dtype) {
  switch (dtype) {
    case DType::Bool: case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64: return true;
    default: return false;
  }
}

Error launch_mode_block(const void* in, DType dtype, const StridedIndexer& line_index, int64_t lines, int64_t size,
                        void* values, int64_t* indices, cudaStream_t stream) {
  if (lines == 0) return Error::Ok;
  if (size < 1 || size > kModeBlockMaxLine)
    return set_error(Error::Internal, "mode's block kernel takes lines of 1 to 2048 elements, not " +
                                          std::to_string(size));
  return visit_mode_type(dtype, [&](auto tag) -> Error {
    using T = decltype(tag);
    const auto* src = static_cast<const T*>(in);
    auto* dst = static_cast<T*>(values);
    const unsigned grid = grid_for(lines, 1);
    // ATen's three padded sizes: its block size is the line rounded up to a
    // power of two, then to 128 or 1024 unless it is 2048.
    if (size <= 128) mode_block_kernel<T, 128><<<grid, 64, 0, stream>>>(src, line_index, lines, size, dst, indices);
    else if (size <= 1024) mode_block_kernel<T, 1024><<<grid, 512, 0, stream>>>(src, line_index, lines, size, dst, indices);
    else mode_block_kernel<T, 2048><<<grid, 1024, 0, stream>>>(src, line_index, lines, size, dst, indices);
    return cuda_status(cudaGetLastError(), "launching the mode kernel");
  });
}

Error launch_mode_sorted(const void* sorted, DType dtype, const int64_t* positions, int64_t lines, int64_t size,
                         void* values, int64_t* indices, cudaStream_t stream) {
  if (lines == 0 || size == 0) return Error::Ok;
  return visit_mode_type(dtype, [&](auto tag) -> Error {
    using T = decltype(tag);
    mode_sorted_kernel<T><<<grid_for(lines, 128), 128, 0, stream>>>(static_cast<const T*>(sorted), positions, lines,
                                                                     size, static_cast<T*>(values), indices);
    return cuda_status(cudaGetLastError(), "launching the sorted-lines mode kernel");
  });
}

}  // namespace kiln::cudadev
