// The host side of the CUDA elementwise ops (add, mul, pow, abs, angle,
// polar, fill): ATen's result dtype (core/dtype_promotion.h), broadcasting and
// result layout (shims/common/layout_util.h) applied to CUDA tensors, and the
// launch of kernels/elementwise_kernel.cu on the current stream. The result
// is a new tensor the caller owns, laid out as TensorIterator would.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/dtype_promotion.h"
#include "core/half_float.h"
#include "devices/cuda/kernels/elementwise_kernel.h"
#include "shims/cuda/op_util.h"

namespace kiln::cudadev {

/// The compute class of a result (or input) dtype.
inline ComputeClass compute_class(DType dtype) {
  if (is_complex_class(dtype)) return ComputeClass::Complex;
  if (is_floating_class(dtype)) return ComputeClass::Floating;
  return ComputeClass::Integer;
}

/// Fails for dtypes the kernel does not compute on (float8).
inline Error check_elementwise_dtype(const TensorRef& t, const char* name, const char* op) {
  if (dtype_class(t.dtype) < 0)
    return aoti::invalid(std::string("argument '") + name + "' has dtype " + dtype_name(t.dtype) + ", which " + op +
                         " does not take");
  return Error::Ok;
}

/// `t` as an operand at `shape` (its sizes aligned at the last dimension,
/// stride 0 where it broadcasts). `strides` receives its broadcast strides.
inline Result<ElementwiseOperand> tensor_operand(const TensorRef& t, std::span<const int64_t> shape,
                                                 std::vector<int64_t>& strides) {
  const size_t n = shape.size(), lead = n - t.sizes.size();
  strides.assign(n, 0);
  for (size_t i = 0; i < t.sizes.size(); ++i)
    strides[lead + i] = t.sizes[i] == 1 && shape[lead + i] != 1 ? 0 : t.strides[i];
  ElementwiseOperand o;
  o.data = t.data;
  o.dtype = t.dtype;
  KILN_ASSIGN_OR_RETURN(o.index, indexer(shape, strides));
  return o;
}

/// A CUDA tensor argument, or a 0-d CPU tensor (ATen lets one stand for a
/// scalar beside CUDA tensors; its value is read here).
inline Result<TensorRef> read_operand(AtenTensorHandle h, const char* name) {
  KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(h, name, /*require_cuda=*/false));
  if (t.device_type != static_cast<int32_t>(DeviceType::CUDA) && t.dim() != 0)
    return aoti::invalid(std::string("argument '") + name + "' is a CPU tensor of " + std::to_string(t.dim()) +
                         " dimensions; only a 0-d CPU tensor may go with CUDA tensors");
  return t;
}

inline bool on_cpu(const TensorRef& t) { return t.device_type != static_cast<int32_t>(DeviceType::CUDA); }

/// The value of a 0-d CPU tensor as a constant operand.
inline Result<ElementwiseOperand> host_scalar_operand(const TensorRef& t, const char* name) {
  ElementwiseOperand o;
  auto read = [&](auto v) {
    std::memcpy(&v, t.data, sizeof(v));
    return v;
  };
  switch (t.dtype) {
    case DType::Float32: o.re = read(float{}); break;
    case DType::Float64: o.re = read(double{}); break;
    case DType::Float16: o.re = half_to_float(read(uint16_t{})); break;
    case DType::BFloat16: o.re = bf16_to_float(read(uint16_t{})); break;
    case DType::Bool: o.re = read(uint8_t{}) != 0; break;
    case DType::UInt8: o.re = read(uint8_t{}); break;
    case DType::Int8: o.re = read(int8_t{}); break;
    case DType::Int16: o.re = read(int16_t{}); break;
    case DType::Int32: o.re = read(int32_t{}); break;
    case DType::Int64: o.re = static_cast<double>(read(int64_t{})); break;
    case DType::Complex64: {
      const float* p = static_cast<const float*>(t.data);
      o.re = p[0];
      o.im = p[1];
      break;
    }
    case DType::Complex128: {
      const double* p = static_cast<const double*>(t.data);
      o.re = p[0];
      o.im = p[1];
      break;
    }
    default:
      return aoti::invalid(std::string("argument '") + name + "' is a 0-d CPU tensor of dtype " +
                           dtype_name(t.dtype) + ", which this CUDA op does not read");
  }
  o.dtype = t.dtype;
  return o;
}

/// A constant operand.
inline ElementwiseOperand scalar_operand(double re, double im = 0.0) {
  ElementwiseOperand o;
  o.re = re;
  o.im = im;
  return o;
}

/// Runs `op` over `out` (already allocated at the broadcast shape).
inline Error run_elementwise(ElementwiseOp op, ComputeClass compute, const ElementwiseOperand& a,
                             const ElementwiseOperand& b, const TensorRef& out, double alpha = 1.0) {
  KILN_ASSIGN_OR_RETURN(StridedIndexer out_index, indexer(out));
  return launch_elementwise(op, compute, a, b, out.data, out.dtype, out_index, out.numel(), alpha,
                            current_stream(out.device_index));
}

/// out = op(a, b) over the broadcast of `a` and `b` in `compute`, into a new
/// `out_dtype` tensor laid out as TensorIterator would; handed to *ret0.
inline Error binary_elementwise(ElementwiseOp op, ComputeClass compute, const TensorRef& a, const TensorRef& b,
                                const char* name_a, const char* name_b, DType out_dtype, AtenTensorHandle* ret0,
                                double alpha = 1.0) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, aoti::broadcast_shapes(a.sizes, b.sizes, name_a, name_b));
  std::vector<std::vector<int64_t>> strides(2);
  if (on_cpu(a) && on_cpu(b))
    return aoti::invalid(std::string("arguments '") + name_a + "' and '" + name_b + "' are both on the CPU");
  ElementwiseOperand oa, ob;
  if (on_cpu(a)) {
    KILN_ASSIGN_OR_RETURN(oa, host_scalar_operand(a, name_a));
  } else {
    KILN_ASSIGN_OR_RETURN(oa, tensor_operand(a, shape, strides[0]));
  }
  if (on_cpu(b)) {
    KILN_ASSIGN_OR_RETURN(ob, host_scalar_operand(b, name_b));
  } else {
    KILN_ASSIGN_OR_RETURN(ob, tensor_operand(b, shape, strides[1]));
  }
  // A CPU scalar has no layout to follow (an empty stride list never votes).
  if (on_cpu(a)) strides[0].assign(shape.size(), 0);
  if (on_cpu(b)) strides[1].assign(shape.size(), 0);
  const std::vector<int64_t> out_strides = aoti::elementwise_strides(shape, strides);
  const int device = on_cpu(a) ? b.device_index : a.device_index;
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(shape, out_strides, out_dtype,
                                                    static_cast<int32_t>(DeviceType::CUDA), device));
  KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
  KILN_RETURN_IF_ERROR(run_elementwise(op, compute, oa, ob, o, alpha));
  return return_handle(out, ret0, "ret0");
}

/// out = op(a, b) where `b` is a constant, into a new `out_dtype` tensor with
/// a's sizes laid out as TensorIterator would (contiguous with `contiguous`,
/// for ops whose ATen kernel allocates so); handed to *ret0.
inline Error unary_elementwise(ElementwiseOp op, ComputeClass compute, const TensorRef& a,
                               const ElementwiseOperand& b, DType out_dtype, AtenTensorHandle* ret0,
                               double alpha = 1.0, bool contiguous = false) {
  std::vector<std::vector<int64_t>> strides(1);
  KILN_ASSIGN_OR_RETURN(ElementwiseOperand oa, tensor_operand(a, a.sizes, strides[0]));
  const std::vector<int64_t> out_strides =
      contiguous ? contiguous_strides(a.sizes) : aoti::elementwise_strides(a.sizes, strides);
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(a.sizes, out_strides, out_dtype,
                                                    static_cast<int32_t>(DeviceType::CUDA), a.device_index));
  KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
  KILN_RETURN_IF_ERROR(run_elementwise(op, compute, oa, b, o, alpha));
  return return_handle(out, ret0, "ret0");
}

}  // namespace kiln::cudadev
