#include <cmath>
#include <string>

#include "core/philox.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/random_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

__device__ double uniform_at(uint64_t seed, uint64_t first, int64_t k) {
  const PhiloxBlock blk = philox4x32_10(seed, first + static_cast<uint64_t>(k) / 2);
  return k % 2 == 0 ? uniform_double(blk.v[0], blk.v[1]) : uniform_double(blk.v[2], blk.v[3]);
}

__global__ void random_fill_kernel(RandomFill f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < f.numel; k += step) {
    const int64_t off = f.out_index.offset(k);
    switch (f.distribution) {
      case RandomDistribution::Uniform:
        store_double(f.out, f.dtype, off, f.a + (f.b - f.a) * uniform_at(f.seed, f.first_block, k));
        break;
      case RandomDistribution::Exponential:
        store_double(f.out, f.dtype, off, -log1p(-uniform_at(f.seed, f.first_block, k)) / f.a);
        break;
      case RandomDistribution::Bernoulli: {
        const double p = f.p ? load_double(f.p, f.p_dtype, f.p_index.offset(k)) : f.a;
        store_double(f.out, f.dtype, off, uniform_at(f.seed, f.first_block, k) < p ? 1.0 : 0.0);
        break;
      }
      case RandomDistribution::Normal: {
        const double z = philox_normal(philox4x32_10(f.seed, f.first_block + static_cast<uint64_t>(k)));
        store_double(f.out, f.dtype, off, f.a + f.b * z);
        break;
      }
      case RandomDistribution::Integer: {
        const int64_t v =
            philox_uniform_int(philox4x32_10(f.seed, f.first_block + static_cast<uint64_t>(k)), f.low, f.high);
        if (is_integral_dtype(f.dtype)) store_int(f.out, f.dtype, off, v);
        else store_double(f.out, f.dtype, off, static_cast<double>(v));
        break;
      }
    }
  }
}

__global__ void dropout_kernel(const void* input, DType dtype, StridedIndexer in_index, void* out,
                               StridedIndexer out_index, uint8_t* mask,
                               int64_t numel, double p, uint64_t seed, uint64_t first) {
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < numel; k += step) {
    const bool keep = uniform_at(seed, first, k) >= p;
    const int64_t o = out_index.offset(k);
    mask[o] = keep;
    store_double(out, dtype, o, keep ? load_double(input, dtype, in_index.offset(k)) * scale : 0.0);
  }
}

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < (1 << 16) ? blocks : (1 << 16));
}

}  // namespace

uint64_t random_blocks(RandomDistribution distribution, int64_t numel) {
  const auto n = static_cast<uint64_t>(numel);
  switch (distribution) {
    case RandomDistribution::Normal:
    case RandomDistribution::Integer: return n;
    default: return (n + 1) / 2;
  }
}

Error launch_random_fill(const RandomFill& fill, cudaStream_t stream) {
  if (fill.numel == 0) return Error::Ok;
  random_fill_kernel<<<grid_for(fill.numel), kThreads, 0, stream>>>(fill);
  return cuda_status(cudaGetLastError(), "launching the random fill kernel");
}

Error launch_dropout(const void* input, DType dtype, const StridedIndexer& input_index, void* out,
                     const StridedIndexer& out_index, void* mask, int64_t numel, double p, uint64_t seed, uint64_t first_block, cudaStream_t stream) {
  if (numel == 0) return Error::Ok;
  dropout_kernel<<<grid_for(numel), kThreads, 0, stream>>>(input, dtype, input_index, out, out_index,
                                                           static_cast<uint8_t*>(mask), numel, p, seed, first_block);
  return cuda_status(cudaGetLastError(), "launching the dropout kernel");
}

}  // namespace kiln::cudadev
