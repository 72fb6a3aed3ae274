#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_convert.cuh"
#include "devices/cuda/kernels/quantized_gemv_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kUnroll = 2;       // 16-byte weight vectors in flight per lane and column
constexpr int64_t kVecBytes = 16;

// Values a 16-byte weight vector holds.
template <WeightCodes C>
constexpr int vector_values() {
  return C == WeightCodes::Int8 ? 16 : 32;
}

// Columns a warp takes: they share each load of x, its conversion to float
// and its sum, which at 4 bits a code cost as much as the codes' own
// arithmetic unless spread over several columns.
template <WeightCodes C>
constexpr int cols_per_warp() {
  return C == WeightCodes::Int8 ? 2 : 4;
}

// `n` consecutive values of x (contiguous, 16-byte aligned) as float32.
template <typename T, int n>
__device__ inline void load_x(const T* x, float (&out)[n]) {
  constexpr int per_load = static_cast<int>(kVecBytes / sizeof(T));
  static_assert(n % per_load == 0, "whole 16-byte loads");
  const uint4* p = reinterpret_cast<const uint4*>(x);
#pragma unroll
  for (int v = 0; v < n / per_load; ++v) {
    const uint4 raw = __ldg(p + v);
    T vals[per_load];
    memcpy(vals, &raw, sizeof(raw));
#pragma unroll
    for (int e = 0; e < per_load; ++e) out[v * per_load + e] = to_float(vals[e]);
  }
}

// Sum over one weight vector of code-float * x, where code-float is exact by
// bit placement: an int8 code b is 1 + (b + 128) / 256 (its offset byte in
// the top 8 mantissa bits of 1.0), a 4-bit code c is 0.5 + c / 256. The caller
// removes the offsets with the sum of x over the vector.
template <WeightCodes C>
__device__ inline float offset_dot(const uint4& w, const float* xv) {
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (C == WeightCodes::Int8) {
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        // Byte b at bits 15..22, its sign bit flipped (b + 128), over 1.0's exponent.
        const uint32_t bits = (((words[i] >> (8 * b)) & 0xFFu) << 15) ^ 0x3FC00000u;
        s = fmaf(__uint_as_float(bits), xv[4 * i + b], s);
      }
    } else {
      // The codes are 4 bytes of two nibbles each, code 2j in byte j's low
      // nibble. Masking the word's low and high nibbles once leaves a code per
      // byte; one byte permute per code then lays it at mantissa bits 16..19
      // under 0.5's exponent byte (0x3F) with zeros below: 0.5 + c / 256.
      // That is an integer instruction per code, where a shift, mask and or
      // per code made the int4 product issue-bound rather than memory-bound.
      const uint32_t lo = words[i] & 0x0F0F0F0Fu, hi = (words[i] >> 4) & 0x0F0F0F0Fu;
      constexpr uint32_t kHalfExponent = 0x3F000000u;  // bytes 4..7 of the permute's source
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        // Result bytes (low to high): 0, 0, code byte b, 0x3F.
        const uint32_t sel = 0x7044u | (static_cast<uint32_t>(b) << 8);
        s = fmaf(__uint_as_float(__byte_perm(lo, kHalfExponent, sel)), xv[8 * i + 2 * b], s);
        s = fmaf(__uint_as_float(__byte_perm(hi, kHalfExponent, sel)), xv[8 * i + 2 * b + 1], s);
      }
    }
  }
  return s;
}

// Grid: x = blocks of columns, y = 1. A block's warps form groups of
// `warps_per_group` warps; each group takes cols_per_warp columns and its warps
// split their rows' vectors (part * 32 + lane + t * warps_per_group * 32), so
// consecutive lanes read consecutive 16-byte vectors of a row. With few
// columns (decode projections on a large GPU) more warps share each row, so
// the GPU still has enough loads in flight; partial sums meet in shared
// memory, in a fixed order (deterministic).
template <typename T, int M, WeightCodes C>
__global__ void __launch_bounds__(kThreads) quantized_gemv_kernel(const QuantizedGemvParams p, int warps_per_group) {
  constexpr int kVals = vector_values<C>();
  constexpr int kColsPerWarp = cols_per_warp<C>();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int groups = kWarps / warps_per_group;
  const int group = warp / warps_per_group, part = warp % warps_per_group;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * groups + group) * kColsPerWarp;
  const int64_t vecs = p.K / kVals;
  const int64_t step = static_cast<int64_t>(warps_per_group) * 32;
  const auto* wbase = static_cast<const unsigned char*>(p.w);
  const T* xbase = static_cast<const T*>(p.x);
  const bool grouped = C == WeightCodes::Int4Groups || p.group_size > 0;
  const auto vectors_per_group = static_cast<uint32_t>(grouped ? p.group_size / kVals : 1);
  const int vectors_shift =
      (vectors_per_group & (vectors_per_group - 1)) == 0 ? __ffs(static_cast<int>(vectors_per_group)) - 1 : -1;

  float acc[M][kColsPerWarp];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int c = 0; c < kColsPerWarp; ++c) acc[m][c] = 0.0f;

  bool live[kColsPerWarp];
  const uint4* wrow[kColsPerWarp];
#pragma unroll
  for (int c = 0; c < kColsPerWarp; ++c) {
    live[c] = n0 + c < p.N;
    wrow[c] = reinterpret_cast<const uint4*>(wbase + (live[c] ? n0 + c : 0) * p.w_rs);
  }

  for (int64_t q0 = static_cast<int64_t>(part) * 32 + lane; q0 < vecs; q0 += kUnroll * step) {
    uint4 wv[kUnroll][kColsPerWarp];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t q = q0 + u * step;
#pragma unroll
      for (int c = 0; c < kColsPerWarp; ++c)
        wv[u][c] = (q < vecs && live[c]) ? __ldcs(wrow[c] + q) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t q = q0 + u * step;
      if (q >= vecs) break;
      // One (scale, zero) per vector when grouped (groups are whole vectors).
      float scale[kColsPerWarp], zero[kColsPerWarp];
      if (C == WeightCodes::Int4Groups || grouped) {
        // Weight vectors per group: a power of two in practice (a shift); a
        // 64-bit division per vector would cost more than the vector's codes.
        const int64_t g = vectors_shift >= 0 ? (q >> vectors_shift) : static_cast<int64_t>(
                                                                         static_cast<uint32_t>(q) / vectors_per_group);
#pragma unroll
        for (int c = 0; c < kColsPerWarp; ++c) {
          const int64_t at = (live[c] ? n0 + c : 0) * p.s_n + g * p.s_g;
          scale[c] = load_as_float(p.scale, p.scale_dtype, at);
          zero[c] = C == WeightCodes::Int4Groups ? load_as_float(p.scale, p.scale_dtype, at + p.s_pair) : 0.0f;
        }
      }
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float xv[kVals];
        load_x<T, kVals>(xbase + m * p.x_rs + q * kVals, xv);
        float xsum = 0.0f;
#pragma unroll
        for (int e = 0; e < kVals; ++e) xsum += xv[e];
#pragma unroll
        for (int c = 0; c < kColsPerWarp; ++c) {
          const float s = offset_dot<C>(wv[u][c], xv);
          if constexpr (C == WeightCodes::Int8) {
            // sum(b x) = 256 (s - xsum) - 128 xsum; a row's scale comes at the end.
            const float dot = fmaf(256.0f, s, -384.0f * xsum);
            acc[m][c] = grouped ? fmaf(scale[c], dot, acc[m][c]) : acc[m][c] + dot;
          } else {
            // sum(((c - 8) scale + zero) x) = 256 scale s + (zero - 136 scale) xsum.
            acc[m][c] += fmaf(256.0f * scale[c], s, (zero[c] - 136.0f * scale[c]) * xsum);
          }
        }
      }
    }
  }

#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int c = 0; c < kColsPerWarp; ++c)
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) acc[m][c] += __shfl_xor_sync(0xffffffffu, acc[m][c], offset);

  T* out = static_cast<T*>(p.out);
  const auto store = [&](int64_t n, int m, float sum) {
    if (C == WeightCodes::Int8 && !grouped) sum *= load_as_float(p.scale, p.scale_dtype, n * p.s_n);
    out[m * p.N + n] = from_float<T>(sum);
  };
  if (warps_per_group == 1) {  // uniform over the block: no barrier is skipped by some threads only
    if (lane == 0) {
#pragma unroll
      for (int c = 0; c < kColsPerWarp; ++c)
        if (live[c])
#pragma unroll
          for (int m = 0; m < M; ++m) store(n0 + c, m, acc[m][c]);
    }
    return;
  }
  __shared__ float partial[kWarps][M][kColsPerWarp];
  if (lane == 0) {
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int c = 0; c < kColsPerWarp; ++c) partial[warp][m][c] = acc[m][c];
  }
  __syncthreads();
  const int t = static_cast<int>(threadIdx.x);
  if (t < groups * kColsPerWarp * M) {
    const int gi = t / (kColsPerWarp * M), c = (t / M) % kColsPerWarp, m = t % M;
    const int64_t n = (static_cast<int64_t>(blockIdx.x) * groups + gi) * kColsPerWarp + c;
    if (n < p.N) {
      float s = 0.0f;
      for (int w = 0; w < warps_per_group; ++w) s += partial[gi * warps_per_group + w][m][c];
      store(n, m, s);
    }
  }
}

template <typename T, WeightCodes C>
void launch_typed(const QuantizedGemvParams& p, int warps_per_group, cudaStream_t stream) {
  const int64_t cols_per_block = static_cast<int64_t>(kWarps / warps_per_group) * cols_per_warp<C>();
  const dim3 grid(static_cast<unsigned>((p.N + cols_per_block - 1) / cols_per_block));
  switch (p.M) {
    case 1: quantized_gemv_kernel<T, 1, C><<<grid, kThreads, 0, stream>>>(p, warps_per_group); break;
    case 2: quantized_gemv_kernel<T, 2, C><<<grid, kThreads, 0, stream>>>(p, warps_per_group); break;
    case 3: quantized_gemv_kernel<T, 3, C><<<grid, kThreads, 0, stream>>>(p, warps_per_group); break;
    default: quantized_gemv_kernel<T, 4, C><<<grid, kThreads, 0, stream>>>(p, warps_per_group); break;
  }
}

template <typename T>
void launch_codes(const QuantizedGemvParams& p, int warps_per_group, cudaStream_t stream) {
  if (p.codes == WeightCodes::Int8)
    launch_typed<T, WeightCodes::Int8>(p, warps_per_group, stream);
  else
    launch_typed<T, WeightCodes::Int4Groups>(p, warps_per_group, stream);
}

int sm_count_of_current_device() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 1;
  return std::max(sms, 1);
}

// Warps sharing each column group: one while the columns give every SM four
// blocks; otherwise more (as the float GEMV does), as long as each lane keeps
// two unrolled steps of vectors, or, for int4 with one row of x, one vector.
// A 2048-input int4 row is only 64 vectors: splitting such short rows down to
// a vector a lane puts more loads in flight where a decode projection is bound
// by memory latency (with the byte-permute conversion, H100, M = 1: 2048 x 2048
// 9.5 us against 11.2 before both). The same split made int8 products and
// four-row int4 products with 16 M weights or more 6-13 % slower
// (kiln-quantized-gemv-bench), so they keep the longer steps.
int warps_per_group_for(const QuantizedGemvParams& p) {
  const bool int8 = p.codes == WeightCodes::Int8;
  const int64_t vals = int8 ? 16 : 32;
  const int64_t per_warp = int8 ? cols_per_warp<WeightCodes::Int8>() : cols_per_warp<WeightCodes::Int4Groups>();
  const int64_t vecs = p.K / vals;
  const int64_t want_blocks = 4 * static_cast<int64_t>(sm_count_of_current_device());
  int g = 1;
  while (g < kWarps) {
    const int64_t cols_per_block = static_cast<int64_t>(kWarps / g) * per_warp;
    if ((p.N + cols_per_block - 1) / cols_per_block >= want_blocks) break;
    const int64_t min_vectors_per_lane = !int8 && p.M == 1 ? 1 : 2 * kUnroll;
    if (vecs < static_cast<int64_t>(g) * 2 * 32 * min_vectors_per_lane) break;
    g *= 2;
  }
  return g;
}

// ---- int4 dequantization and the simple product ------------------------------

__device__ inline float int4_weight(const QuantizedGemvParams& p, int64_t n, int64_t k) {
  const uint8_t byte = static_cast<const uint8_t*>(p.w)[n * p.w_rs + k / 2];
  const int code = (k % 2 == 0 ? byte & 0xF : byte >> 4) - 8;
  const int64_t at = n * p.s_n + (k / p.group_size) * p.s_g;
  return fmaf(static_cast<float>(code), load_as_float(p.scale, p.scale_dtype, at),
              load_as_float(p.scale, p.scale_dtype, at + p.s_pair));
}

template <typename T>
__global__ void dequantize_int4_kernel(const QuantizedGemvParams p, int64_t j0, int64_t rows, T* out) {
  const int64_t total = rows * p.K;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[idx] = from_float<T>(int4_weight(p, j0 + idx / p.K, idx % p.K));
}

template <typename T>
__global__ void dequantize_int8_kernel(const QuantizedGemvParams p, int64_t w_cs, int64_t j0, int64_t rows, T* out) {
  const int64_t total = rows * p.K;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t n = j0 + idx / p.K, k = idx % p.K;
    const int64_t g = p.group_size > 0 ? k / p.group_size : 0;
    const int8_t code = static_cast<const int8_t*>(p.w)[n * p.w_rs + k * w_cs];
    out[idx] = from_float<T>(static_cast<float>(code) * load_as_float(p.scale, p.scale_dtype, n * p.s_n + g * p.s_g));
  }
}

template <typename T>
__global__ void int4_linear_simple_kernel(const QuantizedGemvParams p) {
  const int64_t total = p.M * p.N;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t m = idx / p.N, n = idx % p.N;
    const T* x = static_cast<const T*>(p.x) + m * p.x_rs;
    float sum = 0.0f;
    for (int64_t k = 0; k < p.K; ++k) sum = fmaf(int4_weight(p, n, k), to_float(x[k]), sum);
    static_cast<T*>(p.out)[idx] = from_float<T>(sum);
  }
}

// Calls fn(T{}) with T the element type of float dtype `dt` (float32, float16
// or bfloat16; the callers have checked it is one of them).
template <typename Fn>
void for_float_dtype(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::Float32: fn(float{}); break;
    case DType::Float16: fn(__half{}); break;
    default: fn(__nv_bfloat16{}); break;
  }
}

unsigned grid_for(int64_t total, int threads) {
  const int64_t blocks = (total + threads - 1) / threads;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), 65535 * 16));
}

}  // namespace

const char* quantized_gemv_unsupported(const QuantizedGemvParams& p) {
  if (p.dtype != DType::Float32 && p.dtype != DType::Float16 && p.dtype != DType::BFloat16)
    return "x is not float32, float16 or bfloat16";
  if (p.M < 1 || p.M > kQuantizedGemvMaxRows) return "x has no rows or more than 4";
  if (p.N < 1 || p.K < 1) return "empty product";
  if (p.N > static_cast<int64_t>(INT_MAX)) return "more than 2^31 - 1 columns";
  const int64_t vals = p.codes == WeightCodes::Int8 ? 16 : 32;
  if (p.K % vals != 0) return "K is not a multiple of a 16-byte weight vector's values";
  if (p.codes == WeightCodes::Int4Groups && (p.group_size <= 0 || p.group_size % 32 != 0))
    return "the group size is not a multiple of 32";
  if (p.codes == WeightCodes::Int8 && (p.group_size < 0 || p.group_size % 16 != 0))
    return "the group size is not a multiple of 16";
  if (p.K / vals > static_cast<int64_t>(UINT32_MAX)) return "K too large for 32-bit vector indices";
  const auto elem = static_cast<int64_t>(element_size(p.dtype));
  if (reinterpret_cast<uintptr_t>(p.x) % kVecBytes != 0 || (p.M > 1 && (p.x_rs * elem) % kVecBytes != 0))
    return "x's rows are not 16-byte aligned";
  if (reinterpret_cast<uintptr_t>(p.w) % kVecBytes != 0 || (p.N > 1 && p.w_rs % kVecBytes != 0))
    return "the weight's rows are not 16-byte aligned";
  return nullptr;
}

Error launch_quantized_gemv(const QuantizedGemvParams& p, cudaStream_t stream) {
  if (const char* why = quantized_gemv_unsupported(p))
    return set_error(Error::InvalidArgument, std::string("quantized GEMV kernel: ") + why);
  const int g = warps_per_group_for(p);
  for_float_dtype(p.dtype, [&](auto zero) { launch_codes<decltype(zero)>(p, g, stream); });
  return cuda_status(cudaGetLastError(), "launching the quantized GEMV kernel");
}

Error launch_dequantize_int8_rows(const QuantizedGemvParams& p, int64_t w_cs, int64_t j0, int64_t rows, void* out,
                                  cudaStream_t stream) {
  const int64_t total = rows * p.K;
  if (total == 0) return Error::Ok;
  constexpr int threads = 256;
  for_float_dtype(p.dtype, [&](auto zero) {
    using T = decltype(zero);
    dequantize_int8_kernel<T><<<grid_for(total, threads), threads, 0, stream>>>(p, w_cs, j0, rows, static_cast<T*>(out));
  });
  return cuda_status(cudaGetLastError(), "launching the int8 dequantization kernel");
}

Error launch_dequantize_int4_rows(const QuantizedGemvParams& p, int64_t j0, int64_t rows, void* out,
                                  cudaStream_t stream) {
  const int64_t total = rows * p.K;
  if (total == 0) return Error::Ok;
  constexpr int threads = 256;
  for_float_dtype(p.dtype, [&](auto zero) {
    using T = decltype(zero);
    dequantize_int4_kernel<T><<<grid_for(total, threads), threads, 0, stream>>>(p, j0, rows, static_cast<T*>(out));
  });
  return cuda_status(cudaGetLastError(), "launching the int4 dequantization kernel");
}

Error launch_int4_linear_simple(const QuantizedGemvParams& p, cudaStream_t stream) {
  const int64_t total = p.M * p.N;
  if (total == 0) return Error::Ok;
  constexpr int threads = 128;
  for_float_dtype(p.dtype, [&](auto zero) {
    using T = decltype(zero);
    int4_linear_simple_kernel<T><<<grid_for(total, threads), threads, 0, stream>>>(p);
  });
  return cuda_status(cudaGetLastError(), "launching the int4 linear kernel");
}

}  // namespace kiln::cudadev
