// Moves CPU tensors of floating dtypes (float32, float64, bfloat16, float16)
// in and out of contiguous float32 scratch buffers, so each op has one fp32
// kernel and narrow dtypes are handled by converting at the edges (ATen's CPU
// kernels also accumulate bf16/fp16 in fp32).
#pragma once

#include <vector>

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

/// True for the dtypes load_floats/store_floats accept.
bool is_float_dtype(DType dtype) noexcept;

/// Writes the elements of `src` (CPU, any strides incl. 0, float dtype) to
/// `dst` in row-major logical order as float32. `dst` holds src.numel() floats.
void load_floats(const Tensor& src, float* dst) noexcept;

/// Inverse of load_floats: writes `src` (row-major, dst.numel() floats) into
/// `dst`'s elements, rounding to dst's dtype.
void store_floats(const float* src, const Tensor& dst) noexcept;

/// One element at `p` (host memory) of float dtype `dtype`, as float32.
float read_float(const void* p, DType dtype) noexcept;

/// load_floats into a new vector.
std::vector<float> to_floats(const Tensor& src);

/// A tensor's data as contiguous float32: borrowed when it already is (no copy),
/// else converted into `scratch`. The pointer is valid while both live.
const float* contiguous_floats(const Tensor& src, std::vector<float>& scratch);

}  // namespace kiln::cpu
