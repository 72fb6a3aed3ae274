// Elementwise arithmetic over broadcast, strided operands of any dtype, for
// the CUDA ops that Inductor leaves to a fallback (complex arithmetic, mostly:
// add, mul, pow, abs, angle, polar, fill). One kernel serves every op, dtype
// and layout: each operand is read in the op's compute class (int64, double
// or complex<double>), combined, and stored with ATen's casts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

enum class ElementwiseOp {
  Add,    ///< a + alpha * b
  Mul,    ///< a * b
  Pow,    ///< a ** b (integers: ATen's integer pow, a negative exponent gives 0 except for bases 1 and -1)
  Polar,  ///< a * (cos b + i sin b), a and b real
  Abs,    ///< |a| (complex: the magnitude; integers wrap, unsigned stay)
  Angle,  ///< arg(a) (real: pi for negatives, else 0, NaN stays NaN)
  Fill,   ///< a (a constant)
  Gcd,    ///< gcd(a, b) of integers, computed in the result's dtype as ATen's loop does
};

/// The type operands are read and combined in.
enum class ComputeClass { Integer, Floating, Complex };

/// One operand: a tensor viewed at the result's sizes (stride 0 on a
/// broadcast dimension), or, with data null, the constant (re, im).
struct ElementwiseOperand {
  const void* data = nullptr;
  DType dtype = DType::Float64;
  StridedIndexer index;
  double re = 0.0;
  double im = 0.0;
};

/// out[k] = op(a[k], b[k]) for the `numel` elements of `out_index` (the
/// result's sizes and strides); unary ops ignore b.
Error launch_elementwise(ElementwiseOp op, ComputeClass compute, const ElementwiseOperand& a,
                         const ElementwiseOperand& b, void* out, DType out_dtype, const StridedIndexer& out_index,
                         int64_t numel, double alpha, cudaStream_t stream);

}  // namespace kiln::cudadev
