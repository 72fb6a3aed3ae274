#include <cuda_bf16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/int4_mm_kernel.h"

namespace kiln::cudadev {
namespace {

// q * scale + zero rounded once to bfloat16, as the bfloat16 fused
// multiply-add ATen's kernel dequantizes with. sm_80 and later have that
// instruction; older targets (the build's default architecture) sum in
// double, exact for these operands (a 4-bit code times an 8-bit scale, plus an
// 8-bit zero) unless scale and zero are over 2^40 apart in magnitude, and
// round once.
__device__ inline __nv_bfloat16 dequantize(int q, __nv_bfloat16 scale, __nv_bfloat16 zero) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __hfma(__int2bfloat16_rn(q), scale, zero);
#else
  return __double2bfloat16(static_cast<double>(q) * static_cast<double>(__bfloat162float(scale)) +
                           static_cast<double>(__bfloat162float(zero)));
#endif
}

// ---- The packed layout, and why it is what it is.
//
// ATen packs the weight for the B operand of the tensor cores' m16n8k16
// bfloat16 MMA. In that instruction an 8-column (n) by 16-row (k) tile of B
// is spread over a warp so that lane t holds column n = t / 4 and the four
// rows k = 2 * (t % 4) + {0, 1} (its first 32-bit register, two bfloat16)
// and k = 8 + 2 * (t % 4) + {0, 1} (its second). Four int4 codes are 16
// bits, so one int32 word carries a lane's codes for two consecutive
// k-tiles; inner_k_tiles k-tiles (2, 4 or 8) are packed back to back so a
// lane finds its inner_k_tiles / 2 words next to each other (one 4, 8 or
// 16-byte load). Hence the int32 tensor
//   [n / 8][k / (inner_k_tiles * 16)][32][inner_k_tiles / 2]
// is (n-tile, group of inner_k_tiles k-tiles, lane, pair of k-tiles in the
// group): word (nt, ko, t, p) covers the 32 values of k starting at
//   k0 = 16 * (ko * inner_k_tiles + 2 * p)
// for column nt * 8 + t / 4.
//
// Inside a word, the consumer expands nibbles i and i + 4 (bits 4i and
// 16 + 4i) into the low and high bfloat16 halves of one MMA register, and a
// B register holds two consecutive k with the even one in its low half. So
// nibbles 0..3 are the even k of the lane's four registers, in register
// order (k-tile 0 rows 0-7, k-tile 0 rows 8-15, k-tile 1 rows 0-7, k-tile 1
// rows 8-15), and nibbles 4..7 the odd k of the same four:
//   nibble i holds k = k0 + 16 * ((i >> 1) & 1) + 8 * (i & 1) + 2 * (t % 4) + (i >> 2).
// The codes are unsigned 0..15 standing for q - 8 (ATen's converter biases
// them by -8), dequantized in bfloat16 as fma(q - 8, scale, zero), rounded
// once, before the product (its MMA takes bfloat16 B values).
//
// 32 consecutive k aligned to 32 lie in one quantization group (groups are
// 32, 64, 128 or 256 wide, powers of two), so one (scale, zero) serves a
// whole word.

constexpr int kRows = 4;   // rows of x per pass over a weight tile
constexpr int kWarps = 4;  // warps of a block, splitting k between them
constexpr int kTileN = 8;  // columns of an n-tile
constexpr unsigned kMaxGridY = 65535;
static_assert(kRows * kTileN == 32, "the final sum maps one lane to each (row, column) of a pass");

// One block per n-tile and group of up to kRows rows of x (blocks stride
// over row groups past the grid's y limit). Each lane reads exactly the
// words the layout gives it (lane t: column t / 4), so a warp's loads of
// one word index are 32 consecutive int32 of a contiguous tensor. The block's
// warps take the k groups (ko) in turn; a lane's partial sums are combined
// over the four lanes of its column by shuffles, then over the warps in
// shared memory.
template <int kWords>  // inner_k_tiles / 2
__global__ void __launch_bounds__(kWarps * 32)
    weight_int4pack_kernel(const __nv_bfloat16* x, int64_t x_rs, int64_t x_cs, Int4PackedWeight w,
                           const __nv_bfloat16* qsz, int64_t q_s0, int64_t q_s1, int64_t q_s2, int group_shift,
                           __nv_bfloat16* out, int64_t m, int64_t n, int64_t k_groups) {
  __shared__ float partial[kWarps][kRows][kTileN];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t n_tile = blockIdx.x;
  const int64_t col = n_tile * kTileN + lane / 4;
  const int k_lane = 2 * (lane % 4);
  const int32_t* w_lane = w.ptr + n_tile * w.s0 + lane * w.s2;
  const __nv_bfloat16* q_col = qsz + col * q_s1;
  // Block-uniform loop: every thread reaches each barrier below.
  for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * kRows; r0 < m;
       r0 += static_cast<int64_t>(gridDim.y) * kRows) {
    const int rows = m - r0 < kRows ? static_cast<int>(m - r0) : kRows;
    const __nv_bfloat16* x_rows = x + r0 * x_rs;
    float acc[kRows] = {};
    for (int64_t ko = warp; ko < k_groups; ko += kWarps) {
      const int32_t* w_group = w_lane + ko * w.s1;
#pragma unroll
      for (int p = 0; p < kWords; ++p) {
        const uint32_t word = static_cast<uint32_t>(w_group[p * w.s3]);
        const int64_t k0 = 16 * (ko * (2 * kWords) + 2 * p);
        const int64_t g = k0 >> group_shift;
        const __nv_bfloat16 scale = q_col[g * q_s0], zero = q_col[g * q_s0 + q_s2];
        const __nv_bfloat16* xk = x_rows + (k0 + k_lane) * x_cs;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int q = static_cast<int>((word >> (4 * i)) & 0xFu) - 8;
          const float wv = __bfloat162float(dequantize(q, scale, zero));
          const int64_t dk = 16 * ((i >> 1) & 1) + 8 * (i & 1) + (i >> 2);
#pragma unroll
          for (int r = 0; r < kRows; ++r)
            if (r < rows) acc[r] += wv * __bfloat162float(xk[r * x_rs + dk * x_cs]);
        }
      }
    }
    // Lanes 4c..4c+3 hold column c's partial sums (they differ in bits 0, 1).
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      acc[r] += __shfl_xor_sync(0xFFFFFFFFu, acc[r], 1);
      acc[r] += __shfl_xor_sync(0xFFFFFFFFu, acc[r], 2);
    }
    if (lane % 4 == 0) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) partial[warp][r][lane / 4] = acc[r];
    }
    __syncthreads();
    if (warp == 0) {
      const int r = lane / kTileN, c = lane % kTileN;
      if (r < rows) {
        float sum = 0.0f;
#pragma unroll
        for (int v = 0; v < kWarps; ++v) sum += partial[v][r][c];
        out[(r0 + r) * n + n_tile * kTileN + c] = __float2bfloat16_rn(sum);
      }
    }
    __syncthreads();  // partial is rewritten by the next row group
  }
}

// One thread per packed word, the word index running fastest (consecutive
// threads read consecutive int32 of a contiguous weight). Nibbles i and
// i + 4 (i < 4) are the even and odd k of one pair, k0 + 2 * (t % 4) + 8 * i
// (8 * i = 16 * ((i >> 1) & 1) + 8 * (i & 1) for i < 4), written as one
// bfloat16 pair: rows are k long and k is a multiple of 32, so the pair's
// address is 4-byte aligned.
__global__ void dequantize_int4pack_kernel(Int4PackedWeight w, const __nv_bfloat16* qsz, int64_t q_s0, int64_t q_s1,
                                           int64_t q_s2, int group_shift, int64_t tile0, int64_t tiles,
                                           int64_t k_groups, int64_t k, __nv_bfloat16* out) {
  const int words = w.inner_k_tiles / 2;
  const int64_t total = tiles * k_groups * 32 * words;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int p = static_cast<int>(idx % words);
    int64_t rest = idx / words;
    const int t = static_cast<int>(rest % 32);
    rest /= 32;
    const int64_t ko = rest % k_groups, tile = rest / k_groups;
    const uint32_t word =
        static_cast<uint32_t>(w.ptr[(tile0 + tile) * w.s0 + ko * w.s1 + t * w.s2 + p * w.s3]);
    const int64_t row = tile * kTileN + t / 4;
    const int64_t k0 = 16 * (ko * w.inner_k_tiles + 2 * p);
    const __nv_bfloat16* q = qsz + (k0 >> group_shift) * q_s0 + ((tile0 + tile) * kTileN + t / 4) * q_s1;
    const __nv_bfloat16 scale = q[0], zero = q[q_s2];
    __nv_bfloat16* dst = out + row * k + k0 + 2 * (t % 4);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int even = static_cast<int>((word >> (4 * i)) & 0xFu) - 8;
      const int odd = static_cast<int>((word >> (16 + 4 * i)) & 0xFu) - 8;
      *reinterpret_cast<__nv_bfloat162*>(dst + 8 * i) =
          __halves2bfloat162(dequantize(even, scale, zero), dequantize(odd, scale, zero));
    }
  }
}

int log2_of(int64_t group_size) {
  int shift = 0;
  while ((int64_t{1} << shift) < group_size) ++shift;
  return shift;
}

}  // namespace

Error launch_weight_int4pack_mm(const void* x, int64_t x_rs, int64_t x_cs, Int4PackedWeight w, const void* qsz,
                                int64_t q_s0, int64_t q_s1, int64_t q_s2, int64_t group_size, void* out, int64_t m,
                                int64_t n, int64_t k, cudaStream_t stream) {
  if (m == 0 || n == 0) return Error::Ok;
  const int64_t n_tiles = n / kTileN;
  if (n_tiles > 0x7FFFFFFF)
    return set_error(Error::NotSupported, "_weight_int4pack_mm: too many columns for the kernel grid");
  const int group_shift = log2_of(group_size);
  const int64_t k_groups = k / (w.inner_k_tiles * 16);
  const int64_t row_groups = (m + kRows - 1) / kRows;
  const dim3 grid(static_cast<unsigned>(n_tiles),
                  static_cast<unsigned>(row_groups < kMaxGridY ? row_groups : kMaxGridY));
  const auto* xp = static_cast<const __nv_bfloat16*>(x);
  const auto* qp = static_cast<const __nv_bfloat16*>(qsz);
  auto* op = static_cast<__nv_bfloat16*>(out);
  switch (w.inner_k_tiles) {
    case 2:
      weight_int4pack_kernel<1><<<grid, kWarps * 32, 0, stream>>>(xp, x_rs, x_cs, w, qp, q_s0, q_s1, q_s2,
                                                                  group_shift, op, m, n, k_groups);
      break;
    case 4:
      weight_int4pack_kernel<2><<<grid, kWarps * 32, 0, stream>>>(xp, x_rs, x_cs, w, qp, q_s0, q_s1, q_s2,
                                                                  group_shift, op, m, n, k_groups);
      break;
    case 8:
      weight_int4pack_kernel<4><<<grid, kWarps * 32, 0, stream>>>(xp, x_rs, x_cs, w, qp, q_s0, q_s1, q_s2,
                                                                  group_shift, op, m, n, k_groups);
      break;
    default:
      return set_error(Error::InvalidArgument, "_weight_int4pack_mm: inner k-tiles " +
                                                   std::to_string(w.inner_k_tiles) + ", expected 2, 4 or 8");
  }
  return cuda_status(cudaGetLastError(), "launching the _weight_int4pack_mm kernel");
}

Error launch_dequantize_int4pack(Int4PackedWeight w, const void* qsz, int64_t q_s0, int64_t q_s1, int64_t q_s2,
                                 int64_t group_size, int64_t tile0, int64_t tiles, int64_t k, void* w_out,
                                 cudaStream_t stream) {
  const int64_t k_groups = k / (w.inner_k_tiles * 16);
  const int64_t total = tiles * k_groups * 32 * (w.inner_k_tiles / 2);
  if (total == 0) return Error::Ok;
  constexpr int kThreads = 256;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < (int64_t{1} << 20) ? blocks : (int64_t{1} << 20));
  dequantize_int4pack_kernel<<<grid, kThreads, 0, stream>>>(w, static_cast<const __nv_bfloat16*>(qsz), q_s0, q_s1,
                                                            q_s2, log2_of(group_size), tile0, tiles, k_groups, k,
                                                            static_cast<__nv_bfloat16*>(w_out));
  return cuda_status(cudaGetLastError(), "launching the _weight_int4pack_mm dequantize kernel");
}

}  // namespace kiln::cudadev
