#include "devices/cpu/float_io.h"

#include <cstring>

#include "core/half_float.h"
#include "devices/cpu/strided_index.h"

namespace kiln::cpu {

bool is_float_dtype(DType dtype) noexcept {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::BFloat16 || dtype == DType::Float16;
}

float read_float(const void* p, DType dtype) noexcept {
  switch (dtype) {
    case DType::Float32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::Float64: { double v; std::memcpy(&v, p, 8); return static_cast<float>(v); }
    case DType::BFloat16: { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
    case DType::Float16: { uint16_t v; std::memcpy(&v, p, 2); return half_to_float(v); }
    default: return 0.0f;
  }
}

namespace {

void write_float(char* p, DType dtype, float f) noexcept {
  switch (dtype) {
    case DType::Float32: std::memcpy(p, &f, 4); break;
    case DType::Float64: { double v = f; std::memcpy(p, &v, 8); break; }
    case DType::BFloat16: { uint16_t v = float_to_bf16(f); std::memcpy(p, &v, 2); break; }
    case DType::Float16: { uint16_t v = float_to_half(f); std::memcpy(p, &v, 2); break; }
    default: break;
  }
}

}  // namespace

void load_floats(const Tensor& src, float* dst) noexcept {
  const auto* base = static_cast<const char*>(src.data_ptr());
  const auto elem = static_cast<int64_t>(element_size(src.dtype()));
  if (src.dtype() == DType::Float32 && src.is_contiguous()) {
    if (src.numel() > 0) std::memcpy(dst, base, src.nbytes());
    return;
  }
  const DType dt = src.dtype();
  for_each_offset(src.sizes(), src.strides(), [&](int64_t k, int64_t off) { dst[k] = read_float(base + off * elem, dt); });
}

void store_floats(const float* src, const Tensor& dst) noexcept {
  auto* base = static_cast<char*>(dst.data_ptr());
  const auto elem = static_cast<int64_t>(element_size(dst.dtype()));
  if (dst.dtype() == DType::Float32 && dst.is_contiguous()) {
    if (dst.numel() > 0) std::memcpy(base, src, dst.nbytes());
    return;
  }
  const DType dt = dst.dtype();
  for_each_offset(dst.sizes(), dst.strides(), [&](int64_t k, int64_t off) { write_float(base + off * elem, dt, src[k]); });
}

std::vector<float> to_floats(const Tensor& src) {
  std::vector<float> out(static_cast<size_t>(src.numel()));
  load_floats(src, out.data());
  return out;
}

const float* contiguous_floats(const Tensor& src, std::vector<float>& scratch) {
  if (src.dtype() == DType::Float32 && src.is_contiguous()) return src.data<const float>();
  scratch = to_floats(src);
  return scratch.data();
}

}  // namespace kiln::cpu
