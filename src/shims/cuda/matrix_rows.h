// x [..., K] of any layout as the 2-D matrix of its rows [rows, K] that the
// row-wise products (the quantized linears) read: a view when x's leading
// dims collapse into one row stride with K contiguous, else a contiguous copy
// on the stream (a few KB for a decode step's activations).
#pragma once

#include "devices/cuda/device/strided_copy.h"
#include "shims/cuda/op_util.h"

namespace kiln::cudadev {

/// x's rows as a [rows, K] TensorRef (strides {row stride, 1}); `scratch`
/// owns the copy when one is made and must outlive the result's use.
inline Result<TensorRef> matrix_rows(const TensorRef& x, DeviceBuffer& scratch, cudaStream_t stream) {
  const int64_t d = x.dim(), k = x.sizes[d - 1];
  const int64_t rows = k == 0 ? 0 : x.numel() / k;
  bool view = x.strides[d - 1] == 1 || k <= 1;
  for (int64_t i = 0; view && i + 2 < d; ++i)
    if (x.sizes[i] > 1 && x.strides[i] != x.strides[i + 1] * x.sizes[i + 1]) view = false;
  TensorRef m = x;
  m.sizes = {rows, k};
  if (view) {
    m.strides = {d >= 2 ? x.strides[d - 2] : k, 1};
    return m;
  }
  KILN_ASSIGN_OR_RETURN(scratch, DeviceBuffer::allocate(static_cast<size_t>(x.numel()) * x.element_bytes(),
                                                        x.device_index, stream));
  const std::vector<int64_t> strides = contiguous_strides(x.sizes);
  KILN_RETURN_IF_ERROR(launch_strided_copy(scratch.get(), strides.data(), x.data, x.strides.data(), x.sizes.data(),
                                           d, x.element_bytes(), stream));
  m.data = scratch.get();
  m.strides = {k, 1};
  return m;
}

}  // namespace kiln::cudadev
