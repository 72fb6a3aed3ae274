// Random fills on the GPU from a Philox key and first block (core/philox.h),
// with the same element-to-block mapping as the CPU ops (src/shims/cpu/
// random.cpp): a method seeded alike draws the same uniform and integer values
// on either device (normal and exponential ones to the last bit of the math
// library).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

enum class RandomDistribution { Uniform, Normal, Integer, Bernoulli, Exponential };

struct RandomFill {
  RandomDistribution distribution = RandomDistribution::Uniform;
  void* out = nullptr;  ///< element 0
  DType dtype = DType::Float32;
  StridedIndexer out_index;
  int64_t numel = 0;
  uint64_t seed = 0;
  uint64_t first_block = 0;
  double a = 0.0, b = 1.0;  ///< uniform [a, b); normal mean a, std b; exponential rate a; bernoulli p a
  int64_t low = 0, high = 1;  ///< integer [low, high)
  const void* p = nullptr;  ///< bernoulli: per-element probabilities (null: a)
  DType p_dtype = DType::Float32;
  StridedIndexer p_index;
};

/// Philox blocks a fill of `numel` elements of `distribution` consumes.
uint64_t random_blocks(RandomDistribution distribution, int64_t numel);

Error launch_random_fill(const RandomFill& fill, cudaStream_t stream);

/// native_dropout in training: mask = u >= p, out = input * mask / (1 - p);
/// out and mask share out_index.
/// Uses random_blocks(Uniform, numel) blocks.
Error launch_dropout(const void* input, DType dtype, const StridedIndexer& input_index, void* out,
                     const StridedIndexer& out_index, void* mask, int64_t numel, double p, uint64_t seed, uint64_t first_block, cudaStream_t stream);

}  // namespace kiln::cudadev
