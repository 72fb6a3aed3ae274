#include "shims/common/element_convert.h"

#include <cstring>
#include <vector>

#include "core/half_float.h"

namespace kiln::aoti {

bool convertible(DType dtype) noexcept {
  switch (dtype) {
    case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Float16: case DType::Float32: case DType::Float64: case DType::Bool: case DType::BFloat16:
    case DType::UInt16: case DType::UInt32: case DType::UInt64:
      return true;
    default:
      return false;
  }
}

namespace {
template <typename T>
T read(const void* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void write(void* p, T v) noexcept {
  std::memcpy(p, &v, sizeof v);
}
Scalar from_float(double f) noexcept { return Scalar{true, f, 0, false}; }
Scalar from_int(int64_t i) noexcept { return Scalar{false, 0.0, i, false}; }
Scalar from_uint(uint64_t u) noexcept { return Scalar{false, 0.0, static_cast<int64_t>(u), true}; }

double as_double(const Scalar& s) noexcept {
  if (s.is_float) return s.f;
  return s.is_unsigned ? static_cast<double>(static_cast<uint64_t>(s.i)) : static_cast<double>(s.i);
}
// Integer target: floats truncate toward zero (out-of-range values are
// undefined in ATen too; here they saturate instead of invoking UB).
int64_t as_int(const Scalar& s) noexcept {
  if (!s.is_float) return s.i;
  if (s.f != s.f) return 0;
  if (s.f >= 9.2233720368547758e18) return INT64_MAX;
  if (s.f <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(s.f);
}
uint64_t as_uint(const Scalar& s) noexcept {
  if (!s.is_float) return static_cast<uint64_t>(s.i);
  if (s.f >= 0 && s.f < 1.8446744073709552e19) return static_cast<uint64_t>(s.f);
  return static_cast<uint64_t>(as_int(s));
}
}  // namespace

Scalar load_scalar(const void* p, DType dtype) noexcept {
  switch (dtype) {
    case DType::UInt8: return from_uint(read<uint8_t>(p));
    case DType::Int8: return from_int(read<int8_t>(p));
    case DType::Int16: return from_int(read<int16_t>(p));
    case DType::Int32: return from_int(read<int32_t>(p));
    case DType::Int64: return from_int(read<int64_t>(p));
    case DType::UInt16: return from_uint(read<uint16_t>(p));
    case DType::UInt32: return from_uint(read<uint32_t>(p));
    case DType::UInt64: return from_uint(read<uint64_t>(p));
    case DType::Bool: return from_int(read<uint8_t>(p) != 0 ? 1 : 0);
    case DType::Float16: return from_float(half_to_float(read<uint16_t>(p)));
    case DType::BFloat16: return from_float(bf16_to_float(read<uint16_t>(p)));
    case DType::Float32: return from_float(read<float>(p));
    case DType::Float64: return from_float(read<double>(p));
    default: return from_int(0);
  }
}

void store_scalar(void* p, DType dtype, const Scalar& v) noexcept {
  switch (dtype) {
    case DType::UInt8: write(p, static_cast<uint8_t>(as_uint(v))); break;
    case DType::Int8: write(p, static_cast<int8_t>(as_int(v))); break;
    case DType::Int16: write(p, static_cast<int16_t>(as_int(v))); break;
    case DType::Int32: write(p, static_cast<int32_t>(as_int(v))); break;
    case DType::Int64: write(p, as_int(v)); break;
    case DType::UInt16: write(p, static_cast<uint16_t>(as_uint(v))); break;
    case DType::UInt32: write(p, static_cast<uint32_t>(as_uint(v))); break;
    case DType::UInt64: write(p, as_uint(v)); break;
    case DType::Bool: write(p, static_cast<uint8_t>(v.is_float ? (v.f != 0.0) : (v.i != 0))); break;
    case DType::Float16: write(p, float_to_half(static_cast<float>(as_double(v)))); break;
    case DType::BFloat16: write(p, float_to_bf16(static_cast<float>(as_double(v)))); break;
    case DType::Float32: write(p, static_cast<float>(as_double(v))); break;
    case DType::Float64: write(p, as_double(v)); break;
    default: break;
  }
}

Error convert_copy_host(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype()) return copy_tensor(dst, src);
  if (!convertible(dst.dtype()) || !convertible(src.dtype()))
    return set_error(Error::NotSupported, std::string("conversion from ") + dtype_name(src.dtype()) + " to " +
                                              dtype_name(dst.dtype()) + " is not supported");
  if (dst.sizes() != src.sizes())
    return set_error(Error::InvalidArgument, "conversion between different shapes: " + src.describe() + " -> " +
                                                 dst.describe());
  const int64_t n = dst.numel();
  if (n == 0) return Error::Ok;
  const auto ds = static_cast<int64_t>(element_size(dst.dtype()));
  const auto ss = static_cast<int64_t>(element_size(src.dtype()));
  auto* d = static_cast<char*>(dst.data_ptr());
  const auto* s = static_cast<const char*>(src.data_ptr());
  const size_t dim = dst.sizes().size();
  // Odometer over the shape: element offsets advance by each dimension's stride.
  std::vector<int64_t> idx(dim, 0);
  int64_t doff = 0, soff = 0;
  for (int64_t k = 0; k < n; ++k) {
    store_scalar(d + doff * ds, dst.dtype(), load_scalar(s + soff * ss, src.dtype()));
    for (size_t j = dim; j-- > 0;) {
      if (++idx[j] < dst.sizes()[j]) {
        doff += dst.strides()[j];
        soff += src.strides()[j];
        break;
      }
      doff -= dst.strides()[j] * (dst.sizes()[j] - 1);
      soff -= src.strides()[j] * (src.sizes()[j] - 1);
      idx[j] = 0;
    }
  }
  return Error::Ok;
}

}  // namespace kiln::aoti
