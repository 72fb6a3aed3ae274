// The most frequent value of each line (torch.mode) on the GPU, chosen as
// ATen's CUDA kernels choose it, which is not how its CPU kernel does.
//
// ATen takes one of two algorithms by line length:
//  - lines of at most 2048 elements (and tensors addressable with 32-bit
//    offsets): one thread block per line bitonic-sorts the line in shared
//    memory (padded to 128, 1024 or 2048 slots), counts each run of equal
//    values and keeps the longest by a block-wide reduction. Among equally
//    long runs the winner is not the smallest value: the reduction's shuffle
//    tree prefers the run whose last sorted position p has the smallest key
//    (bit-reversed warp of p/2, bit-reversed lane of p/2, p's parity). The
//    index is the largest position in the line holding a value == the mode
//    (0 when the mode is NaN, which equals nothing).
//  - longer lines: a stable sort of the whole line, then the first of the
//    most frequent values in sorted order (the smallest) and its first
//    position in the line.
// launch_mode_block reproduces the first (same sorting network, so NaNs,
// which the network's `<` cannot order, land where ATen's land); the shim
// sorts long lines with sort_kernel.h and launch_mode_sorted picks from them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Longest line ATen's one-block-per-line kernel takes (2 x 1024 threads).
constexpr int64_t kModeBlockMaxLine = 2048;

/// True for the dtypes ATen's CUDA mode dispatches over: bool, uint8, int8,
/// int16, int32, int64, float16, bfloat16, float32, float64.
bool mode_supports(DType dtype);

/// values[l], indices[l] (both contiguous, `lines` long) = the mode of line l
/// and its position, by ATen's block kernel. Line l is row-major elements
/// [l * size, (l + 1) * size) of `line_index` (the input's dimensions with
/// the reduced one moved last). 1 <= size <= kModeBlockMaxLine.
Error launch_mode_block(const void* in, DType dtype, const StridedIndexer& line_index, int64_t lines, int64_t size,
                        void* values, int64_t* indices, cudaStream_t stream);

/// The same from lines already stably sorted ascending (sort_kernel.h's
/// order): `sorted` [lines, size] (dtype) and `positions` [lines, size] where
/// each sorted element came from. Picks the first longest run of values equal
/// under ==, its value and the position of its first element.
Error launch_mode_sorted(const void* sorted, DType dtype, const int64_t* positions, int64_t lines, int64_t size,
                         void* values, int64_t* indices, cudaStream_t stream);

}  // namespace kiln::cudadev
