// The matrix products behind the CUDA product ops (matmul.h), through cuBLASLt.
//
// cuBLASLt is column-major. A row-major result C (M x N) is computed as its
// transpose C^T = B^T A^T, which is column-major with C's row stride as the
// leading dimension; a column-major C is computed directly. Each operand is
// used in place when one of its two strides is 1 (as a plain or transposed
// column-major matrix), otherwise it is first copied to a contiguous buffer.
// float32 uses TF32 tensor cores only when allowed (kiln::cuda::set_allow_tf32);
// float16/bfloat16 accumulate in float32; float64 and complex128 compute in
// float64, complex64 in float32. Integer products are refused, as ATen's CUDA
// kernels refuse them. The heuristic's choice is cached per
// problem (lt_algo_cache.h), so a repeated shape costs only the descriptors.
//
// Products with at most 4 rows whose right operand is a transposed row-major
// weight (nn.Linear at decode: mm(x, permute(W))) skip cuBLASLt and run the
// memory-bound GEMV kernel (gemv_kernel.h) when its alignment rules hold. At
// log level debug every product logs which path it took.
#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "shims/common/shim_util.h"
#include "devices/cuda/libraries/cublaslt_api.h"
#include "devices/cuda/cuda_check.h"
#include "shims/cuda/matmul.h"
#include "devices/cuda/device/cuda_settings.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/device/device_attributes.h"
#include "devices/cuda/kernels/gemv_kernel.h"
#include "devices/cuda/kernels/scale_kernel.h"
#include "shims/cuda/lt_algo_cache.h"
#include "shims/cuda/lt_matmul.h"
#include "devices/cuda/device/strided_copy.h"
#include "shims/cuda/tensor_ref.h"
#include "kiln/log.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// A (batch of) logical matrix: element (b, r, c) at ptr + b*bs + r*rs + c*cs elements.
struct Mat {
  void* ptr = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t rs = 0, cs = 0, bs = 0;

  Mat transposed() const { return Mat{ptr, cols, rows, cs, rs, bs}; }
};

// How a logical matrix is handed to cuBLASLt: a stored column-major matrix
// (stored_rows x stored_cols, leading dimension ld) and whether to transpose it.
struct LtOperand {
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t stored_rows = 0, stored_cols = 0, ld = 0;
};

// Column-major view of `m` without transposition, if its strides allow one.
bool as_column_major(const Mat& m, int64_t* ld) {
  const int64_t rs = m.rows <= 1 ? 1 : m.rs;
  int64_t cs = m.cols <= 1 ? std::max<int64_t>(m.rows, 1) : m.cs;
  if (rs != 1 || cs < std::max<int64_t>(m.rows, 1)) return false;
  *ld = cs;
  return true;
}

bool as_operand(const Mat& m, LtOperand* out) {
  int64_t ld = 0;
  if (as_column_major(m, &ld)) {
    *out = LtOperand{CUBLAS_OP_N, m.rows, m.cols, ld};
    return true;
  }
  if (as_column_major(m.transposed(), &ld)) {
    *out = LtOperand{CUBLAS_OP_T, m.cols, m.rows, ld};
    return true;
  }
  return false;
}

// Largest power of two (<= 256) dividing every address the operand touches.
uint32_t alignment_of(const void* p, int64_t batch_stride_bytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | static_cast<uint64_t>(batch_stride_bytes) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// How cuBLASLt multiplies operands of one dtype: their element type, the
// compute type and the type of alpha and beta (the scale type).
struct LtTypes {
  cudaDataType_t element = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
};

Result<LtTypes> lt_types(DType d) {
  switch (d) {
    // Half precision accumulates in float32, as ATen's CUDA products do.
    case DType::Float16: return LtTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::BFloat16: return LtTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::Float32:
      return LtTypes{CUDA_R_32F, allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::Float64: return LtTypes{CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    // complex64 always computes in full float32 (no TF32): at least as
    // accurate as ATen's result under any of its math modes.
    case DType::Complex64: return LtTypes{CUDA_C_32F, CUBLAS_COMPUTE_32F, CUDA_C_32F};
    case DType::Complex128: return LtTypes{CUDA_C_64F, CUBLAS_COMPUTE_64F, CUDA_C_64F};
    default:
      return set_error(Error::NotSupported, std::string("cuBLASLt matrix product of dtype ") + dtype_name(d) +
                                                " (supported: float16, bfloat16, float32, float64, complex64, "
                                                "complex128)");
  }
}

// alpha or beta in the scale type's layout: cuBLASLt reads one float or
// double, or a (real, imaginary) pair of them for a complex scale type.
struct LtScalar {
  alignas(16) unsigned char bytes[16] = {};

  LtScalar(double value, cudaDataType_t scale) {
    if (scale == CUDA_R_64F || scale == CUDA_C_64F) {
      const double parts[2] = {value, 0.0};
      std::memcpy(bytes, parts, sizeof(parts));
    } else {
      const float parts[2] = {static_cast<float>(value), 0.0f};
      std::memcpy(bytes, parts, sizeof(parts));
    }
  }
  const void* get() const noexcept { return bytes; }
};

// What the heuristic chose for one problem.
struct LtChoice {
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

// Shared by all threads and devices (the device is part of the key). 1024
// problems is far more than a model's distinct shapes.
LtAlgoCache<LtChoice>& algo_cache() {
  static LtAlgoCache<LtChoice> cache(1024);
  return cache;
}

Error make_layout(const CublasLtApi& api, cublasLtMatrixLayout_t* layout, cudaDataType_t type, const LtOperand& o,
                  int64_t batch, int64_t batch_stride) {
  KILN_RETURN_IF_ERROR(cublas_status(api,
                                     api.layout_create(layout, type, static_cast<uint64_t>(o.stored_rows),
                                                       static_cast<uint64_t>(o.stored_cols), o.ld),
                                     "cublasLtMatrixLayoutCreate"));
  if (batch > 1) {
    const auto count = static_cast<int32_t>(batch);
    KILN_RETURN_IF_ERROR(cublas_status(
        api, api.layout_set(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), "batch count"));
    KILN_RETURN_IF_ERROR(cublas_status(
        api, api.layout_set(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride, sizeof(batch_stride)),
        "batch stride"));
  }
  return Error::Ok;
}

// Asks cuBLASLt's heuristic for the best algorithm for the problem described
// by r's descriptors (m, n, k for messages only).
Result<LtChoice> lt_heuristic(const CublasLtApi* api, cublasLtHandle_t handle, LtResources& r,
                              const std::string& what, int64_t m, int64_t n, int64_t k, uint32_t align_a,
                              uint32_t align_b, uint32_t align_d) {
  KILN_ASSIGN_OR_RETURN(LtHeuristic h, lt_ask_heuristic(handle, r, align_a, align_b, align_d));
  // A combination of types and epilogue that cuBLASLt does not implement is
  // reported as a status rather than as no algorithm; both are NotSupported,
  // which callers with another way to compute the product fall back on.
  if (h.status == CUBLAS_STATUS_NOT_SUPPORTED) h.returned = 0;
  else KILN_RETURN_IF_ERROR(cublas_status(*api, h.status, "cublasLtMatmulAlgoGetHeuristic"));
  if (h.returned == 0)
    return set_error(Error::NotSupported, "cuBLASLt has no algorithm for this " + what + " (m=" +
                                              std::to_string(m) + ", n=" + std::to_string(n) +
                                              ", k=" + std::to_string(k) + ")");
  return LtChoice{h.result.algo, h.result.workspaceSize};
}

// What cuBLASLt does to alpha * X @ Y + beta * D before it stores it:
// nothing (kind DEFAULT), or add bias[i] to row i (BIAS; `bias` holds D's
// rows elements of D's dtype), then possibly ReLU (RELU_BIAS) or GELU, the
// tanh approximation (GELU_BIAS).
struct LtEpilogue {
  cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
};

// D = alpha * X @ Y + beta * D (column-major D of m x n; X m x k, Y k x n),
// `batch` times, then `epilogue`. X and Y are `ab_dtype`, D `d_dtype` (a
// wider D only for float16/bfloat16 operands: mm with out_dtype float32),
// with the compute and scale types of the operands. Every operand must
// already be cuBLASLt-compatible.
Error lt_matmul(DType ab_dtype, DType d_dtype, int device, cudaStream_t stream, int64_t batch, const Mat& x,
                const LtOperand& xo, const Mat& y, const LtOperand& yo, const Mat& d, int64_t ldd, double alpha,
                double beta, LtEpilogue epilogue = {}) {
  KILN_ASSIGN_OR_RETURN(const CublasLtApi* api, cublaslt());
  KILN_ASSIGN_OR_RETURN(cublasLtHandle_t handle, cublaslt_handle(*api, device));
  KILN_ASSIGN_OR_RETURN(const LtTypes types, lt_types(ab_dtype));
  cudaDataType_t d_type = types.element;
  if (d_dtype != ab_dtype) {
    KILN_ASSIGN_OR_RETURN(const LtTypes d_types, lt_types(d_dtype));
    d_type = d_types.element;
  }
  const cudaDataType_t type = types.element;
  const cublasComputeType_t compute = types.compute;
  LtResources r;
  r.api = api;
  KILN_RETURN_IF_ERROR(
      cublas_status(*api, api->desc_create(&r.desc, compute, types.scale), "cublasLtMatmulDescCreate"));
  const int32_t ta = xo.op, tb = yo.op;
  KILN_RETURN_IF_ERROR(cublas_status(*api, api->desc_set(r.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "TRANSA"));
  KILN_RETURN_IF_ERROR(cublas_status(*api, api->desc_set(r.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "TRANSB"));
  if (epilogue.kind != CUBLASLT_EPILOGUE_DEFAULT) {
    const uint32_t kind = epilogue.kind;
    KILN_RETURN_IF_ERROR(cublas_status(
        *api, api->desc_set(r.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &kind, sizeof(kind)), "epilogue"));
    KILN_RETURN_IF_ERROR(cublas_status(
        *api, api->desc_set(r.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &epilogue.bias, sizeof(epilogue.bias)),
        "bias pointer"));
  }
  const int64_t elem = static_cast<int64_t>(element_size(ab_dtype));
  const int64_t d_elem = static_cast<int64_t>(element_size(d_dtype));
  KILN_RETURN_IF_ERROR(make_layout(*api, &r.a, type, xo, batch, x.bs));
  KILN_RETURN_IF_ERROR(make_layout(*api, &r.b, type, yo, batch, y.bs));
  KILN_RETURN_IF_ERROR(make_layout(*api, &r.d, d_type, LtOperand{CUBLAS_OP_N, d.rows, d.cols, ldd}, batch, d.bs));

  // The heuristic assumes 256-byte aligned pointers unless told otherwise;
  // views into the middle of a tensor are often less aligned.
  const uint32_t align_a = alignment_of(x.ptr, x.bs * elem), align_b = alignment_of(y.ptr, y.bs * elem),
                 align_d = alignment_of(d.ptr, d.bs * d_elem);
  // Everything the descriptors and preferences below tell the heuristic.
  const bool has_bias = epilogue.kind != CUBLASLT_EPILOGUE_DEFAULT;
  const LtProblemKey key{device, static_cast<int64_t>(type), static_cast<int64_t>(d_type),
                         static_cast<int64_t>(compute), ta, tb,
                         xo.stored_rows, xo.stored_cols, xo.ld, yo.stored_rows, yo.stored_cols, yo.ld,
                         d.rows, d.cols, ldd, batch, batch > 1 ? x.bs : 0, batch > 1 ? y.bs : 0,
                         batch > 1 ? d.bs : 0, align_a, align_b, align_d, static_cast<int64_t>(epilogue.kind),
                         has_bias ? alignment_of(epilogue.bias, 0) : 0};
  LtChoice choice;
  if (auto cached = algo_cache().find(key)) {
    choice = *cached;
  } else {
    const std::string what = std::string(dtype_name(ab_dtype)) + " product" +
                             (d_dtype != ab_dtype ? std::string(" into ") + dtype_name(d_dtype) : std::string()) +
                             (epilogue.kind == CUBLASLT_EPILOGUE_RELU_BIAS   ? " with a bias and ReLU epilogue"
                              : epilogue.kind == CUBLASLT_EPILOGUE_GELU_BIAS ? " with a bias and GELU epilogue"
                              : has_bias                                     ? " with a bias epilogue"
                                                                             : "");
    KILN_ASSIGN_OR_RETURN(choice, lt_heuristic(api, handle, r, what, d.rows, d.cols, x.cols, align_a, align_b,
                                               align_d));
    algo_cache().insert(key, choice);
  }
  DeviceBuffer workspace;
  if (choice.workspace > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, DeviceBuffer::allocate(choice.workspace, device, stream));
  }
  const LtScalar alpha_value(alpha, types.scale), beta_value(beta, types.scale);
  return cublas_status(*api,
                       api->matmul(handle, r.desc, alpha_value.get(), x.ptr, r.a, y.ptr, r.b, beta_value.get(), d.ptr,
                                   r.d, d.ptr, r.d, &choice.algo, workspace.get(), choice.workspace, stream),
                       "cublasLtMatmul");
}

// Makes `m` (backed by tensor `t`) usable as an operand, copying `t` to a
// contiguous buffer held in `holder` when its strides are not.
Error prepare_operand(const TensorRef& t, Mat& m, LtOperand& o, DeviceBuffer& holder, cudaStream_t stream,
                      bool logical_transpose) {
  if (as_operand(m, &o)) return Error::Ok;
  const auto strides = contiguous_strides(t.sizes);
  KILN_ASSIGN_OR_RETURN(holder, copy_to_layout(t, strides, stream));
  // Rebuild the view over the contiguous copy: last two dims are (rows, cols) of t.
  const size_t n = t.sizes.size();
  Mat c{holder.get(), t.sizes[n - 2], t.sizes[n - 1], strides[n - 2], strides[n - 1], n == 3 ? strides[0] : 0};
  if (t.sizes[n - 2] * t.sizes[n - 1] == 0) c.bs = 0;
  m = logical_transpose ? c.transposed() : c;
  if (!as_operand(m, &o)) return set_error(Error::Internal, "contiguous operand still not usable by cuBLASLt");
  return Error::Ok;
}

// The GEMV kernel's view of out = a @ b (+ bias): b's column n is the weight row n.
GemvParams gemv_params(DType dtype, int64_t batch, const Mat& a, const Mat& b, const Mat& out, float alpha,
                       float beta, RowBias bias) {
  return GemvParams{.a = a.ptr, .w = b.ptr, .out = out.ptr, .dtype = dtype, .batch = batch,
                    .M = out.rows, .N = out.cols, .K = a.cols,
                    .lda = a.rs, .a_ks = a.cs, .a_bs = a.bs,
                    .ldw = b.cs, .w_ks = b.rs, .w_bs = b.bs,
                    .out_rs = out.rs, .out_cs = out.cs, .out_bs = out.bs,
                    .alpha = alpha, .beta = beta, .bias = bias.ptr, .bias_stride = bias.stride};
}

std::string describe_product(DType dtype, int64_t batch, int64_t M, int64_t N, int64_t K) {
  return std::string("matrix product ") + dtype_name(dtype) + " batch=" + std::to_string(batch) +
         " m=" + std::to_string(M) + " n=" + std::to_string(N) + " k=" + std::to_string(K);
}

}  // namespace

namespace kiln::cudadev {

Error matmul_into(const TensorRef& out, const TensorRef& a, const TensorRef& b, double alpha, double beta,
                  RowBias bias, Activation fused) {
  const size_t n = out.sizes.size();
  const int64_t batch = n == 3 ? out.sizes[0] : 1;
  const int64_t M = out.sizes[n - 2], N = out.sizes[n - 1], K = a.sizes[n - 1];
  if (M == 0 || N == 0 || batch == 0) return Error::Ok;
  const bool fuse = fused != Activation::None;
  if (K == 0 && fuse)
    return set_error(Error::NotSupported, describe_product(out.dtype, batch, M, N, K) +
                                              ": an empty inner dimension leaves nothing to fuse the activation into");
  const int device = out.device_index;
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  cudaStream_t stream = current_stream(device);

  // An empty sum: out = beta * addend, zeros with beta == 0 (the addend is
  // not read then), as ATen's CUDA products. cuBLASLt takes no k of 0.
  if (K == 0) {
    KILN_LOG(Debug, describe_product(out.dtype, batch, M, N, K) + ": empty inner dimension, beta * addend");
    if (bias.ptr != nullptr && beta != 0.0) {
      const int64_t bstrides[2] = {0, bias.stride};
      KILN_RETURN_IF_ERROR(launch_strided_copy(out.data, out.strides.data(), bias.ptr, bstrides, out.sizes.data(), 2,
                                               out.element_bytes(), stream));
    }
    if (beta == 1.0) return Error::Ok;
    return launch_scale(out.data, out.sizes.data(), out.strides.data(), out.dim(), out.dtype, beta, stream);
  }

  auto view = [&](const TensorRef& t) {
    Mat m{t.data, t.sizes[n - 2], t.sizes[n - 1], t.strides[n - 2], t.strides[n - 1], n == 3 ? t.strides[0] : 0};
    if (batch == 1) m.bs = 0;
    return m;
  };
  Mat mc = view(out), ma = view(a), mb = view(b);

  // Few rows against a transposed row-major weight: the GEMV kernel writes
  // out through its strides directly, so no operand or output is copied.
  const GemvParams g =
      gemv_params(out.dtype, batch, ma, mb, mc, static_cast<float>(alpha), static_cast<float>(beta), bias);
  const char* no_gemv = fuse                   ? "an activation is fused into the product"
                        : a.dtype != out.dtype ? "out's dtype differs from the operands'"
                                               : gemv_unsupported(g);
  if (no_gemv == nullptr) {
    KILN_LOG(Debug, describe_product(out.dtype, batch, M, N, K) + ": GEMV kernel" +
                        (bias.ptr != nullptr ? " (bias read in place)" : ""));
    KILN_ASSIGN_OR_RETURN(const int sm_count, multiprocessor_count(device));
    return launch_gemv(g, sm_count, stream);
  }

  // Where the result goes, decided once: out itself when it is column- or
  // row-major (then computed as out^T), else a contiguous temporary copied
  // back at the end.
  enum class OutLayout { ColumnMajor, RowMajor, Temporary };
  int64_t ld = 0;
  const OutLayout layout = as_column_major(mc, &ld)              ? OutLayout::ColumnMajor
                           : as_column_major(mc.transposed(), &ld) ? OutLayout::RowMajor
                                                                   : OutLayout::Temporary;
  // A row bias goes to cuBLASLt's bias epilogue when out is row-major (the
  // product is computed as out^T, whose rows are out's columns), the bias is
  // a contiguous, 16-byte aligned vector of a real dtype (complex products
  // keep to plain cuBLASLt matmuls) and beta is 1; otherwise it is first
  // copied into out, broadcast, and added through beta like any addend.
  const bool complex = out.dtype == DType::Complex64 || out.dtype == DType::Complex128;
  const bool bias_epilogue = bias.ptr != nullptr && beta == 1.0 && bias.stride == 1 && batch == 1 && !complex &&
                             a.dtype == out.dtype && layout == OutLayout::RowMajor &&
                             alignment_of(bias.ptr, 0) >= 16;
  if (fuse && !bias_epilogue)
    return set_error(Error::NotSupported, describe_product(out.dtype, batch, M, N, K) +
                                              ": the activation cannot be fused (it needs a row-major 2-D out, "
                                              "beta 1 and a contiguous, 16-byte aligned bias row)");
  const cublasLtEpilogue_t epilogue_kind = fused == Activation::Relu       ? CUBLASLT_EPILOGUE_RELU_BIAS
                                           : fused == Activation::GeluTanh ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                                           : CUBLASLT_EPILOGUE_BIAS;
  KILN_LOG(Debug, describe_product(out.dtype, batch, M, N, K) + ": cuBLASLt" +
                      (fuse ? ", bias and activation in the epilogue"
                       : bias_epilogue     ? ", bias in the epilogue"
                       : bias.ptr != nullptr ? ", bias copied into out"
                                             : "") +
                      " (GEMV kernel not used: " + no_gemv + ")");
  const auto copy_bias_into_out = [&]() -> Error {
    const int64_t bstrides[2] = {0, bias.stride};
    return launch_strided_copy(out.data, out.strides.data(), bias.ptr, bstrides, out.sizes.data(), 2,
                               out.element_bytes(), stream);
  };
  if (bias.ptr != nullptr && !bias_epilogue) KILN_RETURN_IF_ERROR(copy_bias_into_out());

  DeviceBuffer temp_out;
  Mat md = mc;
  if (layout == OutLayout::Temporary) {
    const auto strides = contiguous_strides(out.sizes);
    if (beta != 0.0) {
      KILN_ASSIGN_OR_RETURN(temp_out, copy_to_layout(out, strides, stream));
    } else {
      KILN_ASSIGN_OR_RETURN(temp_out, DeviceBuffer::allocate(static_cast<size_t>(out.numel()) * out.element_bytes(),
                                                             device, stream));
    }
    md = Mat{temp_out.get(), M, N, strides[n - 2], strides[n - 1], n == 3 ? strides[0] : 0};
    if (batch == 1) md.bs = 0;
    ld = strides[n - 2];
  }
  const bool row_major = layout != OutLayout::ColumnMajor;  // a temporary is row-major too

  DeviceBuffer hold_a, hold_b;
  LtOperand oa, ob;
  Error err = Error::Ok;
  if (!row_major) {
    // D = C (M x N): X = A, Y = B.
    KILN_RETURN_IF_ERROR(prepare_operand(a, ma, oa, hold_a, stream, false));
    KILN_RETURN_IF_ERROR(prepare_operand(b, mb, ob, hold_b, stream, false));
    err = lt_matmul(a.dtype, out.dtype, device, stream, batch, ma, oa, mb, ob, md, ld, alpha, beta);
  } else {
    // D = C^T (N x M): X = B^T, Y = A^T; D's row n gets bias[n].
    Mat xt = mb.transposed(), yt = ma.transposed();
    KILN_RETURN_IF_ERROR(prepare_operand(b, xt, ob, hold_b, stream, true));
    KILN_RETURN_IF_ERROR(prepare_operand(a, yt, oa, hold_a, stream, true));
    // With the epilogue out holds no addend yet: beta 0, the bias added by cuBLASLt.
    err = lt_matmul(a.dtype, out.dtype, device, stream, batch, xt, ob, yt, oa, md.transposed(), ld, alpha,
                    bias_epilogue ? 0.0 : beta,
                    bias_epilogue ? LtEpilogue{epilogue_kind, bias.ptr} : LtEpilogue{});
    // A fused activation has no fallback here: the caller applies it itself.
    if (bias_epilogue && !fuse && err == Error::NotSupported) {  // no algorithm with the epilogue: bias as an addend
      KILN_LOG(Debug, describe_product(out.dtype, batch, M, N, K) + ": no cuBLASLt algorithm with a bias "
                                                                    "epilogue; bias copied into out");
      KILN_RETURN_IF_ERROR(copy_bias_into_out());
      err = lt_matmul(a.dtype, out.dtype, device, stream, batch, xt, ob, yt, oa, md.transposed(), ld, alpha, beta);
    }
  }
  KILN_RETURN_IF_ERROR(err);
  if (temp_out.get() != nullptr) {
    const auto strides = contiguous_strides(out.sizes);
    KILN_RETURN_IF_ERROR(launch_strided_copy(out.data, out.strides.data(), temp_out.get(), strides.data(),
                                             out.sizes.data(), out.dim(), out.element_bytes(), stream));
  }
  return Error::Ok;
}

Error check_same(const TensorRef& out, const TensorRef& t, const char* name) {
  if (t.dtype != out.dtype)
    return set_error(Error::InvalidArgument, std::string(name) + " has dtype " + dtype_name(t.dtype) +
                                                 " but out has " + dtype_name(out.dtype));
  if (t.device_index != out.device_index)
    return set_error(Error::InvalidArgument, std::string(name) + " is on CUDA device " +
                                                 std::to_string(t.device_index) + " but out on " +
                                                 std::to_string(out.device_index));
  return Error::Ok;
}

Error check_product_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Float64:
    case DType::Complex64:
    case DType::Complex128:
      return Error::Ok;
    default:
      return set_error(Error::NotSupported,
                       std::string("matrix product of dtype ") + dtype_name(dtype) +
                           " on CUDA: ATen's CUDA kernels multiply float16, bfloat16, float32, float64, complex64 "
                           "and complex128 only (no integer or bool products), and so does Kiln");
  }
}

Error read_product(AtenTensorHandle out_h, AtenTensorHandle a_h, AtenTensorHandle b_h, const char* a_name,
                   const char* b_name, size_t rank, TensorRef& out, TensorRef& a, TensorRef& b) {
  KILN_ASSIGN_OR_RETURN(out, read_tensor(out_h, "out"));
  KILN_ASSIGN_OR_RETURN(a, read_tensor(a_h, a_name));
  KILN_ASSIGN_OR_RETURN(b, read_tensor(b_h, b_name));
  if (out.sizes.size() != rank || a.sizes.size() != rank || b.sizes.size() != rank)
    return set_error(Error::InvalidArgument, "expected " + std::to_string(rank) + "-D tensors, got out " +
                                                 out.describe() + ", " + a_name + " " + a.describe() + ", " + b_name +
                                                 " " + b.describe());
  KILN_RETURN_IF_ERROR(check_same(out, a, a_name));
  KILN_RETURN_IF_ERROR(check_same(out, b, b_name));
  KILN_RETURN_IF_ERROR(check_product_dtype(a.dtype));
  const size_t n = rank;
  const bool batch_ok = rank == 2 || (a.sizes[0] == out.sizes[0] && b.sizes[0] == out.sizes[0]);
  if (!batch_ok || a.sizes[n - 2] != out.sizes[n - 2] || b.sizes[n - 1] != out.sizes[n - 1] ||
      a.sizes[n - 1] != b.sizes[n - 2])
    return set_error(Error::InvalidArgument, std::string("shape mismatch: ") + a_name + " " + a.describe() + " @ " +
                                                 b_name + " " + b.describe() + " -> out " + out.describe());
  return Error::Ok;
}

Error addmm_into(const TensorRef& o, AtenTensorHandle self, const TensorRef& a, const TensorRef& b, double beta,
                 double alpha) {
  if (beta != 0.0) {
    KILN_ASSIGN_OR_RETURN(TensorRef s, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(check_same(o, s, "self"));
    if (s.dim() > 2)
      return set_error(Error::InvalidArgument, "self " + s.describe() + " does not broadcast to out " + o.describe());
    // Broadcast self to out's shape (right-aligned; size-1 or missing dims get stride 0).
    std::vector<int64_t> bstrides(2, 0);
    const size_t lead = 2 - s.sizes.size();
    for (size_t i = 0; i < s.sizes.size(); ++i) {
      if (s.sizes[i] == o.sizes[lead + i]) {
        bstrides[lead + i] = s.strides[i];
      } else if (s.sizes[i] != 1) {
        return set_error(Error::InvalidArgument,
                         "self " + s.describe() + " does not broadcast to out " + o.describe());
      }
    }
    const bool same = s.data == o.data && s.sizes == o.sizes && s.strides == o.strides;
    // One value per column for every row (nn.Linear's bias): the product
    // reads it where it is, instead of a copy kernel filling out first.
    if (!same && (bstrides[0] == 0 || o.sizes[0] == 1))
      return matmul_into(o, a, b, alpha, beta, RowBias{s.data, bstrides[1]});
    if (!same && o.numel() > 0) {
      ScopedDevice scoped(o.device_index);
      KILN_RETURN_IF_ERROR(scoped.status());
      KILN_RETURN_IF_ERROR(launch_strided_copy(o.data, o.strides.data(), s.data, bstrides.data(), o.sizes.data(),
                                               2, o.element_bytes(), current_stream(o.device_index)));
    }
  }
  // With beta == 0 the addend is ignored entirely (NaNs in self do not leak), as in ATen.
  return matmul_into(o, a, b, alpha, beta);
}

}  // namespace kiln::cudadev
