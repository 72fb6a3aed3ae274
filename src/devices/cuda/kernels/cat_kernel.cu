#include "devices/cuda/kernels/cat_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocksPerPiece = 4096;

static_assert(sizeof(CatBatch) <= 32000, "a cat batch must fit the kernel argument space");

__device__ bool is_complex(DType d) { return d == DType::Complex64 || d == DType::Complex128; }

// An integer as a floating dtype, converted directly from the integer as
// ATen's casts do (narrow floats through float32), not through double.
__device__ void store_int_as_floating(void* p, DType dtype, int64_t i, const void* in, DType in_dtype, int64_t j) {
  if (in_dtype == DType::UInt64) {
    const uint64_t u = static_cast<const uint64_t*>(in)[j];
    if (dtype == DType::Float64) static_cast<double*>(p)[i] = static_cast<double>(u);
    else store_double(p, dtype, i, static_cast<double>(static_cast<float>(u)));
    return;
  }
  const int64_t v = load_int(in, in_dtype, j);
  switch (dtype) {
    case DType::Float64: static_cast<double*>(p)[i] = static_cast<double>(v); break;
    case DType::Float32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::Float16: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); break;
    case DType::BFloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v)); break;
    default: break;
  }
}

// Element j of `in` (in_dtype) stored as element i of `out` (out_dtype, a
// different dtype that cat's promotion gives: at least as wide a class).
__device__ void convert(const void* in, DType in_dtype, int64_t j, void* out, DType out_dtype, int64_t i) {
  if (is_complex(out_dtype)) {
    double re = 0.0, im = 0.0;
    if (in_dtype == DType::Complex64) {
      re = static_cast<const float*>(in)[2 * j];
      im = static_cast<const float*>(in)[2 * j + 1];
    } else if (in_dtype == DType::Complex128) {
      re = static_cast<const double*>(in)[2 * j];
      im = static_cast<const double*>(in)[2 * j + 1];
    } else if (is_integral_dtype(in_dtype)) {
      const int64_t v = load_int(in, in_dtype, j);
      re = out_dtype == DType::Complex64 ? static_cast<double>(static_cast<float>(v)) : static_cast<double>(v);
    } else {
      re = load_double(in, in_dtype, j);
    }
    if (out_dtype == DType::Complex64) {
      static_cast<float*>(out)[2 * i] = static_cast<float>(re);
      static_cast<float*>(out)[2 * i + 1] = static_cast<float>(im);
    } else {
      static_cast<double*>(out)[2 * i] = re;
      static_cast<double*>(out)[2 * i + 1] = im;
    }
  } else if (is_floating_dtype(out_dtype)) {
    if (is_integral_dtype(in_dtype)) store_int_as_floating(out, out_dtype, i, in, in_dtype, j);
    else store_double(out, out_dtype, i, load_double(in, in_dtype, j));
  } else {
    store_int(out, out_dtype, i, load_int(in, in_dtype, j));
  }
}

__device__ void copy_element(const void* in, int64_t j, void* out, int64_t i, int bytes) {
  switch (bytes) {
    case 1: static_cast<uint8_t*>(out)[i] = static_cast<const uint8_t*>(in)[j]; break;
    case 2: static_cast<uint16_t*>(out)[i] = static_cast<const uint16_t*>(in)[j]; break;
    case 4: static_cast<uint32_t*>(out)[i] = static_cast<const uint32_t*>(in)[j]; break;
    case 8: static_cast<uint64_t*>(out)[i] = static_cast<const uint64_t*>(in)[j]; break;
    default: static_cast<double2*>(out)[i] = static_cast<const double2*>(in)[j]; break;  // 16: complex128
  }
}

__global__ void cat_kernel(const __grid_constant__ CatBatch b) {
  const CatPiece& p = b.pieces[blockIdx.y];
  const int ndim = b.result.ndim;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < p.numel;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // Row-major position k of the piece, whose sizes are the result's
    // except along the cat dimension.
    int64_t rest = k, in_off = 0, out_off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t s = d == b.dim ? p.size : b.result.sizes[d];
      const int64_t c = rest % s;
      rest /= s;
      in_off += c * p.strides[d];
      out_off += (d == b.dim ? c + p.at : c) * b.result.strides[d];
    }
    if (p.dtype == b.out_dtype) copy_element(p.data, in_off, b.out, out_off, b.out_bytes);
    else convert(p.data, p.dtype, in_off, b.out, b.out_dtype, out_off);
  }
}

}  // namespace

Error launch_cat(const CatBatch& batch, cudaStream_t stream) {
  if (batch.count <= 0 || batch.max_numel <= 0) return Error::Ok;
  int64_t blocks = (batch.max_numel + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocksPerPiece) blocks = kMaxBlocksPerPiece;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(batch.count));
  cat_kernel<<<grid, kThreads, 0, stream>>>(batch);
  return cuda_status(cudaGetLastError(), "launching the cat kernel");
}

}  // namespace kiln::cudadev
