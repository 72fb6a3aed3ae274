// Binary search of values in sorted lines of boundaries (searchsorted,
// bucketize) and equal-width histograms (histc) on the GPU. Inputs of any
// dtype and strides; outputs contiguous.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// One search: `count` values (row-major over values_index's sizes, or the
/// single `scalar` when `values` is null) searched in lines of `n` boundaries
/// (row-major over boundaries_index's sizes; line = value number / per_line).
/// Both sides are compared after conversion to `common`. `sorter` (int64, the
/// boundaries' shape, may be null) gives each line's sorted order; an index
/// outside [0, n) makes that value's result -1 instead of a read past the line.
struct SearchArgs {
  const void* boundaries = nullptr;
  DType boundaries_dtype = DType::Float32;
  StridedIndexer boundaries_index;
  const void* values = nullptr;
  DType values_dtype = DType::Float32;
  StridedIndexer values_index;
  double scalar = 0.0;
  const int64_t* sorter = nullptr;
  StridedIndexer sorter_index;
  DType common = DType::Float32;
  int64_t n = 0;
  int64_t per_line = 1;
  int64_t count = 0;
  bool right = false;
  void* out = nullptr;
  DType out_dtype = DType::Int64;
};

Error launch_search(const SearchArgs& args, cudaStream_t stream);

/// histc of `numel` elements of `in` (floating `dtype`, row-major over
/// in_index's sizes) into `bins` contiguous bins of `out` (same dtype),
/// cleared first. With `data_range`, the edges are the data's min and max,
/// found on the device into `range` (2 doubles of device memory), equal ones
/// widened by 1; NaN or infinite ones leave every bin 0 (reporting them would
/// need a copy to the host). Else the edges are [lo, hi], already checked.
Error launch_histc(const void* in, DType dtype, const StridedIndexer& in_index, int64_t numel, void* out,
                   int64_t bins, bool data_range, double lo, double hi, double* range, cudaStream_t stream);

/// `x` rounded to floating `dtype` (float32, float16, bfloat16; float64 as is).
double round_to_floating(double x, DType dtype);

}  // namespace kiln::cudadev
