// aoti_torch_cuda__scaled_grouped_mm: the float8 grouped matrix product of
// float8 Mixture-of-Experts layers (torchao's float8 MoE training and
// inference), as ATen's CUDA op computes it with row-wise scaling: float8
// e4m3fn operands, float32 scales per row of mat_a and per column of mat_b,
// int32 offs the groups' cumulative ends, a bfloat16 result. The four forms
// (2-D x 3-D, 3-D x 2-D, 2-D x 2-D, 3-D x 3-D) and how each indexes its
// scales are in kernels/scaled_grouped_mm_kernel.h.
//
// Argument checks follow ATen's (dims, contraction, offs present exactly when
// an operand is 2-D, offs 1-D int32, float32 scales of the shapes and
// contiguity ATen requires, no bias, no scale_result, out_dtype bfloat16),
// with one difference: ATen's CUTLASS kernel also needs mat_a row-major,
// mat_b column-major, 16-byte aligned and the extents multiples of 16, which
// the tiled kernel does not, so any strides and sizes are taken. The result
// has ATen's layout: contiguous with the last dimension's stride rounded up to
// 16 bytes. offs stays on the device (no synchronisation, graph-capturable);
// unlike ATen, groups may be empty (zero rows, columns or K) and offs out of
// order is clamped on the device rather than asserted. Rows (columns) past the
// last group, which ATen leaves unwritten, are zero. use_fast_accum changes
// nothing: the sum is always float32.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/kernels/scaled_grouped_mm_kernel.h"
#include "shims/common/shim_util.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"
#include "shims/cuda/tensor_ref.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

constexpr const char* kOp = "_scaled_grouped_mm: ";

Error bad(const std::string& what) { return aoti::invalid(kOp + what); }

// A row-wise scale for operand `mat` (arg 0: mat_a, scaled along dim 0 of a
// 2-D mat_a / dim 1 of a 3-D one; arg 1: mat_b, along its last dim): a 2-D
// operand has a contiguous 1-D scale of mat.size(dim) * multiplier elements, a
// 3-D one a 2-D [G, mat.size(1 + dim)] scale with unit last stride.
Error check_scale(const TensorRef& mat, const TensorRef& scale, int dim, const char* name,
                  int64_t multiplier) {
  if (scale.dtype != DType::Float32)
    return bad(std::string(name) + " " + scale.describe() +
               " must be float32 (row-wise scaling; block-scaled float8 is not supported)");
  if (mat.dim() == 2) {
    const int64_t want = mat.sizes[dim] * multiplier;
    if (scale.dim() != 1 || scale.sizes[0] != want)
      return bad(std::string(name) + " " + scale.describe() + " must be a 1-D tensor of " +
                 std::to_string(want) + " elements");
    if (want > 1 && scale.strides[0] != 1)
      return bad(std::string(name) + " " + scale.describe() + " must be contiguous");
    return Error::Ok;
  }
  const int64_t want = mat.sizes[1 + dim];
  if (scale.dim() != 2 || scale.sizes[0] != mat.sizes[0] || scale.sizes[1] != want)
    return bad(std::string(name) + " " + scale.describe() + " must be a 2-D tensor [" +
               std::to_string(mat.sizes[0]) + ", " + std::to_string(want) + "]");
  if (scale.strides[1] != 1)
    return bad(std::string(name) + " " + scale.describe() + " must be contiguous in the last dimension");
  return Error::Ok;
}

struct Problem {
  ScaledGroupedMmParams p;
  std::vector<int64_t> sizes, strides;  // the result's
};

Result<Problem> plan(const TensorRef& a, const TensorRef& b, const TensorRef& sa, const TensorRef& sb,
                     const std::optional<TensorRef>& offs) {
  if (a.dim() != 2 && a.dim() != 3) return bad("mat_a " + a.describe() + " has to be 2-D or 3-D");
  if (b.dim() != 2 && b.dim() != 3) return bad("mat_b " + b.describe() + " has to be 2-D or 3-D");
  if (a.dtype != DType::Float8_e4m3fn || b.dtype != DType::Float8_e4m3fn)
    return bad("expected float8_e4m3fn operands, got mat_a " + a.describe() + " and mat_b " + b.describe());
  const bool a2 = a.dim() == 2, b2 = b.dim() == 2;
  // ATen checks this only unless both are 2-D; there offs splits both
  // operands' K, so they must have the same K too.
  if (a.sizes.back() != b.sizes[b.dim() - 2])
    return bad("contraction dimension of mat_a " + a.describe() + " and mat_b " + b.describe() +
               " must match");
  if (offs.has_value() != (a2 || b2))
    return bad(a2 || b2 ? "offs is required when mat_a or mat_b is 2-D"
                        : "offs must not be given when mat_a and mat_b are both 3-D");
  int64_t groups = 0;
  if (offs) {
    if (offs->dim() != 1) return bad("offs " + offs->describe() + " has to be 1-D");
    if (offs->dtype != DType::Int32) return bad("offs " + offs->describe() + " has to be int32");
    groups = offs->sizes[0];
  }
  const int64_t multiplier = a2 && b2 ? groups : 1;
  KILN_RETURN_IF_ERROR(check_scale(a, sa, 0, "scale_a", multiplier));
  KILN_RETURN_IF_ERROR(check_scale(b, sb, 1, "scale_b", multiplier));

  Problem pr;
  ScaledGroupedMmParams& p = pr.p;
  p.a = static_cast<const uint8_t*>(a.data);
  p.b = static_cast<const uint8_t*>(b.data);
  p.scale_a = static_cast<const float*>(sa.data);
  p.scale_b = static_cast<const float*>(sb.data);
  p.a_rs = a.strides[a.dim() - 2];
  p.a_ks = a.strides[a.dim() - 1];
  p.b_ks = b.strides[b.dim() - 2];
  p.b_ns = b.strides[b.dim() - 1];
  p.K = a.sizes.back();
  p.N = b.sizes.back();
  if (offs) {
    p.offs = static_cast<const int32_t*>(offs->data);
    p.offs_stride = offs->strides[0];
  }
  if (a2 && b2) {
    p.split = GroupSplit::K;
    p.G = groups;
    p.M = a.sizes[0];
    p.sa_gs = p.M;
    p.sb_gs = p.N;
  } else if (a2) {
    if (groups != b.sizes[0])
      return bad("offs " + offs->describe() + " and mat_b " + b.describe() +
                 " have different numbers of groups");
    p.split = GroupSplit::Rows;
    p.G = groups;
    p.M = a.sizes[0];
    p.b_gs = b.strides[0];
    p.sb_gs = sb.strides[0];
  } else if (b2) {
    if (groups != a.sizes[0])
      return bad("offs " + offs->describe() + " and mat_a " + a.describe() +
                 " have different numbers of groups");
    p.split = GroupSplit::Columns;
    p.G = groups;
    p.M = a.sizes[1];
    p.a_gs = a.strides[0];
    p.sa_gs = sa.strides[0];
  } else {
    if (a.sizes[0] != b.sizes[0])
      return bad("batched dimension of mat_a " + a.describe() + " and mat_b " + b.describe() +
                 " has to match");
    p.split = GroupSplit::None;
    p.G = a.sizes[0];
    p.M = a.sizes[1];
    p.a_gs = a.strides[0];
    p.b_gs = b.strides[0];
    p.sa_gs = sa.strides[0];
    p.sb_gs = sb.strides[0];
  }
  // ATen's result layout: rows padded to 16 bytes (8 bfloat16 elements).
  const int64_t padded = (p.N + 7) / 8 * 8;
  if (a2 != b2) {
    pr.sizes = {p.M, p.N};
    pr.strides = {padded, 1};
  } else {
    pr.sizes = {p.G, p.M, p.N};
    pr.strides = {p.M * padded, padded, 1};
  }
  p.o_rs = padded;
  p.o_bs = a2 != b2 ? 0 : p.M * padded;
  return pr;
}

Error same_device(const TensorRef& t, const TensorRef& ref, const char* name) {
  if (t.device_index != ref.device_index)
    return bad(std::string(name) + " is on CUDA device " + std::to_string(t.device_index) + " but mat_a on " +
               std::to_string(ref.device_index));
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_grouped_mm(
    AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a, AtenTensorHandle scale_b,
    AtenTensorHandle* offs, AtenTensorHandle* bias, AtenTensorHandle* scale_result, int32_t* out_dtype,
    int32_t use_fast_accum, AtenTensorHandle* ret0) {
  (void)use_fast_accum;
  return aoti::guarded("aoti_torch_cuda__scaled_grouped_mm", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_tensor(mat2, "mat2"));
    KILN_ASSIGN_OR_RETURN(TensorRef sa, read_tensor(scale_a, "scale_a"));
    KILN_ASSIGN_OR_RETURN(TensorRef sb, read_tensor(scale_b, "scale_b"));
    std::optional<TensorRef> o;
    if (offs != nullptr && *offs != nullptr) {
      KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(*offs, "offs"));
      o = std::move(t);
    }
    if (bias != nullptr && *bias != nullptr) return bad("bias is not supported (as in ATen)");
    if (scale_result != nullptr && *scale_result != nullptr)
      return bad("scale_result is not supported (as in ATen)");
    KILN_ASSIGN_OR_RETURN(std::optional<DType> requested, optional_dtype_arg(out_dtype, "out_dtype"));
    if (requested && *requested != DType::BFloat16)
      return bad(std::string("out_dtype ") + dtype_name(*requested) +
                 " is not supported: the result is bfloat16");
    KILN_RETURN_IF_ERROR(same_device(b, a, "mat2"));
    KILN_RETURN_IF_ERROR(same_device(sa, a, "scale_a"));
    KILN_RETURN_IF_ERROR(same_device(sb, a, "scale_b"));
    if (o) KILN_RETURN_IF_ERROR(same_device(*o, a, "offs"));
    KILN_ASSIGN_OR_RETURN(Problem pr, plan(a, b, sa, sb, o));
    if (const char* why = scaled_grouped_mm_unsupported(pr.p))
      return set_error(Error::NotSupported,
                       std::string(kOp) + "mat_a " + a.describe() + ", mat_b " + b.describe() + ": " + why);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out,
                          new_tensor(pr.sizes, pr.strides, DType::BFloat16,
                                     static_cast<int32_t>(DeviceType::CUDA), a.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(out.get(), "result"));
    pr.p.out = r.data;
    ScopedDevice scoped(a.device_index);
    KILN_RETURN_IF_ERROR(scoped.status());
    KILN_RETURN_IF_ERROR(launch_scaled_grouped_mm(pr.p, current_stream(a.device_index)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
