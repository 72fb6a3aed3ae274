// aoti_torch_cpu__scaled_mm, aoti_torch_cpu__scaled_mm_out: the float8 matrix
// product as ATen's CPU kernel computes it on machines without AMX (its
// emulated path): both operands (float8 e4m3fn or e5m2, 2-D) widened to
// float32 and multiplied by their per-tensor scales (scale_a, scale_b: one
// element each; ATen's CPU kernel has no row-wise scaling), multiplied in
// float32, bias added (any real non-float8 dtype broadcasting to [M, N]), and
// the float32 result converted to the output dtype (default: self's dtype).
// scale_result (one float32 element) divides the result only when out_dtype
// is given as a float8 dtype, as ATen. use_fast_accum has no effect on the CPU.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/half_float.h"
#include "devices/cpu/element_buffer.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/strided_index.h"
#include "shims/common/scaled_mm_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

using aoti::is_float8;

float float8_value(uint8_t bits, DType d) {
  return d == DType::Float8_e4m3fn ? float8_e4m3fn_to_float(bits) : float8_e5m2_to_float(bits);
}

// A tensor's elements in row-major order as float32 (float8 widened exactly,
// other dtypes through element_buffer's double rounded to float).
std::vector<float> read_floats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (is_float8(t.dtype())) {
    const auto* base = static_cast<const uint8_t*>(t.data_ptr());
    for_each_offset(t.sizes(), t.strides(),
                    [&](int64_t k, int64_t off) { out[static_cast<size_t>(k)] = float8_value(base[off], t.dtype()); });
  } else {
    const std::vector<double> v = read_elements<double>(t);
    for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  }
  return out;
}

Result<float> scale_arg(const Tensor& t, const char* name) {
  if (t.numel() != 1)
    return aoti::invalid(std::string("argument '") + name + "' has " + std::to_string(t.numel()) +
                         " elements; the CPU _scaled_mm supports per-tensor scaling only (one element)");
  if (!is_float8(t.dtype()) && element_kind(t.dtype()) == ElementKind::Unsupported)
    return aoti::invalid(std::string("argument '") + name + "' has unsupported dtype " + dtype_name(t.dtype()));
  return read_floats(t)[0];
}

// Writes row-major float values into `out` (any strides) converted to its dtype.
void write_floats(const std::vector<float>& values, const Tensor& out) {
  const DType d = out.dtype();
  if (is_float8(d)) {
    auto* base = static_cast<uint8_t*>(out.data_ptr());
    for_each_offset(out.sizes(), out.strides(), [&](int64_t k, int64_t off) {
      const float v = values[static_cast<size_t>(k)];
      base[off] = d == DType::Float8_e4m3fn ? float_to_float8_e4m3fn(v) : float_to_float8_e5m2(v);
    });
    return;
  }
  std::vector<double> wide(values.begin(), values.end());
  write_elements(wide.data(), out);
}

struct ScaledMmArgs {
  Tensor* a = nullptr;
  Tensor* b = nullptr;
  float scale_a = 1.0f;
  float scale_b = 1.0f;
  Tensor* bias = nullptr;
  float output_scale = 1.0f;
};

Result<ScaledMmArgs> check_args(AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,
                                AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result,
                                std::optional<DType> out_dtype) {
  ScaledMmArgs r;
  KILN_ASSIGN_OR_RETURN(r.a, cpu_tensor_arg(self, "self"));
  KILN_ASSIGN_OR_RETURN(r.b, cpu_tensor_arg(mat2, "mat2"));
  KILN_ASSIGN_OR_RETURN(Tensor * sa, cpu_tensor_arg(scale_a, "scale_a"));
  KILN_ASSIGN_OR_RETURN(Tensor * sb, cpu_tensor_arg(scale_b, "scale_b"));
  KILN_ASSIGN_OR_RETURN(r.bias, optional_cpu_tensor_arg(bias, "bias"));
  KILN_ASSIGN_OR_RETURN(Tensor * sr, optional_cpu_tensor_arg(scale_result, "scale_result"));
  KILN_RETURN_IF_ERROR(aoti::scaled_mm_operands(r.a->dtype(), r.a->sizes(), r.b->dtype(), r.b->sizes()));
  KILN_ASSIGN_OR_RETURN(r.scale_a, scale_arg(*sa, "scale_a"));
  KILN_ASSIGN_OR_RETURN(r.scale_b, scale_arg(*sb, "scale_b"));
  if (sr != nullptr) {
    KILN_RETURN_IF_ERROR(aoti::scaled_mm_scale_result(sr->dtype(), sr->sizes(), sr->numel()));
    if (out_dtype && is_float8(*out_dtype)) r.output_scale = read_floats(*sr)[0];
  }
  const int64_t n = r.b->size(1);
  if (r.bias != nullptr) {
    const Tensor& bt = *r.bias;
    KILN_RETURN_IF_ERROR(aoti::scaled_mm_bias(bt.dtype(), bt.numel(), n));
    const int64_t m = r.a->size(0);
    bool fits = bt.dim() <= 2;
    if (fits && bt.dim() >= 1) fits = bt.size(bt.dim() - 1) == n || bt.size(bt.dim() - 1) == 1;
    if (fits && bt.dim() == 2) fits = bt.size(0) == m || bt.size(0) == 1;
    if (!fits)
      return aoti::invalid("argument 'bias' of shape " + aoti::shape_string(bt.sizes()) +
                           " does not broadcast to the result's shape [" + std::to_string(m) + ", " +
                           std::to_string(n) + "]");
  }
  return r;
}

Error scaled_mm_into(const ScaledMmArgs& args, const Tensor& out) {
  const int64_t m = args.a->size(0), k = args.a->size(1), n = args.b->size(1);
  std::vector<float> a = read_floats(*args.a);
  std::vector<float> b = read_floats(*args.b);
  for (float& v : a) v *= args.scale_a;
  for (float& v : b) v *= args.scale_b;
  std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
  if (m > 0 && n > 0 && k > 0)
    KILN_RETURN_IF_ERROR(gemm<float>(MatrixView<const float>{a.data(), m, k, k, 1},
                                     MatrixView<const float>{b.data(), k, n, n, 1},
                                     MatrixView<float>{c.data(), m, n, n, 1}, 1.0f, 0.0f));
  if (args.bias != nullptr && m > 0 && n > 0) {
    const Tensor& bt = *args.bias;
    const std::vector<double> bias = read_elements<double>(bt);
    // The bias's sizes right-aligned to [m, n] (dimensions of 1 repeat).
    const int64_t rows = bt.dim() == 2 ? bt.size(0) : 1;
    const int64_t cols = bt.dim() >= 1 ? bt.size(bt.dim() - 1) : 1;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double add = bias[static_cast<size_t>((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j))];
        float& v = c[static_cast<size_t>(i * n + j)];
        v = static_cast<float>(static_cast<double>(v) + add);
      }
  }
  if (is_float8(out.dtype())) {
    const float inverse = 1.0f / args.output_scale;
    for (float& v : c) v *= inverse;
  }
  write_floats(c, out);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                          AtenTensorHandle scale_a, AtenTensorHandle scale_b,
                                                          AtenTensorHandle* bias, AtenTensorHandle* scale_result,
                                                          int32_t* out_dtype, int32_t use_fast_accum,
                                                          AtenTensorHandle* ret0) {
  (void)use_fast_accum;
  return aoti::guarded("aoti_torch_cpu__scaled_mm", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(std::optional<DType> requested, optional_dtype_arg(out_dtype, "out_dtype"));
    KILN_ASSIGN_OR_RETURN(ScaledMmArgs args, check_args(self, mat2, scale_a, scale_b, bias, scale_result, requested));
    const DType dt = requested.value_or(args.a->dtype());
    KILN_RETURN_IF_ERROR(aoti::scaled_mm_result_dtype(dt, "argument 'out_dtype' is"));
    const int64_t sizes[2] = {args.a->size(0), args.b->size(1)};
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(sizes, dt));
    KILN_RETURN_IF_ERROR(scaled_mm_into(args, out));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                              AtenTensorHandle mat2, AtenTensorHandle scale_a,
                                                              AtenTensorHandle scale_b, AtenTensorHandle* bias,
                                                              AtenTensorHandle* scale_result, int32_t* out_dtype,
                                                              int32_t use_fast_accum) {
  (void)use_fast_accum;
  return aoti::guarded("aoti_torch_cpu__scaled_mm_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * result, cpu_tensor_arg(out, "out"));
    KILN_ASSIGN_OR_RETURN(std::optional<DType> requested, optional_dtype_arg(out_dtype, "out_dtype"));
    KILN_ASSIGN_OR_RETURN(ScaledMmArgs args, check_args(self, mat2, scale_a, scale_b, bias, scale_result, requested));
    KILN_RETURN_IF_ERROR(aoti::scaled_mm_out_dtype(requested, result->dtype()));
    KILN_RETURN_IF_ERROR(aoti::scaled_mm_result_dtype(result->dtype(), "argument 'out' has dtype"));
    const int64_t sizes[2] = {args.a->size(0), args.b->size(1)};
    KILN_RETURN_IF_ERROR(expect_shape(*result, sizes, "out"));
    return scaled_mm_into(args, *result);
  });
}

}  // extern "C"
