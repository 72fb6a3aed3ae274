// The warp-level tensor-core product both attention kernels use (sm_80+):
//
//   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: D[16x8] += A[16x16] B[16x8]
//   (fp32 accumulate). Per PTX, with g = lane / 4 ("groupID") and
//   t = lane % 4 ("threadID_in_group"), each lane holds
//     A: a0 = A[g][2t, 2t+1]     a1 = A[g+8][2t, 2t+1]
//        a2 = A[g][2t+8, 2t+9]   a3 = A[g+8][2t+8, 2t+9]      (2 halves per 32-bit register,
//     B: b0 = B[2t, 2t+1][g]     b1 = B[2t+8, 2t+9][g]          the lower index in the low half)
//     C/D: c0, c1 = C[g][2t, 2t+1]   c2, c3 = C[g+8][2t, 2t+1]
//
// For S = Q K^T, A is 16 query rows x 16 head dims of Q and B[d][n] = K[n][d],
// so b0 is two consecutive dims of key row g: one 32-bit shared-memory load
// from K stored [key][dim] (lds32). Include only from code compiled for sm_80+.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace kiln::cudadev {

/// d += a * b for one m16n8k16 tile (fragments as above); the first argument
/// only picks the input type.
__device__ inline void mma16816(__half, float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ inline void mma16816(__nv_bfloat16, float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Two consecutive 16-bit elements (4-byte aligned) as one fragment register.
__device__ inline uint32_t lds32(const uint16_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

}  // namespace kiln::cudadev
