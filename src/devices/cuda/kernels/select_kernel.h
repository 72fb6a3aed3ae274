// Order statistics picked from lines already sorted by sort_kernel.h (NaN
// after +inf): kthvalue's k-th element of each line, and the whole-tensor
// median and nanmedian.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// values[l] = sorted[l * count + pick] and indices[l] = positions[l * count
/// + pick] for l < lines (values, indices contiguous; sorted of `dtype`).
Error launch_pick_sorted(const void* sorted, const int64_t* positions, DType dtype, int64_t lines, int64_t count,
                         int64_t pick, void* values, int64_t* indices, cudaStream_t stream);

/// out (one element of `dtype`) = the median of the n sorted elements: the
/// lower middle one; with ignore_nan of those before the first NaN. NaN when
/// a NaN is present (median) or nothing is left (nanmedian, all NaN). For
/// n == 0 `sorted` is not read and out is NaN, or `empty_integer` for an
/// integer dtype.
Error launch_median_sorted(const void* sorted, DType dtype, int64_t n, bool ignore_nan, int64_t empty_integer,
                           void* out, cudaStream_t stream);

}  // namespace kiln::cudadev
