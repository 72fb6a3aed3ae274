// Helpers for the CUDA device tests: host<->device tensors through Kiln's shim
// ABI (with test-owned cudaMemcpy, independent of Kiln's copy path), float16 /
// bfloat16 conversions, CUDA shim lookup through the global symbol scope, and
// tolerance checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "shims/common/shim_abi.h"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln_test {

/// The CUDA shim `name` from the global scope (where a model library finds
/// it); fails the test if absent.
void* global_symbol(const char* name);
template <typename Fn>
Fn shim(const char* name) {
  return reinterpret_cast<Fn>(global_symbol(name));
}

uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t b);
/// Rounds through `dtype` (identity for float32).
float round_to(float v, kiln::DType dtype);

/// A CUDA tensor with the given geometry (strides null = contiguous) holding
/// `values` (row-major over sizes) converted to dtype. New handle.
AtenTensorHandle device_tensor(const std::vector<float>& values, const std::vector<int64_t>& sizes,
                               kiln::DType dtype, const std::vector<int64_t>& strides = {});
/// Uninitialised CUDA tensor (filled with NaN bytes so unwritten outputs show).
AtenTensorHandle device_empty(const std::vector<int64_t>& sizes, kiln::DType dtype,
                              const std::vector<int64_t>& strides = {});
/// All elements (row-major over sizes, honouring strides) as float; syncs the device.
std::vector<float> host_values(AtenTensorHandle t);
std::vector<int64_t> sizes_of(AtenTensorHandle t);
std::vector<int64_t> strides_of(AtenTensorHandle t);
/// Compares attention logsumexps: rows the reference gives -inf (fully
/// masked) must be -inf, the others within 1e-4. Returns the -inf row count.
int expect_lse_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what);
/// The tensor's data pointer (a failed query fails the test).
void* data_of(AtenTensorHandle h);
/// Copies 4 strides into a kernel parameter array.
void copy_strides(const std::vector<int64_t>& from, int64_t (&to)[4]);

/// Deterministic values in [-1, 1].
std::vector<float> random_values(size_t n, uint32_t seed);

/// Expects |got - want| <= atol + rtol * |want| elementwise, with atol = rtol *
/// max|want| (a norm-relative floor so near-zero outputs do not dominate).
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol, const std::string& what);

/// Owns a handle for the test's scope.
struct Handle {
  AtenTensorHandle h = nullptr;
  Handle() = default;
  explicit Handle(AtenTensorHandle x) : h(x) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (h) aoti_torch_delete_tensor_object(h);
  }
  operator AtenTensorHandle() const { return h; }
};

/// Tolerance for a dtype: 1e-5 float32 (no TF32), 2e-2 half types.
double tolerance(kiln::DType dtype);

}  // namespace kiln_test
