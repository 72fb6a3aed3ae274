#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_convert.cuh"
#include "devices/cuda/kernels/int8_mm_kernel.h"

namespace kiln::cudadev {
namespace {

// ---- _int_mm: 16 x 16 output tiles, k in steps of 16 through shared memory.
constexpr int kTile = 16;
constexpr unsigned kMaxGridY = 65535;

__global__ void int_mm_tiled_kernel(StridedMatrix<const int8_t> a, StridedMatrix<const int8_t> b,
                                    StridedMatrix<int32_t> out, int64_t m, int64_t n, int64_t k) {
  __shared__ int32_t as[kTile][kTile + 1];
  __shared__ int32_t bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  const int64_t row_tiles = (m + kTile - 1) / kTile;
  // Block-uniform loop: every thread of the block reaches each barrier.
  for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
    const int64_t row = tile * kTile + ty;
    // Unsigned sums wrap as int32 arithmetic does on the device, without
    // the undefined behaviour of signed overflow.
    uint32_t acc = 0;
    for (int64_t k0 = 0; k0 < k; k0 += kTile) {
      const int64_t ka = k0 + tx, kb = k0 + ty;
      as[ty][tx] = (row < m && ka < k) ? a.ptr[row * a.rs + ka * a.cs] : 0;
      bs[ty][tx] = (kb < k && col < n) ? b.ptr[kb * b.rs + col * b.cs] : 0;
      __syncthreads();
#pragma unroll
      for (int q = 0; q < kTile; ++q)
        acc += static_cast<uint32_t>(as[ty][q]) * static_cast<uint32_t>(bs[q][tx]);
      __syncthreads();
    }
    if (row < m && col < n) out.ptr[row * out.rs + col * out.cs] = static_cast<int32_t>(acc);
  }
}

// ---- _weight_int8pack_mm: one warp per output column j and group of up to
// kRows rows of x, so weight row j is streamed once per group (once in all
// for a decode step's m <= kRows).
constexpr int kRows = 4;
constexpr int kWarps = 8;

// How a lane reads its weight row: 16 int8 at a time (one 16-byte load: a
// warp's load is 512 contiguous bytes, enough in flight to stream the weight
// near the memory's bandwidth), 4 at a time, or one by one for other strides.
enum class RowLoad { Bytes16, Bytes4, Scalar };

template <typename T, int kBytes>
__device__ inline void dot_chunk(const int8_t (&wv)[kBytes], const T* xr, int64_t x_rs, int64_t x_cs, int64_t c,
                                 int rows, float (&acc)[kRows]) {
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r < rows) {
      const T* p = xr + r * x_rs + c * x_cs;
      float sum = 0.0f;
#pragma unroll
      for (int b = 0; b < kBytes; ++b) sum += static_cast<float>(wv[b]) * to_float(p[b * x_cs]);
      acc[r] += sum;
    }
  }
}

template <typename T, RowLoad kLoad>
__global__ void __launch_bounds__(kWarps * 32)
    weight_int8pack_kernel(const T* x, int64_t x_rs, int64_t x_cs, StridedMatrix<const int8_t> w, const T* scales,
                           int64_t scales_stride, T* out, int64_t m, int64_t n, int64_t k) {
  const int lane = threadIdx.x & 31;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (j >= n) return;  // whole warps leave; nothing below synchronises the block
  const int8_t* wrow = w.ptr + j * w.rs;
  const float scale = to_float(scales[j * scales_stride]);
  for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * kRows; r0 < m;
       r0 += static_cast<int64_t>(gridDim.y) * kRows) {
    const int rows = m - r0 < kRows ? static_cast<int>(m - r0) : kRows;
    const T* xr = x + r0 * x_rs;
    float acc[kRows] = {};
    int64_t tail = 0;  // first column the scalar loop below takes
    if constexpr (kLoad == RowLoad::Bytes16) {
      const int64_t chunks = k / 16;
      const auto* w16 = reinterpret_cast<const int4*>(wrow);
      for (int64_t q = lane; q < chunks; q += 32) {
        const int4 raw = w16[q];
        int8_t wv[16];
        memcpy(wv, &raw, 16);
        dot_chunk<T, 16>(wv, xr, x_rs, x_cs, q * 16, rows, acc);
      }
      tail = chunks * 16;
    } else if constexpr (kLoad == RowLoad::Bytes4) {
      const int64_t chunks = k / 4;
      const auto* w4 = reinterpret_cast<const char4*>(wrow);
      for (int64_t q = lane; q < chunks; q += 32) {
        const char4 raw = w4[q];
        const int8_t wv[4] = {raw.x, raw.y, raw.z, raw.w};
        dot_chunk<T, 4>(wv, xr, x_rs, x_cs, q * 4, rows, acc);
      }
      tail = chunks * 4;
    }
    for (int64_t c = tail + lane; c < k; c += 32) {
      const float wv = static_cast<float>(wrow[c * w.cs]);
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (r < rows) acc[r] += wv * to_float(xr[r * x_rs + c * x_cs]);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) acc[r] += __shfl_xor_sync(0xFFFFFFFFu, acc[r], offset);
    }
    if (lane == 0) {
      for (int r = 0; r < rows; ++r) out[(r0 + r) * n + j] = from_float<T>(acc[r] * scale);
    }
  }
}

template <typename T>
Error launch_int8pack_typed(const void* x, int64_t x_rs, int64_t x_cs, StridedMatrix<const int8_t> w,
                            const void* scales, int64_t scales_stride, void* out, int64_t m, int64_t n, int64_t k,
                            cudaStream_t stream) {
  const auto base = reinterpret_cast<uintptr_t>(w.ptr);
  const bool rows_contiguous = w.cs == 1 || k == 1;
  const auto aligned = [&](int64_t bytes) {
    return rows_contiguous && (w.rs % bytes == 0 || n == 1) && base % bytes == 0;
  };
  const int64_t col_blocks = (n + kWarps - 1) / kWarps;
  const int64_t row_groups = (m + kRows - 1) / kRows;
  const dim3 grid(static_cast<unsigned>(col_blocks),
                  static_cast<unsigned>(row_groups < kMaxGridY ? row_groups : kMaxGridY));
  const auto* xt = static_cast<const T*>(x);
  const auto* st = static_cast<const T*>(scales);
  auto* ot = static_cast<T*>(out);
  if (aligned(16))
    weight_int8pack_kernel<T, RowLoad::Bytes16><<<grid, kWarps * 32, 0, stream>>>(xt, x_rs, x_cs, w, st,
                                                                                  scales_stride, ot, m, n, k);
  else if (aligned(4))
    weight_int8pack_kernel<T, RowLoad::Bytes4><<<grid, kWarps * 32, 0, stream>>>(xt, x_rs, x_cs, w, st,
                                                                                 scales_stride, ot, m, n, k);
  else
    weight_int8pack_kernel<T, RowLoad::Scalar><<<grid, kWarps * 32, 0, stream>>>(xt, x_rs, x_cs, w, st,
                                                                                 scales_stride, ot, m, n, k);
  return cuda_status(cudaGetLastError(), "launching the weight_int8pack_mm kernel");
}

}  // namespace

Error launch_int_mm_tiled(StridedMatrix<const int8_t> a, StridedMatrix<const int8_t> b, StridedMatrix<int32_t> out,
                          int64_t m, int64_t n, int64_t k, cudaStream_t stream) {
  if (m == 0 || n == 0) return Error::Ok;
  const int64_t col_tiles = (n + kTile - 1) / kTile, row_tiles = (m + kTile - 1) / kTile;
  if (col_tiles > 0x7FFFFFFF) return set_error(Error::NotSupported, "_int_mm: too many columns for the kernel grid");
  const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles < kMaxGridY ? row_tiles : kMaxGridY));
  int_mm_tiled_kernel<<<grid, dim3(kTile, kTile), 0, stream>>>(a, b, out, m, n, k);
  return cuda_status(cudaGetLastError(), "launching the _int_mm kernel");
}

Error launch_weight_int8pack_mm(const void* x, int64_t x_rs, int64_t x_cs, StridedMatrix<const int8_t> w,
                                const void* scales, int64_t scales_stride, DType dtype, void* out, int64_t m,
                                int64_t n, int64_t k, cudaStream_t stream) {
  if (m == 0 || n == 0) return Error::Ok;
  if ((n + kWarps - 1) / kWarps > 0x7FFFFFFF)
    return set_error(Error::NotSupported, "_weight_int8pack_mm: too many columns for the kernel grid");
  switch (dtype) {
    case DType::Float32:
      return launch_int8pack_typed<float>(x, x_rs, x_cs, w, scales, scales_stride, out, m, n, k, stream);
    case DType::Float16:
      return launch_int8pack_typed<__half>(x, x_rs, x_cs, w, scales, scales_stride, out, m, n, k, stream);
    case DType::BFloat16:
      return launch_int8pack_typed<__nv_bfloat16>(x, x_rs, x_cs, w, scales, scales_stride, out, m, n, k, stream);
    default:
      return set_error(Error::NotSupported,
                       std::string("_weight_int8pack_mm of dtype ") + dtype_name(dtype) + " on CUDA");
  }
}

}  // namespace kiln::cudadev
