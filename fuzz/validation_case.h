// The byte encoding of one input-validation fuzz case: a method contract and
// the tensors handed to execute(). The fuzzer decodes arbitrary bytes with
// it; the seed generator encodes valid cases with it, so both sides share one
// definition of the format.
//
// Contracts are limited to what ProgramFile guarantees after validation
// (known dtypes, sizes >= 0, dynamic bounds min >= 0 and max == -1 or
// max >= min), because validate_inputs is only ever given such a contract.
// Tensors are not limited at all: Tensor's public constructor takes any
// sizes, strides, offset, dtype code and storage size, so validate_inputs
// must reject every geometry it cannot trust without crashing.
//
// Layout, read front to back; bytes past the end read as zero:
//   u8 device selector, u8 input count (mod 5), u8 tensor count (mod 5)
//   per input spec:  u8 dtype selector, u8 rank (mod 5), per dim:
//                    u8 flags (bit 0: dynamic), i64 size, i64 min, i64 max
//   per tensor:      u8 defined, i32 dtype code, u8 device type selector,
//                    i32 device index, u8 rank (mod 6), rank x i64 size,
//                    rank x i64 stride, i64 storage offset, u64 storage bytes
//   per input spec:  u8 flags (bit 0: a dim order follows; else row-major),
//                    then rank x u8 picks: the k-th entry of the dim order is
//                    the (pick mod n)-th of the n dims not yet picked, in
//                    increasing order (so any bytes give a permutation, as
//                    ProgramFile guarantees, and every permutation has bytes)
// The dim orders come last so that inputs written before they existed still
// decode to the same case, row-major.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "kiln/program_file.h"
#include "kiln/tensor.h"

namespace kiln::fuzz {

inline constexpr DType kKnownDTypes[] = {DType::UInt8,    DType::Int8,      DType::Int16,       DType::Int32,
                                         DType::Int64,    DType::Float16,   DType::Float32,     DType::Float64,
                                         DType::Bool,     DType::BFloat16,  DType::Float8_e5m2, DType::Float8_e4m3fn,
                                         DType::UInt16,   DType::UInt32,    DType::UInt64};
inline constexpr size_t kKnownDTypeCount = sizeof(kKnownDTypes) / sizeof(kKnownDTypes[0]);
// Method device strings, well-formed and not; the reader only checks non-empty.
inline constexpr const char* kMethodDevices[] = {"cpu", "cuda", "cuda:1", "mps", "tpu", "cuda:x", "cuda:-1", "c"};
inline constexpr DeviceType kTensorDeviceTypes[] = {DeviceType::CPU, DeviceType::CUDA, DeviceType::MPS,
                                                   static_cast<DeviceType>(7)};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  template <typename T>
  T take() {
    uint8_t buf[sizeof(T)] = {};
    const size_t n = std::min(sizeof(T), bytes_.size() - pos_);
    std::memcpy(buf, bytes_.data() + pos_, n);
    pos_ += n;
    T v;
    std::memcpy(&v, buf, sizeof(T));
    return v;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

class ByteWriter {
 public:
  template <typename T>
  void put(T v) {
    uint8_t buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    bytes.insert(bytes.end(), buf, buf + sizeof(T));
  }
  std::vector<uint8_t> bytes;
};

/// Geometry of one fuzzed tensor; its storage is borrowed fake memory of
/// `storage_bytes` (validate_inputs never reads tensor data).
struct TensorCase {
  bool defined = true;
  int32_t dtype = static_cast<int32_t>(DType::Float32);
  uint8_t device_type = 0;  // index into kTensorDeviceTypes (mod)
  int32_t device_index = 0;
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  uint64_t storage_bytes = 0;
};

struct ValidationCase {
  MethodInfo method;
  std::vector<TensorCase> tensors;
};

inline ValidationCase decode_validation_case(std::span<const uint8_t> bytes) {
  ByteReader r(bytes);
  ValidationCase c;
  c.method.name = "forward";
  c.method.backend = "aoti";
  c.method.device = kMethodDevices[r.take<uint8_t>() % std::size(kMethodDevices)];
  const int input_count = r.take<uint8_t>() % 5;
  const int tensor_count = r.take<uint8_t>() % 5;
  for (int i = 0; i < input_count; ++i) {
    TensorSpec spec;
    // Appended, not `"x" + std::to_string(i)`: GCC 12 flags that with a false -Wrestrict.
    if (i % 2) spec.name.append("x").append(std::to_string(i));
    spec.dtype = kKnownDTypes[r.take<uint8_t>() % kKnownDTypeCount];
    const int rank = r.take<uint8_t>() % 5;
    for (int d = 0; d < rank; ++d) {
      DimSpec dim;
      dim.dynamic = (r.take<uint8_t>() & 1) != 0;
      dim.size = r.take<int64_t>();
      dim.min = r.take<int64_t>();
      dim.max = r.take<int64_t>();
      // Clamp into what the program reader accepts.
      if (dim.size < 0) dim.size = dim.size == INT64_MIN ? INT64_MAX : -dim.size;
      if (dim.min < 0) dim.min = dim.min == INT64_MIN ? INT64_MAX : -dim.min;
      if (dim.max < dim.min) dim.max = -1;
      if (dim.dynamic) dim.name.append("s").append(std::to_string(d));
      spec.dims.push_back(dim);
    }
    c.method.inputs.push_back(std::move(spec));
  }
  for (int i = 0; i < tensor_count; ++i) {
    TensorCase t;
    t.defined = (r.take<uint8_t>() & 1) != 0;
    t.dtype = r.take<int32_t>();
    t.device_type = r.take<uint8_t>();
    t.device_index = r.take<int32_t>();
    const int rank = r.take<uint8_t>() % 6;
    for (int d = 0; d < rank; ++d) t.sizes.push_back(r.take<int64_t>());
    for (int d = 0; d < rank; ++d) t.strides.push_back(r.take<int64_t>());
    t.storage_offset = r.take<int64_t>();
    t.storage_bytes = r.take<uint64_t>();
    c.tensors.push_back(std::move(t));
  }
  for (TensorSpec& spec : c.method.inputs) {
    if ((r.take<uint8_t>() & 1) == 0) continue;
    std::vector<uint8_t> left;
    for (size_t d = 0; d < spec.dims.size(); ++d) left.push_back(static_cast<uint8_t>(d));
    while (!left.empty()) {
      const size_t pick = r.take<uint8_t>() % left.size();
      spec.dim_order.push_back(left[pick]);
      left.erase(left.begin() + static_cast<std::ptrdiff_t>(pick));
    }
  }
  return c;
}

/// Inverse of decode_validation_case for cases already in its domain (device
/// given as an index into kMethodDevices, dtypes as indices into kKnownDTypes).
struct SeedSpec {
  uint8_t dtype_index = 0;
  std::vector<DimSpec> dims;
  std::vector<uint8_t> dim_order{};  // empty: row-major
};
inline std::vector<uint8_t> encode_validation_case(uint8_t method_device, const std::vector<SeedSpec>& inputs,
                                                   const std::vector<TensorCase>& tensors) {
  ByteWriter w;
  w.put<uint8_t>(method_device);
  w.put<uint8_t>(static_cast<uint8_t>(inputs.size()));
  w.put<uint8_t>(static_cast<uint8_t>(tensors.size()));
  for (const SeedSpec& s : inputs) {
    w.put<uint8_t>(s.dtype_index);
    w.put<uint8_t>(static_cast<uint8_t>(s.dims.size()));
    for (const DimSpec& d : s.dims) {
      w.put<uint8_t>(d.dynamic ? 1 : 0);
      w.put<int64_t>(d.size);
      w.put<int64_t>(d.min);
      w.put<int64_t>(d.max);
    }
  }
  for (const TensorCase& t : tensors) {
    w.put<uint8_t>(t.defined ? 1 : 0);
    w.put<int32_t>(t.dtype);
    w.put<uint8_t>(t.device_type);
    w.put<int32_t>(t.device_index);
    w.put<uint8_t>(static_cast<uint8_t>(t.sizes.size()));
    for (int64_t s : t.sizes) w.put<int64_t>(s);
    for (int64_t s : t.strides) w.put<int64_t>(s);
    w.put<int64_t>(t.storage_offset);
    w.put<uint64_t>(t.storage_bytes);
  }
  for (const SeedSpec& s : inputs) {
    w.put<uint8_t>(s.dim_order.empty() ? 0 : 1);
    if (s.dim_order.empty()) continue;
    std::vector<uint8_t> left;
    for (size_t d = 0; d < s.dims.size(); ++d) left.push_back(static_cast<uint8_t>(d));
    for (uint8_t d : s.dim_order) {
      const auto at = std::find(left.begin(), left.end(), d);
      if (at == left.end()) break;  // not a permutation: the decoder completes it
      w.put<uint8_t>(static_cast<uint8_t>(at - left.begin()));
      left.erase(at);
    }
  }
  return std::move(w.bytes);
}

/// The tensor a TensorCase describes, built with the unchecked constructor.
/// `fake_data` is any non-null address: nothing dereferences it.
inline Tensor make_tensor(const TensorCase& t, void* fake_data) {
  if (!t.defined) return Tensor();
  const Device device{kTensorDeviceTypes[t.device_type % std::size(kTensorDeviceTypes)], t.device_index};
  return Tensor(Storage::create(fake_data, static_cast<size_t>(t.storage_bytes), device), static_cast<DType>(t.dtype),
                t.sizes, t.strides, t.storage_offset);
}

}  // namespace kiln::fuzz
