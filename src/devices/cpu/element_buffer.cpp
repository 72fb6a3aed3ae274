#include "devices/cpu/element_buffer.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/half_float.h"
#include "devices/cpu/strided_index.h"

namespace kiln::cpu {

ElementKind element_kind(DType dtype) noexcept {
  switch (dtype) {
    case DType::Bool: case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32:
    case DType::Int64: case DType::UInt16: case DType::UInt32: case DType::UInt64:
      return ElementKind::Integral;
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64:
      return ElementKind::Floating;
    case DType::Complex64: case DType::Complex128:
      return ElementKind::Complex;
    default:
      return ElementKind::Unsupported;
  }
}

namespace {

template <typename S>
S load(const void* p) noexcept {
  S v;
  std::memcpy(&v, p, sizeof(S));
  return v;
}
template <typename S>
void store(void* p, S v) noexcept {
  std::memcpy(p, &v, sizeof(S));
}

// ATen casts floating values to integers by C++ conversion, which is undefined
// outside the target's range; Kiln saturates instead (NaN gives 0) so a bad
// value cannot become undefined behaviour.
template <typename I>
I float_to_int(double v) noexcept {
  if (std::isnan(v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::lowest());
  constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());
  if (v <= lo) return std::numeric_limits<I>::lowest();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

// The stored element as the widest type of each kind.
struct Wide {
  ElementKind kind = ElementKind::Unsupported;
  int64_t i = 0;
  double f = 0.0;
  Complex c{};
};

Wide read_wide(const void* p, DType dtype) noexcept {
  Wide w;
  w.kind = element_kind(dtype);
  switch (dtype) {
    case DType::Bool: w.i = load<uint8_t>(p) != 0; break;
    case DType::UInt8: w.i = load<uint8_t>(p); break;
    case DType::Int8: w.i = load<int8_t>(p); break;
    case DType::Int16: w.i = load<int16_t>(p); break;
    case DType::Int32: w.i = load<int32_t>(p); break;
    case DType::Int64: w.i = load<int64_t>(p); break;
    case DType::UInt16: w.i = load<uint16_t>(p); break;
    case DType::UInt32: w.i = load<uint32_t>(p); break;
    case DType::UInt64: w.i = static_cast<int64_t>(load<uint64_t>(p)); break;
    case DType::Float16: w.f = half_to_float(load<uint16_t>(p)); break;
    case DType::BFloat16: w.f = bf16_to_float(load<uint16_t>(p)); break;
    case DType::Float32: w.f = load<float>(p); break;
    case DType::Float64: w.f = load<double>(p); break;
    case DType::Complex64: {
      const auto* f = static_cast<const float*>(p);
      w.c = Complex(load<float>(f), load<float>(f + 1));
      break;
    }
    case DType::Complex128: w.c = load<Complex>(p); break;
    default: break;
  }
  return w;
}

void write_int(void* p, DType dtype, int64_t v) noexcept {
  switch (dtype) {
    case DType::Bool: store<uint8_t>(p, v != 0); break;
    case DType::UInt8: store(p, static_cast<uint8_t>(v)); break;
    case DType::Int8: store(p, static_cast<int8_t>(v)); break;
    case DType::Int16: store(p, static_cast<int16_t>(v)); break;
    case DType::Int32: store(p, static_cast<int32_t>(v)); break;
    case DType::Int64: store(p, v); break;
    case DType::UInt16: store(p, static_cast<uint16_t>(v)); break;
    case DType::UInt32: store(p, static_cast<uint32_t>(v)); break;
    case DType::UInt64: store(p, static_cast<uint64_t>(v)); break;
    default: break;
  }
}

void write_float(void* p, DType dtype, double v) noexcept {
  switch (dtype) {
    case DType::Bool: store<uint8_t>(p, v != 0.0); break;
    case DType::UInt8: store(p, float_to_int<uint8_t>(v)); break;
    case DType::Int8: store(p, float_to_int<int8_t>(v)); break;
    case DType::Int16: store(p, float_to_int<int16_t>(v)); break;
    case DType::Int32: store(p, float_to_int<int32_t>(v)); break;
    case DType::Int64: store(p, float_to_int<int64_t>(v)); break;
    case DType::UInt16: store(p, float_to_int<uint16_t>(v)); break;
    case DType::UInt32: store(p, float_to_int<uint32_t>(v)); break;
    case DType::UInt64: store(p, float_to_int<uint64_t>(v)); break;
    case DType::Float16: store(p, float_to_half(static_cast<float>(v))); break;
    case DType::BFloat16: store(p, float_to_bf16(static_cast<float>(v))); break;
    case DType::Float32: store(p, static_cast<float>(v)); break;
    case DType::Float64: store(p, v); break;
    case DType::Complex64: {
      const float parts[2] = {static_cast<float>(v), 0.0f};
      std::memcpy(p, parts, sizeof parts);
      break;
    }
    case DType::Complex128: store(p, Complex(v, 0.0)); break;
    default: break;
  }
}

void write_complex(void* p, DType dtype, Complex v) noexcept {
  if (dtype == DType::Complex64) {
    const float parts[2] = {static_cast<float>(v.real()), static_cast<float>(v.imag())};
    std::memcpy(p, parts, sizeof parts);
  } else if (dtype == DType::Complex128) {
    store(p, v);
  } else {
    write_float(p, dtype, v.real());
  }
}

}  // namespace

template <>
int64_t read_element<int64_t>(const void* p, DType dtype) noexcept {
  const Wide w = read_wide(p, dtype);
  if (w.kind == ElementKind::Floating) return float_to_int<int64_t>(w.f);
  if (w.kind == ElementKind::Complex) return float_to_int<int64_t>(w.c.real());
  return w.i;
}
template <>
double read_element<double>(const void* p, DType dtype) noexcept {
  const Wide w = read_wide(p, dtype);
  if (w.kind == ElementKind::Integral)
    return dtype == DType::UInt64 ? static_cast<double>(static_cast<uint64_t>(w.i)) : static_cast<double>(w.i);
  if (w.kind == ElementKind::Complex) return w.c.real();
  return w.f;
}
template <>
Complex read_element<Complex>(const void* p, DType dtype) noexcept {
  const Wide w = read_wide(p, dtype);
  if (w.kind == ElementKind::Complex) return w.c;
  return Complex(read_element<double>(p, dtype), 0.0);
}

template <>
void write_element<int64_t>(void* p, DType dtype, int64_t value) noexcept {
  if (element_kind(dtype) == ElementKind::Integral) {
    write_int(p, dtype, value);
  } else {
    write_float(p, dtype, static_cast<double>(value));
  }
}
template <>
void write_element<double>(void* p, DType dtype, double value) noexcept {
  write_float(p, dtype, value);
}
template <>
void write_element<Complex>(void* p, DType dtype, Complex value) noexcept {
  write_complex(p, dtype, value);
}

template <typename T>
std::vector<T> read_elements(const Tensor& src) {
  std::vector<T> out(static_cast<size_t>(src.numel()));
  const auto* base = static_cast<const char*>(src.data_ptr());
  const auto elem = static_cast<int64_t>(element_size(src.dtype()));
  const DType dt = src.dtype();
  for_each_offset(src.sizes(), src.strides(),
                  [&](int64_t k, int64_t off) { out[static_cast<size_t>(k)] = read_element<T>(base + off * elem, dt); });
  return out;
}

template <typename T>
void write_elements(const T* values, const Tensor& dst) noexcept {
  auto* base = static_cast<char*>(dst.data_ptr());
  const auto elem = static_cast<int64_t>(element_size(dst.dtype()));
  const DType dt = dst.dtype();
  for_each_offset(dst.sizes(), dst.strides(),
                  [&](int64_t k, int64_t off) { write_element<T>(base + off * elem, dt, values[k]); });
}

template std::vector<int64_t> read_elements<int64_t>(const Tensor&);
template std::vector<double> read_elements<double>(const Tensor&);
template std::vector<Complex> read_elements<Complex>(const Tensor&);
template void write_elements<int64_t>(const int64_t*, const Tensor&) noexcept;
template void write_elements<double>(const double*, const Tensor&) noexcept;
template void write_elements<Complex>(const Complex*, const Tensor&) noexcept;

}  // namespace kiln::cpu
