#include "tensor_util.h"

#include <cstring>

#include "core/half_float.h"

namespace kiln::tools {

Result<Tensor> contiguous_copy(const Tensor& tensor, Device device) {
  if (!tensor.defined()) return set_error(Error::InvalidArgument, "copy of an undefined tensor");
  KILN_ASSIGN_OR_RETURN(Tensor copy, Tensor::empty(tensor.sizes(), tensor.dtype(), device));
  KILN_RETURN_IF_ERROR(copy_tensor(copy, tensor));
  return copy;
}

namespace {
template <typename T>
void widen(const void* src, float* dst, int64_t count) {
  const T* in = static_cast<const T*>(src);
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<float>(in[i]);
}
}  // namespace

Result<Tensor> to_float32(const Tensor& tensor) {
  if (!tensor.defined()) return set_error(Error::InvalidArgument, "conversion of an undefined tensor");
  Tensor host = tensor;
  if (!tensor.device().is_cpu() || !tensor.is_contiguous()) {
    KILN_ASSIGN_OR_RETURN(host, contiguous_copy(tensor, Device{}));
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(host.sizes(), DType::Float32));
  const void* src = host.data_ptr();
  float* dst = out.data<float>();
  const int64_t n = host.numel();
  switch (host.dtype()) {
    case DType::Float32: if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * 4); break;
    case DType::Float64: widen<double>(src, dst, n); break;
    case DType::Int8: widen<int8_t>(src, dst, n); break;
    case DType::Int16: widen<int16_t>(src, dst, n); break;
    case DType::Int32: widen<int32_t>(src, dst, n); break;
    case DType::Int64: widen<int64_t>(src, dst, n); break;
    case DType::UInt8: widen<uint8_t>(src, dst, n); break;
    case DType::UInt16: widen<uint16_t>(src, dst, n); break;
    case DType::UInt32: widen<uint32_t>(src, dst, n); break;
    case DType::UInt64: widen<uint64_t>(src, dst, n); break;
    case DType::Bool: {
      const auto* in = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = in[i] ? 1.0f : 0.0f;
      break;
    }
    case DType::Float16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(in[i]);
      break;
    }
    case DType::BFloat16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(in[i]);
      break;
    }
    case DType::Float8_e4m3fn: {
      const auto* in = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float8_e4m3fn_to_float(in[i]);
      break;
    }
    case DType::Float8_e5m2: {
      const auto* in = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = float8_e5m2_to_float(in[i]);
      break;
    }
    default:
      return set_error(Error::NotSupported,
                       "cannot convert dtype code " + std::to_string(static_cast<int>(host.dtype())) + " to float32");
  }
  return out;
}

}  // namespace kiln::tools
