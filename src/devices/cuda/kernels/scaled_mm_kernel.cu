#include <cuda_fp16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/float8_decode.cuh"
#include "devices/cuda/kernels/scaled_mm_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kTile = 16;
constexpr unsigned kMaxGridY = 65535;

// |a| (finite, >= 0) as a float8 code with `mantissa_bits` stored bits and
// exponent bias `bias`, rounded to nearest even (rintf in the default
// rounding mode); codes grow with the value, so a mantissa that rounds up
// carries into the exponent by addition. The caller handles overflow.
__device__ inline uint32_t float8_code(float a, int mantissa_bits, int bias) {
  const int min_exponent = 1 - bias;
  if (a < ldexpf(1.0f, min_exponent))
    return static_cast<uint32_t>(rintf(ldexpf(a, mantissa_bits - min_exponent)));
  int e = 0;
  const float m = frexpf(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const auto fraction = static_cast<uint32_t>(rintf((m * 2.0f - 1.0f) * static_cast<float>(1 << mantissa_bits)));
  return (static_cast<uint32_t>(e - 1 + bias) << mantissa_bits) + fraction;
}

// float32 -> float8 as torch's casts: e4m3fn has no infinity, so NaN, an
// infinity or a magnitude rounding past 448 becomes NaN; e5m2 keeps NaN and
// overflows to infinity past 57344. The sign is kept.
__device__ inline uint8_t float_to_e4m3fn(float f) {
  const uint32_t sign = (__float_as_uint(f) >> 24) & 0x80u;
  const float a = fabsf(f);
  if (!(a < 480.0f)) return static_cast<uint8_t>(sign | 0x7fu);
  const uint32_t code = float8_code(a, 3, 7);
  return static_cast<uint8_t>(sign | (code >= 0x7fu ? 0x7fu : code));
}

__device__ inline uint8_t float_to_e5m2(float f) {
  const uint32_t sign = (__float_as_uint(f) >> 24) & 0x80u;
  if (isnan(f)) return static_cast<uint8_t>(sign | 0x7fu);
  const float a = fabsf(f);
  if (!(a < 65536.0f)) return static_cast<uint8_t>(sign | 0x7cu);
  const uint32_t code = float8_code(a, 2, 15);
  return static_cast<uint8_t>(sign | (code >= 0x7cu ? 0x7cu : code));
}

__device__ inline void store_result(void* out, DType dtype, int64_t off, float v) {
  switch (dtype) {
    case DType::Float8_e4m3fn: static_cast<uint8_t*>(out)[off] = float_to_e4m3fn(v); break;
    case DType::Float8_e5m2: static_cast<uint8_t*>(out)[off] = float_to_e5m2(v); break;
    case DType::Complex64:
      static_cast<float*>(out)[2 * off] = v;
      static_cast<float*>(out)[2 * off + 1] = 0.0f;
      break;
    case DType::Complex128:
      static_cast<double*>(out)[2 * off] = v;
      static_cast<double*>(out)[2 * off + 1] = 0.0;
      break;
    default: store_double(out, dtype, off, static_cast<double>(v)); break;
  }
}

// 16 x 16 result tiles, k in steps of 16 through shared memory (float8
// widened on load); grid.y walks row tiles in strides past 65535 of them.
__global__ void scaled_mm_kernel(ScaledMmKernelArgs p) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const bool a_e4m3 = p.a_dtype == DType::Float8_e4m3fn, b_e4m3 = p.b_dtype == DType::Float8_e4m3fn;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  const int64_t row_tiles = (p.m + kTile - 1) / kTile;
  const bool float8_out = p.out_dtype == DType::Float8_e4m3fn || p.out_dtype == DType::Float8_e5m2;
  // Block-uniform loop: every thread of the block reaches each barrier.
  for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
    const int64_t row = tile * kTile + ty;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < p.k; k0 += kTile) {
      const int64_t ka = k0 + tx, kb = k0 + ty;
      as[ty][tx] = (row < p.m && ka < p.k) ? float8_to_float(p.a[row * p.a_rs + ka * p.a_cs], a_e4m3) : 0.0f;
      bs[ty][tx] = (kb < p.k && col < p.n) ? float8_to_float(p.b[kb * p.b_rs + col * p.b_cs], b_e4m3) : 0.0f;
      __syncthreads();
#pragma unroll
      for (int q = 0; q < kTile; ++q) acc = fmaf(as[ty][q], bs[q][tx], acc);
      __syncthreads();
    }
    if (row < p.m && col < p.n) {
      float v = 0.0f;
      if (p.k > 0) {
        v = acc * (p.scale_a[row * p.scale_a_stride] * p.scale_b[col * p.scale_b_stride]);
        if (p.bias != nullptr) v += static_cast<float>(load_double(p.bias, p.bias_dtype, p.bias_index.offset(col)));
        if (float8_out && p.scale_result != nullptr) v *= *p.scale_result;
      }
      store_result(p.out, p.out_dtype, row * p.o_rs + col * p.o_cs, v);
    }
  }
}

}  // namespace

Error launch_scaled_mm_fallback(const ScaledMmKernelArgs& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return Error::Ok;
  const int64_t col_tiles = (args.n + kTile - 1) / kTile, row_tiles = (args.m + kTile - 1) / kTile;
  if (col_tiles > 0x7FFFFFFF) return set_error(Error::NotSupported, "_scaled_mm: too many columns for the kernel grid");
  const dim3 grid(static_cast<unsigned>(col_tiles),
                  static_cast<unsigned>(row_tiles < kMaxGridY ? row_tiles : kMaxGridY));
  scaled_mm_kernel<<<grid, dim3(kTile, kTile), 0, stream>>>(args);
  return cuda_status(cudaGetLastError(), "launching the _scaled_mm kernel");
}

}  // namespace kiln::cudadev
