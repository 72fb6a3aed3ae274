#include "kiln/dtype.h"

namespace kiln {

// The model library passes these codes through the shim ABI; they are
// c10::ScalarType values and must match torch exactly.
static_assert(static_cast<int>(DType::UInt8) == 0);
static_assert(static_cast<int>(DType::Int8) == 1);
static_assert(static_cast<int>(DType::Int16) == 2);
static_assert(static_cast<int>(DType::Int32) == 3);
static_assert(static_cast<int>(DType::Int64) == 4);
static_assert(static_cast<int>(DType::Float16) == 5);
static_assert(static_cast<int>(DType::Float32) == 6);
static_assert(static_cast<int>(DType::Float64) == 7);
static_assert(static_cast<int>(DType::Complex64) == 9);
static_assert(static_cast<int>(DType::Complex128) == 10);
static_assert(static_cast<int>(DType::Bool) == 11);
static_assert(static_cast<int>(DType::BFloat16) == 15);
static_assert(static_cast<int>(DType::Float8_e5m2) == 23);
static_assert(static_cast<int>(DType::Float8_e4m3fn) == 24);
static_assert(static_cast<int>(DType::UInt16) == 27);
static_assert(static_cast<int>(DType::UInt32) == 28);
static_assert(static_cast<int>(DType::UInt64) == 29);

namespace {
struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::UInt8, "uint8", 1},        {DType::Int8, "int8", 1},
    {DType::Int16, "int16", 2},        {DType::Int32, "int32", 4},
    {DType::Int64, "int64", 8},        {DType::Float16, "float16", 2},
    {DType::Float32, "float32", 4},    {DType::Float64, "float64", 8},
    {DType::Complex64, "complex64", 8}, {DType::Complex128, "complex128", 16},
    {DType::Bool, "bool", 1},          {DType::BFloat16, "bfloat16", 2},
    {DType::Float8_e5m2, "float8_e5m2", 1}, {DType::Float8_e4m3fn, "float8_e4m3fn", 1},
    {DType::UInt16, "uint16", 2},      {DType::UInt32, "uint32", 4},
    {DType::UInt64, "uint64", 8},
};

const DTypeInfo* find(DType dtype) {
  for (const auto& info : kDTypes)
    if (info.dtype == dtype) return &info;
  return nullptr;
}
}  // namespace

size_t element_size(DType dtype) noexcept {
  const DTypeInfo* info = find(dtype);
  return info ? info->size : 0;
}

bool is_known_dtype(int32_t code) noexcept { return find(static_cast<DType>(code)) != nullptr; }

const char* dtype_name(DType dtype) noexcept {
  const DTypeInfo* info = find(dtype);
  return info ? info->name : "unknown";
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (const auto& info : kDTypes)
    if (name == info.name) return info.dtype;
  return std::nullopt;
}

}  // namespace kiln
