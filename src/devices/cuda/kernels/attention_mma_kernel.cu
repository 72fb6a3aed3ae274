// The tensor-core attention kernel: see attention_mma_kernel.h for what it
// does. The m16n8k16 fragment layout it relies on is in mma_m16n8k16.cuh.
//
// S = Q K^T: A is 16 query rows x 16 head dims of Q, B is 16 head dims x 8 keys
// of K^T, i.e. B[d][n] = K[n][d], so b0 is two consecutive dims of key row g:
// one 32-bit shared-memory load from K stored [key][dim].
// O += P V: A is the probabilities P (16 rows x 16 keys), which are exactly
// the C fragments of two neighbouring 8-key score tiles (no data movement);
// B is V[key][dim] with b0 = V[2t, 2t+1][g], two keys of one dim, which
// ldmatrix.trans gathers from V stored [key][dim].
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/attention_mma_kernel.h"
#include "devices/cuda/kernels/attention_span.cuh"
#include "devices/cuda/kernels/mma_m16n8k16.cuh"

namespace kiln::cudadev {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockM = kWarps * 16;  // query rows per block: 16 per warp
constexpr int kPad = 8;               // halves (16 bytes) of padding per shared row: see kPitch

// Keys per shared-memory K/V tile: 64, but 32 for head dim 256. There each
// warp's fp32 output accumulator is already 16 x 256 / 32 = 128 registers per
// thread, so the 64-key tile's 32 score registers would crowd the register
// file, and four 64-key buffers of 528-byte rows (plus Q) would take 165 KB of
// shared memory, one block per SM; 32-key tiles take 99 KB (see smem_bytes).
template <int D>
constexpr int block_n() {
  return D <= 128 ? 64 : 32;
}

// Whether a warp keeps Q's A fragments in registers for the whole key loop
// (head dims 64 and 128: 16 / 32 registers) or re-reads them from the Q tile
// in shared memory at every k16 step (head dim 256: another 64 registers next
// to the 128-register accumulator would not fit without spilling).
template <int D>
constexpr bool q_in_registers() {
  return D <= 128;
}

// Halves per shared-memory row of a D-wide tile. The 16-byte pad makes the
// row pitch (D + 8) / 2 = 4 (mod 32) words, so the 8 rows g = 0..7 that one
// fragment load touches start 4 banks apart and the 4 lanes t of a row take
// the 4 banks in between: conflict-free 32-bit loads and ldmatrix phases. It
// also keeps every row 16-byte aligned for cp.async and ldmatrix.
template <int D>
constexpr int pitch() {
  return D + kPad;
}

// Q [kBlockM][pitch], then K [2][block_n][pitch], then V [2][block_n][pitch]
// (two buffers each: tile i + 1 lands while tile i is used).
template <int D>
constexpr size_t smem_bytes() {
  return sizeof(uint16_t) * static_cast<size_t>(pitch<D>()) * (kBlockM + 4 * block_n<D>());
}
// Above 48 KB the launch opts in (cudaFuncSetAttribute). 99 KB is the
// smallest opt-in limit among sm_80+ GPUs (sm_86, sm_89, sm_120), so every
// device that runs this kernel can launch every head dim.
static_assert(smem_bytes<64>() <= 99 * 1024 && smem_bytes<128>() <= 99 * 1024 && smem_bytes<256>() <= 99 * 1024,
              "a tile configuration exceeds the 99 KB of shared memory per block that every sm_80+ GPU offers");

// Device code exists for sm_80+ only (mma.sync m16n8k16 and cp.async need
// it); the host pass sees it too, so the kernel's launch stub compiles. An
// sm_75 (CI) build gets a trapping stub kernel, which is never launched there.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define KILN_MMA_ATTENTION_CODE 1

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kMaskFloor = -1.0e38f;  // times log2(e) still a finite float

__device__ inline float bias_value(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::Bool:
      return static_cast<const bool*>(p)[i] ? 0.0f : -CUDART_INF_F;
    case DType::Float16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case DType::BFloat16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

// Two fp32 values as one 32-bit register of two halves, `lo` in the low 16
// bits (the lower-indexed element of an mma fragment pair).
__device__ inline uint32_t pack2(__half, float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);  // .x = lo
  uint32_t u;
  memcpy(&u, &v, sizeof(u));
  return u;
}
__device__ inline uint32_t pack2(__nv_bfloat16, float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo
  uint32_t u;
  memcpy(&u, &v, sizeof(u));
  return u;
}

__device__ inline uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes global -> shared without staging in registers; when
// `valid` is false nothing is read (source size 0) and the 16 bytes are
// zero-filled, which pads rows past L or S with zeros.
__device__ inline void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `kPending` of this thread's committed groups are in flight.
template <int kPending>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Four 8x8 matrices of 16-bit elements, transposed: lanes 8i..8i+7 give the
// addresses of rows 0..7 of matrix i (16 contiguous bytes each), and register
// r[i] of lane (g, t) receives matrix i's elements [2t][g] and [2t+1][g].
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row_addr))
               : "memory");
}

// Starts copying rows row0 .. row0 + kRows - 1 of a [rows][D] matrix (row
// stride `stride` elements, dims contiguous) into a [kRows][pitch] shared
// tile; rows at or past `rows` are zero-filled. Consecutive threads copy
// consecutive 16-byte chunks of a row, so each row is one coalesced D * 2-byte read.
template <int D, int kRows, typename T>
__device__ inline void copy_tile_async(uint16_t* dst, const T* src, int64_t stride, int64_t row0,
                                       int64_t rows) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  static_assert((kRows * kChunks) % kThreads == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int i = 0; i < kRows * kChunks / kThreads; ++i) {
    const int c = i * kThreads + static_cast<int>(threadIdx.x);
    const int r = c / kChunks, ch = c % kChunks;
    const int64_t row = row0 + r;
    const bool valid = row < rows;
    // An invalid row reads nothing, but the address must still be a real one.
    cp_async16(dst + r * pitch<D>() + ch * 8, src + (valid ? row : 0) * stride + ch * 8, valid);
  }
}

#endif  // sm_80+ or host pass

// One block: query rows m0 .. m0 + 63 of one (batch, head), all keys it can see.
// grid.x: query tiles, heaviest (last) first; grid.y: batch * Hq.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) mma_attention_kernel(AttentionParams p, int m_tiles) {
#ifdef KILN_MMA_ATTENTION_CODE
  constexpr int kPitch = pitch<D>();
  constexpr int kBlockN = block_n<D>();  // keys per K/V tile
  constexpr bool kQInRegs = q_in_registers<D>();
  constexpr int kKSteps = D / 16;        // k16 steps of S = Q K^T over the head dim
  constexpr int kDTiles = D / 8;         // n8 tiles of the output row (head dim of V)
  constexpr int kNTiles = kBlockN / 8;   // n8 tiles of scores per key tile
  constexpr int kPSteps = kBlockN / 16;  // k16 steps of O += P V over the tile's keys

  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* q_s = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* k_s = q_s + kBlockM * kPitch;      // 2 buffers of kBlockN * kPitch
  uint16_t* v_s = k_s + 2 * kBlockN * kPitch;  // 2 buffers of kBlockN * kPitch

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;  // fragment row group and column pair (see the file comment)

  // Causal blocks near the end of the query see the most keys: start them first.
  const int64_t tile = static_cast<int64_t>(m_tiles) - 1 - blockIdx.x;
  const int64_t b = blockIdx.y / p.Hq, h = blockIdx.y % p.Hq;
  const int64_t hk = h / (p.Hq / p.Hk);  // grouped-query: Hq / Hk query heads share one k/v head
  const int64_t m0 = tile * kBlockM;
  // This batch's rows and keys (all L and S unless packed) and which keys
  // each row sees (attention_span.cuh).
  const BatchSpan span = batch_span(p, b);
  const int64_t rows = span.rows, keys = span.keys;

  const T* q = static_cast<const T*>(p.q) + b * p.q_strides[0] + h * p.q_strides[1] + span.q_off * p.q_strides[2];
  const T* k = static_cast<const T*>(p.k) + b * p.k_strides[0] + hk * p.k_strides[1] + span.k_off * p.k_strides[2];
  const T* v = static_cast<const T*>(p.v) + b * p.v_strides[0] + hk * p.v_strides[1] + span.k_off * p.v_strides[2];

  // Keys any row of this block may see: from the first row's lowest visible
  // key to the last row's highest (with upper-left causal masking, keys past
  // the block's last row are skipped entirely). Tiles start on a kBlockN
  // boundary. A block past the batch's rows, or whose rows see no key, walks
  // no tile (only with packed batches or windows).
  int64_t n_begin = 0, n_end = 0;
  if (m0 < rows) {
    const int64_t last = (m0 + kBlockM < rows ? m0 + kBlockM : rows) - 1;
    n_begin = span.lo(m0) > 0 ? span.lo(m0) : 0;
    n_end = span.hi(last) + 1 < keys ? span.hi(last) + 1 : keys;
  }
  const int64_t n_first = n_begin / kBlockN * kBlockN;
  const int64_t n_tiles = n_end > n_first ? (n_end - n_first + kBlockN - 1) / kBlockN : 0;

  // Group 0: the Q tile and the first K/V tile.
  copy_tile_async<D, kBlockM>(q_s, q, p.q_strides[2], m0, rows);
  copy_tile_async<D, kBlockN>(k_s, k, p.k_strides[2], n_first, keys);
  copy_tile_async<D, kBlockN>(v_s, v, p.v_strides[2], n_first, keys);
  cp_async_commit();
  if (n_tiles == 0) cp_async_wait<0>();  // no loop waits for group 0; settle it before the block ends

  // This lane's two query rows (fragment rows g and g + 8 of the warp's 16).
  const int64_t row_lo = m0 + warp * 16 + g, row_hi = row_lo + 8;
  const float scale_log2 = p.scale * kLog2e;  // scores are kept in log2 units: exp2 is one instruction
  // The bias element of (block row 0, key 0); rows and keys add their strides.
  const int64_t bias_base = b * p.bias_strides[0] + h * p.bias_strides[1] + m0 * p.bias_strides[2];

  uint32_t q_frag[kKSteps][4];
  float o[kDTiles][4];
#pragma unroll
  for (int d = 0; d < kDTiles; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float m_run[2] = {-CUDART_INF_F, -CUDART_INF_F};  // running max (log2 units) of rows lo, hi
  float l_run[2] = {0.0f, 0.0f};  // running sum of exp2(s - m_run) over this lane's columns only

  for (int64_t it = 0; it < n_tiles; ++it) {
    const int buf = static_cast<int>(it & 1);
    if (it + 1 < n_tiles) {
      // Prefetch tile it + 1 into the other buffer (free: the __syncthreads at
      // the end of the previous iteration saw every warp finish with it).
      const int64_t next = n_first + (it + 1) * kBlockN;
      copy_tile_async<D, kBlockN>(k_s + (buf ^ 1) * kBlockN * kPitch, k, p.k_strides[2], next, keys);
      copy_tile_async<D, kBlockN>(v_s + (buf ^ 1) * kBlockN * kPitch, v, p.v_strides[2], next, keys);
      cp_async_commit();
      cp_async_wait<1>();  // everything but that prefetch has landed (this thread's copies)
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // ... and every other thread's copies too

    if (kQInRegs && it == 0) {
      // Q's A fragments, kept in registers for the whole key loop.
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk) {
        const uint16_t* lo = q_s + (warp * 16 + g) * kPitch + kk * 16 + 2 * t;
        const uint16_t* hi = lo + 8 * kPitch;
        q_frag[kk][0] = lds32(lo);      // row g,     dims 2t, 2t+1
        q_frag[kk][1] = lds32(hi);      // row g + 8, dims 2t, 2t+1
        q_frag[kk][2] = lds32(lo + 8);  // row g,     dims 2t+8, 2t+9
        q_frag[kk][3] = lds32(hi + 8);  // row g + 8, dims 2t+8, 2t+9
      }
    }

    // S = Q K^T for 16 rows x kBlockN keys: s[j] is the 16 x 8 tile of keys n0 + 8j ..
    const uint16_t* kt = k_s + buf * kBlockN * kPitch;
    float s[kNTiles][4];
    if constexpr (kQInRegs) {
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < kKSteps; ++kk) {
          const uint16_t* kr = kt + (8 * j + g) * kPitch + kk * 16 + 2 * t;  // key 8j + g, dims 16kk + 2t ..
          mma16816(T(), s[j], q_frag[kk], lds32(kr), lds32(kr + 8));
        }
      }
    } else {
      // Q fragments from shared memory (q_s is written once, by group 0, and
      // never refilled), k-step outermost so each is loaded once per tile and
      // only 4 of its registers are live at a time.
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk) {
        const uint16_t* lo = q_s + (warp * 16 + g) * kPitch + kk * 16 + 2 * t;
        const uint16_t* hi = lo + 8 * kPitch;
        const uint32_t qf[4] = {lds32(lo), lds32(hi), lds32(lo + 8), lds32(hi + 8)};  // as q_frag[kk] above
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) {
          const uint16_t* kr = kt + (8 * j + g) * kPitch + kk * 16 + 2 * t;  // key 8j + g, dims 16kk + 2t ..
          mma16816(T(), s[j], qf, lds32(kr), lds32(kr + 8));
        }
      }
    }

    // Scale into log2 units, then mask. A tile needs the per-element checks
    // only if it has keys past the batch's, crosses the causal diagonal or
    // window's upper bound (some key beyond the first row's highest) or its
    // lower bound (some key below the last row's lowest), or there is a bias.
    // Rows past the batch's need none (their Q rows are zeros and they are
    // never stored), but must not read the bias. The checks work on
    // tile-relative 32-bit indices.
    const int64_t n0 = n_first + it * kBlockN;
    const bool check = p.bias != nullptr || n0 + kBlockN > keys ||
                       (span.has_hi && n0 + kBlockN - 1 > span.hi(m0)) ||
                       (span.has_lo && n0 < span.lo(m0 + kBlockM - 1));
    if (check) {
      // Key column c of this tile exists iff c < key_end; row r of the block
      // (0..63) sees it iff c <= r + hi_diag (upper bound) and c >= r +
      // lo_diag (lower bound); the row exists iff r < row_end. The diagonals
      // are clamped to a 32-bit range that decides the same: at or above
      // kBlockN every column is below r + d, below -(kBlockM + kBlockN) every
      // column is above it.
      const int key_end = static_cast<int>(keys - n0 < kBlockN ? keys - n0 : kBlockN);
      constexpr int kDiagFloor = -(kBlockM + kBlockN);
      auto clamp_diag = [](int64_t d) -> int {
        return static_cast<int>(d > kBlockN ? kBlockN : (d < kDiagFloor ? kDiagFloor : d));
      };
      const int hi_diag = clamp_diag(span.hi(m0) - n0);
      const int lo_diag = clamp_diag(span.lo(m0) - n0);
      const bool has_hi = span.has_hi, has_lo = span.has_lo;
      const int row_end = static_cast<int>(rows - m0 < kBlockM ? rows - m0 : kBlockM);
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = warp * 16 + g + (e < 2 ? 0 : 8);  // c0, c1: row g; c2, c3: row g + 8
          const int c = 8 * j + 2 * t + (e & 1);          // column 2t or 2t + 1 of score tile j
          float x;
          if (c >= key_end || (has_hi && c > r + hi_diag) || (has_lo && c < r + lo_diag) || r >= row_end) {
            x = -CUDART_INF_F;
          } else if (p.bias != nullptr) {
            float z = s[j][e] * p.scale +
                      bias_value(p.bias, p.bias_dtype,
                                 bias_base + r * p.bias_strides[2] + (n0 + c) * p.bias_strides[3]);
            // A huge finite mask value (e.g. -FLT_MAX, as some models use)
            // would overflow to -inf in log2 units and turn a row that torch
            // averages uniformly into a "fully masked" one: floor it instead.
            if (z != -CUDART_INF_F) z = fmaxf(z, kMaskFloor);
            x = z * kLog2e;
          } else {
            x = s[j][e] * scale_log2;
          }
          s[j][e] = x;
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < kNTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[j][e] *= scale_log2;
    }

    // Online softmax. A row's values live in the 4 lanes of one quad
    // (lanes 4g .. 4g + 3), so its max is a 2-step xor shuffle.
    float mx[2] = {m_run[0], m_run[1]};
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) {
      mx[0] = fmaxf(mx[0], fmaxf(s[j][0], s[j][1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[j][2], s[j][3]));
    }
    float base[2], alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      // A row that has seen only masked keys keeps max -inf; subtracting 0
      // instead keeps exp2 at 0 for it (no -inf - -inf = NaN).
      base[r] = mx[r] == -CUDART_INF_F ? 0.0f : mx[r];
      alpha[r] = exp2f(m_run[r] - base[r]);  // rescales the old state; 0 while m_run is -inf
      m_run[r] = mx[r];
    }
    float psum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) {
      s[j][0] = exp2f(s[j][0] - base[0]);
      s[j][1] = exp2f(s[j][1] - base[0]);
      s[j][2] = exp2f(s[j][2] - base[1]);
      s[j][3] = exp2f(s[j][3] - base[1]);
      psum[0] += s[j][0] + s[j][1];
      psum[1] += s[j][2] + s[j][3];
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) l_run[r] = l_run[r] * alpha[r] + psum[r];
#pragma unroll
    for (int d = 0; d < kDTiles; ++d) {
      o[d][0] *= alpha[0];
      o[d][1] *= alpha[0];
      o[d][2] *= alpha[1];
      o[d][3] *= alpha[1];
    }

    // O += P V. For keys 16ks .. 16ks + 15, P's A fragment is score tiles
    // 2ks (keys +0..7) and 2ks + 1 (keys +8..15) as they are: a0 = row g keys
    // 2t, 2t+1 = s[2ks][0..1], a1 = row g+8 = s[2ks][2..3], a2/a3 likewise
    // from s[2ks + 1], rounded to the input type.
    const uint16_t* vt = v_s + buf * kBlockN * kPitch;
#pragma unroll
    for (int ks = 0; ks < kPSteps; ++ks) {
      uint32_t a[4];
      a[0] = pack2(T(), s[2 * ks][0], s[2 * ks][1]);
      a[1] = pack2(T(), s[2 * ks][2], s[2 * ks][3]);
      a[2] = pack2(T(), s[2 * ks + 1][0], s[2 * ks + 1][1]);
      a[3] = pack2(T(), s[2 * ks + 1][2], s[2 * ks + 1][3]);
#pragma unroll
      for (int dp = 0; dp < kDTiles / 2; ++dp) {
        // Matrices for output dims 16dp .. 16dp + 15: i = 0: keys +0..7 x dims
        // +0..7; 1: keys +8..15 x dims +0..7; 2: keys +0..7 x dims +8..15;
        // 3: keys +8..15 x dims +8..15. Lane l addresses row l % 8 of matrix
        // l / 8; transposed, r[0], r[1] are b0, b1 of output tile 2dp and
        // r[2], r[3] those of tile 2dp + 1.
        const int mi = lane / 8;
        const uint16_t* row = vt + (16 * ks + (mi & 1) * 8 + lane % 8) * kPitch + 16 * dp + (mi >> 1) * 8;
        uint32_t bv[4];
        ldmatrix_x4_trans(bv, row);
        mma16816(T(), o[2 * dp], a, bv[0], bv[1]);
        mma16816(T(), o[2 * dp + 1], a, bv[2], bv[3]);
      }
    }
    __syncthreads();  // every warp is done with buffer `buf` before it is refilled
  }

  // Normalise and store. The quad's partial row sums add up to the row's.
  float inv[2], l_row[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_run[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    l_row[r] = l;
    inv[r] = l > 0.0f ? 1.0f / l : 0.0f;  // a fully masked row has l = 0: zeros
  }
  T* out = static_cast<T*>(p.out) + b * p.out_strides[0] + h * p.out_strides[1] + span.q_off * p.out_strides[2];
#pragma unroll
  for (int d = 0; d < kDTiles; ++d) {
    const int col = 8 * d + 2 * t;  // c0, c1 (and c2, c3) are dims col, col + 1: one 32-bit store
    if (row_lo < rows)
      *reinterpret_cast<uint32_t*>(out + row_lo * p.out_strides[2] + col) =
          pack2(T(), o[d][0] * inv[0], o[d][1] * inv[0]);
    if (row_hi < rows)
      *reinterpret_cast<uint32_t*>(out + row_hi * p.out_strides[2] + col) =
          pack2(T(), o[d][2] * inv[1], o[d][3] * inv[1]);
  }
  if (p.lse != nullptr && t == 0) {
    float* lse = p.lse + b * p.lse_strides[0] + h * p.lse_strides[1] +
                 (p.lse_packed ? span.q_off : 0) * p.lse_strides[2];
    // Natural-log logsumexp of the scaled scores: ln 2 * (max_log2 + log2(sum));
    // past the batch's rows, up to lse_rows, the memory-efficient kernel's +inf padding.
    const int64_t row[2] = {row_lo, row_hi};
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (row[r] < rows)
        lse[row[r] * p.lse_strides[2]] = l_row[r] > 0.0f ? kLn2 * (m_run[r] + log2f(l_row[r])) : p.lse_masked;
      else if (row[r] < p.lse_rows)
        lse[row[r] * p.lse_strides[2]] = CUDART_INF_F;
    }
  }
#else
  // This build has no sm_80 code for the running device; mma_attention_available
  // keeps the planner from getting here, so reaching it is a Kiln bug.
  (void)p;
  (void)m_tiles;
  __trap();
#endif
}

template <typename T, int D>
Error launch_typed(const AttentionParams& p, cudaStream_t stream) {
  // Enough row tiles for the query rows and for any logsumexp padding rows.
  const int64_t rows = p.lse != nullptr && p.lse_rows > p.L ? p.lse_rows : p.L;
  const int64_t m_tiles = (rows + kBlockM - 1) / kBlockM;
  const size_t smem = smem_bytes<D>();
  auto kernel = mma_attention_kernel<T, D>;
  if (smem > 48 * 1024)
    KILN_RETURN_IF_ERROR(cuda_status(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize) for the tensor-core attention kernel"));
  const dim3 grid(static_cast<unsigned>(m_tiles), static_cast<unsigned>(p.B * p.Hq));
  kernel<<<grid, kThreads, smem, stream>>>(p, static_cast<int>(m_tiles));
  return cuda_status(cudaGetLastError(), "launching the tensor-core attention kernel");
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// 16-byte rows for cp.async (and 4-byte pairs for the output stores): the
// pointer and every outer stride land on 8-element boundaries and the head
// dim is contiguous.
bool rows_aligned(const void* ptr, const int64_t (&strides)[4]) {
  return aligned16(ptr) && strides[3] == 1 && strides[0] % 8 == 0 && strides[1] % 8 == 0 &&
         strides[2] % 8 == 0;
}

constexpr int kMaxDevices = 64;
std::atomic<int8_t> g_available[kMaxDevices];  // 0: not asked yet, 1: yes, -1: no

}  // namespace

const char* mma_attention_unsupported(const AttentionParams& p) {
  if (p.dtype != DType::Float16 && p.dtype != DType::BFloat16) return "its dtype is not float16 or bfloat16";
  if (p.E != p.Ev || (p.E != 64 && p.E != 128 && p.E != 256))
    return "its head dims are not 64/64, 128/128 or 256/256";
  if (p.B <= 0 || p.Hq <= 0 || p.Hk <= 0 || p.Hq % p.Hk != 0 || p.L <= 0 || p.S <= 0)
    return "it is empty or its heads do not group";
  if (p.B * p.Hq > 65535) return "batch * heads exceeds the grid's y limit (65535)";
  if ((p.L + kBlockM - 1) / kBlockM > 0x7fffffff || (p.lse_rows + kBlockM - 1) / kBlockM > 0x7fffffff)
    return "the query is too long for one launch";
  if (!rows_aligned(p.q, p.q_strides) || !rows_aligned(p.k, p.k_strides) || !rows_aligned(p.v, p.v_strides) ||
      !rows_aligned(p.out, p.out_strides))
    return "a q/k/v/out row is not contiguous and 16-byte aligned";
  return nullptr;
}

Result<bool> mma_attention_available(int device) {
  if (device < 0)
    return set_error(Error::InvalidArgument, "negative CUDA device index " + std::to_string(device));
  if (device < kMaxDevices) {
    const int8_t known = g_available[device].load(std::memory_order_relaxed);
    if (known != 0) return known > 0;
  }
  int major = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  bool ok = false;
  if (major >= 8) {
    // binaryVersion is the architecture of the code that would run on the
    // current device (the caller's ScopedDevice makes that `device`).
    cudaFuncAttributes attr{};
    KILN_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(&attr, mma_attention_kernel<__half, 64>));
    ok = attr.binaryVersion >= 80;
  }
  if (device < kMaxDevices) g_available[device].store(ok ? 1 : -1, std::memory_order_relaxed);
  return ok;
}

Error launch_mma_attention(const AttentionParams& p, cudaStream_t stream) {
  if (const char* why = mma_attention_unsupported(p))
    return set_error(Error::InvalidArgument,
                     std::string("the tensor-core attention kernel cannot run this call: ") + why);
  if (p.dtype == DType::Float16) {
    switch (p.E) {
      case 64: return launch_typed<__half, 64>(p, stream);
      case 128: return launch_typed<__half, 128>(p, stream);
      default: return launch_typed<__half, 256>(p, stream);
    }
  }
  switch (p.E) {
    case 64: return launch_typed<__nv_bfloat16, 64>(p, stream);
    case 128: return launch_typed<__nv_bfloat16, 128>(p, stream);
    default: return launch_typed<__nv_bfloat16, 256>(p, stream);
  }
}

}  // namespace kiln::cudadev
