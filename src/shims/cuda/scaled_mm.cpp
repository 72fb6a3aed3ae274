// aoti_torch_cuda__scaled_mm and aoti_torch_cuda__scaled_mm_out: the float8
// matrix product (self m x k, mat2 k x n, float8 e4m3fn or e5m2) as ATen's
// CUDA op computes it, with the checks every device shares
// (shims/common/scaled_mm_args.h):
//
//   out[i, j] = convert((sum_k self[i, k] * mat2[k, j]) * scale_a(i) * scale_b(j)
//                       + bias[j]) * scale_result)
//
// Scaling is per-tensor (scale_a and scale_b float32 with one element each)
// or row-wise (scale_a float32 [m, 1], scale_b float32 [1, n], contiguous),
// ATen's CUDA pairs for float8; anything else is refused. The bias is n
// elements added along each row (read in its own dtype). scale_result (one
// float32) multiplies a float8_e5m2 result, as cuBLASLt's D scale does; it
// is ignored for every other result dtype, float8_e4m3fn included, whose
// result ATen's CUDA op in torch 2.11 leaves unscaled (measured against it:
// tests/gpu/test_scaled_mm.py). With k == 0 the result
// is zeros, with no bias, as ATen writes. The result's dtype defaults to
// self's.
//
// cuBLASLt's float8 kernels (compute 32F, A/B scale pointers, outer-vector
// scale modes for row-wise scaling, bias epilogue, fast accumulation) run
// the layout a linear layer gives: self row-major, mat2 column-major, the
// result row-major, with k and n multiples of 16, the result dtype float32,
// float16, bfloat16 or float8 and a bias ATen's CUDA op accepts; seen
// column-major that is out^T (n x m) = op_T(mat2 stored k x n) @ self^T
// (stored k x m), the "TN" form float8 requires. Everything ATen refuses
// only because cuBLASLt does (other layouts and sizes, e5m2 x e5m2, other
// result and bias dtypes) or that cuBLASLt's heuristic has no algorithm for
// runs a tiled kernel with the same float32 arithmetic instead of failing
// (kernels/scaled_mm_kernel.h).
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "devices/cuda/kernels/scaled_mm_kernel.h"
#include "devices/cuda/libraries/cublaslt_api.h"
#include "shims/common/scaled_mm_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/lt_algo_cache.h"
#include "shims/cuda/lt_matmul.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

struct Operands {
  TensorRef a, b, scale_a, scale_b, bias, scale_result;
  bool has_bias = false, has_scale_result = false;
  bool rowwise = false;
  int64_t m = 0, n = 0, k = 0;
};

Error same_device(const TensorRef& t, const TensorRef& ref, const char* name) {
  if (t.device_index != ref.device_index)
    return aoti::invalid(std::string("argument '") + name + "' is on CUDA device " + std::to_string(t.device_index) +
                         " but self on " + std::to_string(ref.device_index));
  return Error::Ok;
}

// ATen's CUDA scaling pairs for float8 operands, tried in its order:
// per-tensor, then row-wise (a dimension of size 1 may have any stride).
Error check_scales(Operands& o) {
  const TensorRef &sa = o.scale_a, &sb = o.scale_b;
  const bool f32 = sa.dtype == DType::Float32 && sb.dtype == DType::Float32;
  if (f32 && sa.numel() == 1 && sb.numel() == 1) return Error::Ok;
  const bool rows_a = sa.dim() == 2 && sa.sizes[0] == o.m && sa.sizes[1] == 1 && (sa.strides[0] == 1 || o.m <= 1);
  const bool cols_b = sb.dim() == 2 && sb.sizes[0] == 1 && sb.sizes[1] == o.n && (sb.strides[1] == 1 || o.n <= 1);
  if (f32 && rows_a && cols_b) {
    o.rowwise = true;
    return Error::Ok;
  }
  return aoti::invalid("_scaled_mm on CUDA takes per-tensor scaling (scale_a and scale_b float32 with one element "
                       "each) or row-wise scaling (scale_a float32 [" + std::to_string(o.m) +
                       ", 1] and scale_b float32 [1, " + std::to_string(o.n) + "], contiguous); got scale_a " +
                       sa.describe() + " and scale_b " + sb.describe());
}

Result<Operands> read_operands(AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,
                               AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result) {
  Operands o;
  KILN_ASSIGN_OR_RETURN(o.a, read_tensor(self, "self"));
  KILN_ASSIGN_OR_RETURN(o.b, read_tensor(mat2, "mat2"));
  KILN_ASSIGN_OR_RETURN(o.scale_a, read_tensor(scale_a, "scale_a"));
  KILN_ASSIGN_OR_RETURN(o.scale_b, read_tensor(scale_b, "scale_b"));
  if (bias != nullptr && *bias != nullptr) {
    KILN_ASSIGN_OR_RETURN(o.bias, read_tensor(*bias, "bias"));
    o.has_bias = true;
  }
  if (scale_result != nullptr && *scale_result != nullptr) {
    KILN_ASSIGN_OR_RETURN(o.scale_result, read_tensor(*scale_result, "scale_result"));
    o.has_scale_result = true;
  }
  KILN_RETURN_IF_ERROR(aoti::scaled_mm_operands(o.a.dtype, o.a.sizes, o.b.dtype, o.b.sizes));
  o.m = o.a.sizes[0];
  o.k = o.a.sizes[1];
  o.n = o.b.sizes[1];
  KILN_RETURN_IF_ERROR(check_scales(o));
  if (o.has_scale_result)
    KILN_RETURN_IF_ERROR(
        aoti::scaled_mm_scale_result(o.scale_result.dtype, o.scale_result.sizes, o.scale_result.numel()));
  if (o.has_bias) KILN_RETURN_IF_ERROR(aoti::scaled_mm_bias(o.bias.dtype, o.bias.numel(), o.n));
  KILN_RETURN_IF_ERROR(same_device(o.b, o.a, "mat2"));
  KILN_RETURN_IF_ERROR(same_device(o.scale_a, o.a, "scale_a"));
  KILN_RETURN_IF_ERROR(same_device(o.scale_b, o.a, "scale_b"));
  if (o.has_bias) KILN_RETURN_IF_ERROR(same_device(o.bias, o.a, "bias"));
  if (o.has_scale_result) KILN_RETURN_IF_ERROR(same_device(o.scale_result, o.a, "scale_result"));
  return o;
}

// The largest power of two (up to 256) dividing the address: what the
// heuristic may assume of a pointer's alignment.
uint32_t alignment_of(const void* p) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// Row-major contiguous, dimensions of size 1 skipped (what a vector read
// from its first element needs).
bool contiguous(const TensorRef& t) {
  int64_t expected = 1;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    if (t.sizes[d] == 1) continue;
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

std::optional<cudaDataType_t> lt_type(DType d) {
  switch (d) {
    case DType::Float8_e4m3fn: return CUDA_R_8F_E4M3;
    case DType::Float8_e5m2: return CUDA_R_8F_E5M2;
    case DType::Float32: return CUDA_R_32F;
    case DType::Float16: return CUDA_R_16F;
    case DType::BFloat16: return CUDA_R_16BF;
    default: return std::nullopt;
  }
}

// The bias dtypes ATen's CUDA op pairs with each result dtype (none with
// float32; bfloat16 with bfloat16; float16 with float16; either with float8),
// which are cuBLASLt's float8 bias types.
bool lt_bias_pairs(DType out, DType bias) {
  if (bias != DType::BFloat16 && bias != DType::Float16) return false;
  if (out == DType::Float32) return false;
  if (out == DType::BFloat16) return bias == DType::BFloat16;
  if (out == DType::Float16) return bias == DType::Float16;
  return true;
}

struct LtChoice {
  bool supported = false;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

LtAlgoCache<LtChoice>& lt_cache() {
  static LtAlgoCache<LtChoice> cache(256);
  return cache;
}

// A status that means "not this problem" rather than a failure: the tiled
// kernel computes it instead.
// Whether scale_result multiplies a result of `dtype` (see the top of this file).
bool scales_result(DType dtype) { return dtype == DType::Float8_e5m2; }

bool refused(cublasStatus_t status) {
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE;
}

struct LtProblem {
  const Operands* o = nullptr;
  const TensorRef* out = nullptr;
  int64_t lda = 0, ldb = 0, ldo = 0;
  bool fast_accum = false;
  bool bias = false;          // the bias epilogue runs
  bool scale_result = false;  // the D scale applies (float8 result)
};

// Runs the product through cuBLASLt; *done = false, having queued nothing,
// when cuBLASLt refuses the problem or has no algorithm for it.
Error scaled_mm_cublaslt(const LtProblem& p, cudaStream_t stream, bool* done) {
  *done = false;
  const Operands& o = *p.o;
  const TensorRef& out = *p.out;
  const int device = out.device_index;
  KILN_ASSIGN_OR_RETURN(const CublasLtApi* api, cublaslt());
  KILN_ASSIGN_OR_RETURN(cublasLtHandle_t handle, cublaslt_handle(*api, device));
  const cudaDataType_t a_type = *lt_type(o.b.dtype), b_type = *lt_type(o.a.dtype), d_type = *lt_type(out.dtype);
  // cuBLASLt's C layout for float8: the bias's type, else float16 for a
  // float8 result and the result's type otherwise (C is not read: beta = 0).
  const DType c_dtype = p.bias ? o.bias.dtype
                               : (aoti::is_float8(out.dtype) ? DType::Float16 : out.dtype);
  const cudaDataType_t c_type = *lt_type(c_dtype);
  LtResources r;
  r.api = api;
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->desc_create(&r.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate"));
  // Attributes an older or different cuBLASLt may not know are refusals too.
  const auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* value, size_t size) {
    return api->desc_set(r.desc, attr, value, size) == CUBLAS_STATUS_SUCCESS;
  };
  const int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  // cuBLASLt's A is mat2 (scaled by scale_b), its B is self (by scale_a).
  const void* a_scale = o.scale_b.data;
  const void* b_scale = o.scale_a.data;
  const int8_t fast = p.fast_accum ? 1 : 0;
  bool ok = set(CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)) && set(CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)) &&
            set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof(a_scale)) &&
            set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof(b_scale)) &&
            set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast));
  if (ok && o.rowwise) {
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    ok = set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)) &&
         set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode));
  }
  if (ok && p.scale_result) {
    const void* d_scale = o.scale_result.data;
    ok = set(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &d_scale, sizeof(d_scale));
  }
  if (ok && p.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const void* bias_ptr = o.bias.data;
    const int32_t bias_type = c_type;
    ok = set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)) &&
         set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)) &&
         set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type));
  }
  if (!ok) return Error::Ok;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const int64_t m = o.m, n = o.n, k = o.k;
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->layout_create(&r.a, a_type, u(k), u(n), p.ldb), "cublasLtMatrixLayoutCreate"));
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->layout_create(&r.b, b_type, u(k), u(m), p.lda), "cublasLtMatrixLayoutCreate"));
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->layout_create(&r.c, c_type, u(n), u(m), p.ldo), "cublasLtMatrixLayoutCreate"));
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->layout_create(&r.d, d_type, u(n), u(m), p.ldo), "cublasLtMatrixLayoutCreate"));
  const uint32_t align_a = alignment_of(o.b.data), align_b = alignment_of(o.a.data), align_d = alignment_of(out.data);
  LtProblemKey key{};
  const int64_t fields[] = {device,
                            m,
                            n,
                            k,
                            p.lda,
                            p.ldb,
                            p.ldo,
                            static_cast<int64_t>(o.a.dtype),
                            static_cast<int64_t>(o.b.dtype),
                            static_cast<int64_t>(out.dtype),
                            p.bias ? static_cast<int64_t>(o.bias.dtype) : -1,
                            o.rowwise ? 1 : 0,
                            p.fast_accum ? 1 : 0,
                            p.scale_result ? 1 : 0,
                            align_a,
                            align_b,
                            align_d};
  static_assert(sizeof(fields) / sizeof(fields[0]) <= kLtKeyFields, "key fields");
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); ++i) key[i] = fields[i];
  LtChoice choice;
  if (auto cached = lt_cache().find(key)) {
    choice = *cached;
  } else {
    KILN_ASSIGN_OR_RETURN(LtHeuristic h, lt_ask_heuristic(handle, r, align_a, align_b, align_d));
    if (refused(h.status)) h.returned = 0;
    else KILN_RETURN_IF_ERROR(cublas_status(*api, h.status, "cublasLtMatmulAlgoGetHeuristic"));
    if (h.returned > 0) {
      choice.supported = true;
      choice.algo = h.result.algo;
      choice.workspace = h.result.workspaceSize;
    }
    lt_cache().insert(key, choice);
  }
  if (!choice.supported) return Error::Ok;
  DeviceBuffer workspace;
  if (choice.workspace > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, DeviceBuffer::allocate(choice.workspace, device, stream));
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t status = api->matmul(handle, r.desc, &alpha, o.b.data, r.a, o.a.data, r.b, &beta, nullptr,
                                            r.c, out.data, r.d, &choice.algo, workspace.get(), choice.workspace,
                                            stream);
  // A refusal at launch queues nothing either: the tiled kernel takes over.
  if (refused(status)) return Error::Ok;
  KILN_RETURN_IF_ERROR(cublas_status(*api, status, "cublasLtMatmul"));
  *done = true;
  return Error::Ok;
}

// The cuBLASLt problem for these operands and result, if they have the form
// its float8 kernels take (see the top of this file).
std::optional<LtProblem> lt_problem(const Operands& o, const TensorRef& out, bool fast_accum) {
  const int64_t m = o.m, n = o.n, k = o.k;
  if (m == 0 || n == 0 || k == 0 || k % 16 != 0 || n % 16 != 0) return std::nullopt;
  if (!lt_type(out.dtype)) return std::nullopt;
  if (o.a.dtype == DType::Float8_e5m2 && o.b.dtype == DType::Float8_e5m2) return std::nullopt;
  if (o.has_bias) {
    if (!lt_bias_pairs(out.dtype, o.bias.dtype) || !contiguous(o.bias) || alignment_of(o.bias.data) < 16)
      return std::nullopt;
  }
  // Row-wise scale vectors are read in 16-byte pieces by some kernels.
  if (o.rowwise && (alignment_of(o.scale_a.data) < 16 || alignment_of(o.scale_b.data) < 16)) return std::nullopt;
  // self row-major, mat2 column-major, out row-major; the leading dimension
  // of a single row or column is taken as dense.
  if (o.a.strides[1] != 1 || o.b.strides[0] != 1 || out.strides[1] != 1) return std::nullopt;
  LtProblem p;
  p.o = &o;
  p.out = &out;
  p.lda = m == 1 ? k : o.a.strides[0];
  p.ldb = n == 1 ? k : o.b.strides[1];
  p.ldo = m == 1 ? n : out.strides[0];
  const int64_t out_bytes = static_cast<int64_t>(out.element_bytes());
  if (p.lda < k || p.ldb < k || p.ldo < n) return std::nullopt;
  // float8 operands need 16-byte aligned columns; so does the result.
  if (p.lda % 16 != 0 || p.ldb % 16 != 0 || (p.ldo * out_bytes) % 16 != 0) return std::nullopt;
  p.fast_accum = fast_accum;
  p.bias = o.has_bias;
  p.scale_result = o.has_scale_result && scales_result(out.dtype);
  return p;
}

Error scaled_mm_into(const Operands& o, const TensorRef& out, bool fast_accum) {
  if (o.m == 0 || o.n == 0) return Error::Ok;
  cudaStream_t stream = current_stream(out.device_index);
  if (auto problem = lt_problem(o, out, fast_accum)) {
    bool done = false;
    KILN_RETURN_IF_ERROR(scaled_mm_cublaslt(*problem, stream, &done));
    if (done) return Error::Ok;
  }
  ScaledMmKernelArgs args;
  args.a = static_cast<const uint8_t*>(o.a.data);
  args.a_rs = o.a.strides[0];
  args.a_cs = o.a.strides[1];
  args.a_dtype = o.a.dtype;
  args.b = static_cast<const uint8_t*>(o.b.data);
  args.b_rs = o.b.strides[0];
  args.b_cs = o.b.strides[1];
  args.b_dtype = o.b.dtype;
  args.scale_a = static_cast<const float*>(o.scale_a.data);
  args.scale_b = static_cast<const float*>(o.scale_b.data);
  args.scale_a_stride = o.rowwise ? o.scale_a.strides[0] : 0;
  args.scale_b_stride = o.rowwise ? o.scale_b.strides[1] : 0;
  if (o.has_bias && o.k > 0) {
    args.bias = o.bias.data;
    args.bias_dtype = o.bias.dtype;
    KILN_ASSIGN_OR_RETURN(args.bias_index, indexer(o.bias));
  }
  if (o.has_scale_result && scales_result(out.dtype))
    args.scale_result = static_cast<const float*>(o.scale_result.data);
  args.out = out.data;
  args.o_rs = out.strides[0];
  args.o_cs = out.strides[1];
  args.out_dtype = out.dtype;
  args.m = o.m;
  args.n = o.n;
  args.k = o.k;
  return launch_scaled_mm_fallback(args, stream);
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                           AtenTensorHandle scale_a, AtenTensorHandle scale_b,
                                                           AtenTensorHandle* bias, AtenTensorHandle* scale_result,
                                                           int32_t* out_dtype, int32_t use_fast_accum,
                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__scaled_mm", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(std::optional<DType> requested, optional_dtype_arg(out_dtype, "out_dtype"));
    KILN_ASSIGN_OR_RETURN(Operands o, read_operands(self, mat2, scale_a, scale_b, bias, scale_result));
    const DType dt = requested.value_or(o.a.dtype);
    KILN_RETURN_IF_ERROR(aoti::scaled_mm_result_dtype(dt, "argument 'out_dtype' is"));
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_contiguous(std::vector<int64_t>{o.m, o.n}, dt, o.a.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(result.get(), "ret0"));
    KILN_RETURN_IF_ERROR(scaled_mm_into(o, r, use_fast_accum != 0));
    return return_handle(result, ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                               AtenTensorHandle mat2, AtenTensorHandle scale_a,
                                                               AtenTensorHandle scale_b, AtenTensorHandle* bias,
                                                               AtenTensorHandle* scale_result, int32_t* out_dtype,
                                                               int32_t use_fast_accum) {
  return aoti::guarded("aoti_torch_cuda__scaled_mm_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef result, read_tensor(out, "out"));
    KILN_ASSIGN_OR_RETURN(std::optional<DType> requested, optional_dtype_arg(out_dtype, "out_dtype"));
    KILN_ASSIGN_OR_RETURN(Operands o, read_operands(self, mat2, scale_a, scale_b, bias, scale_result));
    KILN_RETURN_IF_ERROR(aoti::scaled_mm_out_dtype(requested, result.dtype));
    KILN_RETURN_IF_ERROR(aoti::scaled_mm_result_dtype(result.dtype, "argument 'out' has dtype"));
    if (result.dim() != 2 || result.sizes[0] != o.m || result.sizes[1] != o.n)
      return aoti::invalid("argument 'out' has shape " + aoti::shape_string(result.sizes) + ", expected [" +
                           std::to_string(o.m) + ", " + std::to_string(o.n) + "]");
    KILN_RETURN_IF_ERROR(same_device(result, o.a, "out"));
    return scaled_mm_into(o, result, use_fast_accum != 0);
  });
}

}  // extern "C"
