// aoti_torch_cuda__int_mm_out, aoti_torch_cuda__weight_int8pack_mm and
// aoti_torch_cuda_int8_linear: the
// integer products of int8-quantized models (argument checks shared with the
// CPU ops: shims/common/int_mm_args.h).
//
// _int_mm_out: out = self @ mat2, int8 products summed in int32 (wrapping).
// cuBLASLt's int8 kernels (compute type 32I) take the layout a linear layer
// gives, self row-major and mat2 column-major (mat2 = weight.t()) with out
// row-major, when its heuristic finds an algorithm for the sizes and
// alignments; every other case (other layouts, k == 0, sizes cuBLASLt's
// int8 kernels refuse) runs a tiled kernel (kernels/int8_mm_kernel.h). ATen's
// CUDA kernel refuses self with 16 rows or fewer, k or n not a multiple of 8
// and a non-contiguous out; these are computed here instead of refused.
//
// _weight_int8pack_mm: up to kInt8DirectRows rows of self, the quantized
// GEMV kernel (kernels/quantized_gemv_kernel.h; a strided kernel for layouts
// it does not take) streams each int8 weight row once per group of four
// activation rows (the decode case reads the weight once), float32 dot
// products scaled per column and rounded once to self's dtype. More rows
// (prefill) dequantize the weight times its scales to self's dtype in column
// blocks multiplied on the tensor cores (dequantized_product.h). The result
// is a new contiguous [m, n] tensor of self's dtype. Kiln's op
// kiln::int8_linear (aoti_torch_cuda_int8_linear) is the same product over
// the rows of an x of any rank.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "devices/cuda/kernels/int8_mm_kernel.h"
#include "devices/cuda/kernels/quantized_gemv_kernel.h"
#include "devices/cuda/libraries/cublaslt_api.h"
#include "shims/common/int_mm_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/dequantized_product.h"
#include "shims/cuda/matrix_rows.h"
#include "shims/cuda/lt_algo_cache.h"
#include "shims/cuda/lt_matmul.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// Rows of self up to which the direct kernel runs: it reads the weight once
// per four rows, so past a few groups the tensor cores win.
constexpr int64_t kInt8DirectRows = 16;

Error same_device(const TensorRef& t, const TensorRef& ref, const char* name, const char* ref_name) {
  if (t.device_index != ref.device_index)
    return aoti::invalid(std::string("argument '") + name + "' is on CUDA device " + std::to_string(t.device_index) +
                         " but " + ref_name + " on " + std::to_string(ref.device_index));
  return Error::Ok;
}

// The largest power of two (up to 256) dividing the address: what the
// heuristic may assume of a pointer's alignment.
uint32_t alignment_of(const void* p) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// The heuristic's answer for one int8 problem, including "no algorithm", so
// a layout cuBLASLt refuses costs one heuristic call, not one per product.
struct Int8Choice {
  bool supported = false;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

LtAlgoCache<Int8Choice>& int8_cache() {
  static LtAlgoCache<Int8Choice> cache(256);
  return cache;
}

// out (m x n, row-major, leading dimension ldo) = a (m x k, row-major, lda)
// @ b (k x n, column-major, ldb) through cuBLASLt, seen column-major as
// out^T (n x m) = op_T(b stored k x n) @ a^T (stored k x m): the "TN" form
// its int8 kernels require. Returns *done = false, having queued nothing,
// when cuBLASLt has no algorithm for the problem.
Error int_mm_cublaslt(const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb, int32_t* out, int64_t ldo,
                      int64_t m, int64_t n, int64_t k, int device, cudaStream_t stream, bool* done) {
  *done = false;
  KILN_ASSIGN_OR_RETURN(const CublasLtApi* api, cublaslt());
  KILN_ASSIGN_OR_RETURN(cublasLtHandle_t handle, cublaslt_handle(*api, device));
  LtResources r;
  r.api = api;
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->desc_create(&r.desc, CUBLAS_COMPUTE_32I, CUDA_R_32I), "cublasLtMatmulDescCreate"));
  const int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->desc_set(r.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "TRANSA"));
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->desc_set(r.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "TRANSB"));
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  KILN_RETURN_IF_ERROR(cublas_status(*api, api->layout_create(&r.a, CUDA_R_8I, u(k), u(n), ldb),
                                     "cublasLtMatrixLayoutCreate"));
  KILN_RETURN_IF_ERROR(cublas_status(*api, api->layout_create(&r.b, CUDA_R_8I, u(k), u(m), lda),
                                     "cublasLtMatrixLayoutCreate"));
  KILN_RETURN_IF_ERROR(cublas_status(*api, api->layout_create(&r.d, CUDA_R_32I, u(n), u(m), ldo),
                                     "cublasLtMatrixLayoutCreate"));
  const uint32_t align_a = alignment_of(b), align_b = alignment_of(a), align_d = alignment_of(out);
  LtProblemKey key{};
  const int64_t fields[] = {device, m, n, k, lda, ldb, ldo, align_a, align_b, align_d};
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); ++i) key[i] = fields[i];
  Int8Choice choice;
  if (auto cached = int8_cache().find(key)) {
    choice = *cached;
  } else {
    KILN_ASSIGN_OR_RETURN(LtHeuristic h, lt_ask_heuristic(handle, r, align_a, align_b, align_d));
    // Sizes or leading dimensions the int8 kernels do not take come back as
    // NOT_SUPPORTED or as no algorithm: the tiled kernel computes those.
    if (h.status == CUBLAS_STATUS_NOT_SUPPORTED) h.returned = 0;
    else KILN_RETURN_IF_ERROR(cublas_status(*api, h.status, "cublasLtMatmulAlgoGetHeuristic"));
    if (h.returned > 0) {
      choice.supported = true;
      choice.algo = h.result.algo;
      choice.workspace = h.result.workspaceSize;
    }
    int8_cache().insert(key, choice);
  }
  if (!choice.supported) return Error::Ok;
  DeviceBuffer workspace;
  if (choice.workspace > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, DeviceBuffer::allocate(choice.workspace, device, stream));
  }
  const int32_t alpha = 1, beta = 0;
  const cublasStatus_t status = api->matmul(handle, r.desc, &alpha, b, r.a, a, r.b, &beta, out, r.d, out, r.d,
                                            &choice.algo, workspace.get(), choice.workspace, stream);
  // A refusal at launch queues nothing either: the tiled kernel takes over.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return Error::Ok;
  KILN_RETURN_IF_ERROR(cublas_status(*api, status, "cublasLtMatmul"));
  *done = true;
  return Error::Ok;
}

// result r (m x n, contiguous, x's dtype) = x (m x k, any strides) @ W^T,
// W[j, i] = w[j, i] * s[j, i / group] (group 0: s is [n], a scale per
// column that multiplies the finished sum), on `stream`: _weight_int8pack_mm
// and kiln::int8_linear.
Error int8_rows_product(const TensorRef& x, const TensorRef& w, const TensorRef& s, int64_t group,
                        const TensorRef& r, cudaStream_t stream) {
  const int64_t m = x.sizes[0], k = x.sizes[1], n = w.sizes[0];
  if (m == 0 || n == 0) return Error::Ok;
  QuantizedGemvParams p;
  p.codes = WeightCodes::Int8;
  p.x_rs = x.strides[0];
  p.dtype = x.dtype;
  p.w = w.data;
  p.w_rs = w.strides[0];
  p.scale = s.data;
  p.scale_dtype = s.dtype;
  p.s_n = s.strides[0];
  p.s_g = group > 0 ? s.strides[1] : 0;
  p.group_size = group;
  p.N = n;
  p.K = k;
  if (m > kInt8DirectRows && k > 0) {
    auto block = [&](int64_t j0, int64_t cols, void* out, cudaStream_t st) {
      return launch_dequantize_int8_rows(p, w.strides[1], j0, cols, out, st);
    };
    return dequantized_product(x, n, 1, block, r, stream);
  }
  // The quantized GEMV kernel where its layout conditions hold (contiguous,
  // aligned rows); otherwise the strided kernel (a scale per column) or,
  // grouped, the weight dequantized for the product.
  const StridedMatrix<const int8_t> wm{static_cast<const int8_t*>(w.data), w.strides[0], w.strides[1]};
  const bool contiguous_k = (x.strides[1] == 1 || k == 1) && (w.strides[1] == 1 || k == 1);
  const int64_t elem = static_cast<int64_t>(x.element_bytes());
  for (int64_t r0 = 0; r0 < m; r0 += kQuantizedGemvMaxRows) {
    const int64_t rows = m - r0 < kQuantizedGemvMaxRows ? m - r0 : kQuantizedGemvMaxRows;
    p.M = rows;
    p.x = static_cast<const char*>(x.data) + r0 * x.strides[0] * elem;
    p.out = static_cast<char*>(r.data) + r0 * n * elem;
    if (contiguous_k && quantized_gemv_unsupported(p) == nullptr) {
      KILN_RETURN_IF_ERROR(launch_quantized_gemv(p, stream));
    } else if (group == 0) {
      KILN_RETURN_IF_ERROR(launch_weight_int8pack_mm(p.x, x.strides[0], x.strides[1], wm, s.data, s.strides[0],
                                                     x.dtype, p.out, rows, n, k, stream));
    } else {
      TensorRef xr = x, rr = r;
      xr.data = const_cast<void*>(p.x);
      xr.sizes = {rows, k};
      rr.data = p.out;
      rr.sizes = {rows, n};
      auto block = [&](int64_t j0, int64_t cols, void* out, cudaStream_t st) {
        return launch_dequantize_int8_rows(p, w.strides[1], j0, cols, out, st);
      };
      KILN_RETURN_IF_ERROR(dequantized_product(xr, n, 1, block, rr, stream));
    }
  }
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__int_mm_out(AtenTensorHandle out_h, AtenTensorHandle self_h,
                                                            AtenTensorHandle mat2_h) {
  return aoti::guarded("aoti_torch_cuda__int_mm_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef out, read_tensor(out_h, "out"));
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_tensor(mat2_h, "mat2"));
    KILN_RETURN_IF_ERROR(aoti::int_mm_args(a.dtype, a.sizes, b.dtype, b.sizes, out.dtype, out.sizes));
    KILN_RETURN_IF_ERROR(same_device(a, out, "self", "out"));
    KILN_RETURN_IF_ERROR(same_device(b, out, "mat2", "out"));
    const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
    if (m == 0 || n == 0) return Error::Ok;
    cudaStream_t stream = current_stream(out.device_index);
    const auto* pa = static_cast<const int8_t*>(a.data);
    const auto* pb = static_cast<const int8_t*>(b.data);
    auto* po = static_cast<int32_t*>(out.data);
    // The unit stride of a dimension of size 1 does not matter; its leading
    // dimension is then taken as dense.
    const bool a_rows = a.strides[1] == 1 || k == 1, b_cols = b.strides[0] == 1 || k == 1,
               out_rows = out.strides[1] == 1 || n == 1;
    const int64_t lda = m == 1 ? k : a.strides[0], ldb = n == 1 ? k : b.strides[1],
                  ldo = m == 1 ? n : out.strides[0];
    if (k > 0 && a_rows && b_cols && out_rows && lda >= k && ldb >= k && ldo >= n) {
      bool done = false;
      KILN_RETURN_IF_ERROR(int_mm_cublaslt(pa, lda, pb, ldb, po, ldo, m, n, k, out.device_index, stream, &done));
      if (done) return Error::Ok;
    }
    return launch_int_mm_tiled({pa, a.strides[0], a.strides[1]}, {pb, b.strides[0], b.strides[1]},
                               {po, out.strides[0], out.strides[1]}, m, n, k, stream);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__weight_int8pack_mm(AtenTensorHandle self_h, AtenTensorHandle mat2_h,
                                                                    AtenTensorHandle scales_h,
                                                                    AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__weight_int8pack_mm", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef w, read_tensor(mat2_h, "mat2"));
    KILN_ASSIGN_OR_RETURN(TensorRef s, read_tensor(scales_h, "scales"));
    KILN_RETURN_IF_ERROR(aoti::weight_int8pack_args(x.dtype, x.sizes, w.dtype, w.sizes, s.dtype, s.sizes));
    KILN_RETURN_IF_ERROR(same_device(w, x, "mat2", "self"));
    KILN_RETURN_IF_ERROR(same_device(s, x, "scales", "self"));
    KILN_ASSIGN_OR_RETURN(OwnedHandle result,
                          new_contiguous(std::vector<int64_t>{x.sizes[0], w.sizes[0]}, x.dtype, x.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(result.get(), "ret0"));
    ScopedDevice scoped(x.device_index);  // the kernels launch on self's device whichever is current
    KILN_RETURN_IF_ERROR(scoped.status());
    KILN_RETURN_IF_ERROR(int8_rows_product(x, w, s, 0, r, current_stream(x.device_index)));
    return return_handle(result, ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_int8_linear(AtenTensorHandle x_h, AtenTensorHandle weight_h,
                                                            AtenTensorHandle scales_h, int64_t group_size,
                                                            AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_int8_linear", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(x_h, "x"));
    KILN_ASSIGN_OR_RETURN(TensorRef w, read_tensor(weight_h, "weight"));
    KILN_ASSIGN_OR_RETURN(TensorRef s, read_tensor(scales_h, "scales"));
    KILN_ASSIGN_OR_RETURN(aoti::Int8LinearPlan plan,
                          aoti::int8_linear_plan(x.dtype, x.sizes, w.dtype, w.sizes, s.dtype, s.sizes, group_size));
    KILN_RETURN_IF_ERROR(same_device(w, x, "weight", "x"));
    KILN_RETURN_IF_ERROR(same_device(s, x, "scales", "x"));
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_contiguous(plan.out_sizes, x.dtype, x.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(result.get(), "ret0"));
    ScopedDevice scoped(x.device_index);
    KILN_RETURN_IF_ERROR(scoped.status());
    cudaStream_t stream = current_stream(x.device_index);
    DeviceBuffer x_copy;
    KILN_ASSIGN_OR_RETURN(TensorRef x2, matrix_rows(x, x_copy, stream));
    TensorRef r2 = r;
    r2.sizes = {plan.rows, plan.n};
    r2.strides = {plan.n, 1};
    // One group a row is the per-column form (the kernels' group 0).
    TensorRef s2 = s;
    if (plan.groups == 1) {
      s2.sizes = {plan.n};
      s2.strides = {s.strides[0]};
    }
    KILN_RETURN_IF_ERROR(int8_rows_product(x2, w, s2, plan.groups == 1 ? 0 : group_size, r2, stream));
    return return_handle(result, ret0, "ret0");
  });
}

}  // extern "C"
