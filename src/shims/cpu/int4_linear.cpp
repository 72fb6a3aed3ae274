// aoti_torch_cpu_int4_linear: Kiln's op kiln::int4_linear, a linear layer
// whose weight is stored as 4-bit codes with a scale and zero point per group
// of group_size input features (weight-only quantization of LLMs):
// w[n, k] = (code - 8) * scale + zero, result = x @ w^T accumulated in float32
// and rounded once to x's dtype. Checks: shims/common/int4_linear_args.h.
//
// Few rows (the decode step: up to kQuantizedDotMaxRows) are bound by reading
// the weight, so each weight row is unpacked into a row-sized float buffer
// and dotted with every activation row while it is in cache: the packed
// weight is read once and no more is ever dequantized than one row per
// thread. More rows (prefill) are bound by arithmetic: blocks of weight rows
// are dequantized into a per-thread buffer and multiplied through the float32
// GEMM, never the whole N x K weight at once.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/parallel_for.h"
#include "devices/cpu/quantized_rows.h"
#include "devices/cpu/small_gemm.h"
#include "shims/common/int4_linear_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

// Weight rows a prefill block dequantizes: 64 rows of K = 4096 are 1 MiB of
// float32 a thread; the GEMM's work per block (rows x 64 x K) dwarfs the x
// panel BLAS repacks per block. Fixed, not sized by the thread count, so a
// result does not depend on how many threads computed it.
constexpr int64_t kBlockRows = 64;

struct Int4Args {
  const Tensor* x;
  const Tensor* qweight;
  const Tensor* scale_zero;
  int64_t group;
  Int4LinearPlan plan;
};

// Reads one weight row's codes and scales, whatever the tensors' strides.
class RowReader {
 public:
  explicit RowReader(const Int4Args& a)
      : a_(a),
        gathered_(a.qweight->stride(1) == 1 ? 0 : static_cast<size_t>(a.plan.k / 2)),
        scale_zero_(static_cast<size_t>(2 * a.plan.groups)) {}

  // Row n dequantized into `out` (K floats, in unpack_int4_row's order).
  void unpack(int64_t n, float* out) {
    const uint8_t* bytes = read(n);
    unpack_int4_row(bytes, a_.plan.k, a_.group, scale_zero_.data(), out);
  }

  // Row n dotted with `rows` rows of x (int4_dot_rows).
  void dot(int64_t n, const float* x, const float* xsum, int64_t rows, float* out) {
    const uint8_t* bytes = read(n);
    int4_dot_rows(bytes, a_.plan.k, a_.group, scale_zero_.data(), x, a_.plan.k, xsum, rows, out);
  }

 private:
  // Row n's bytes (gathered when qweight is strided along K) and its scales
  // and zeros as float32 pairs in scale_zero_.
  const uint8_t* read(int64_t n) {
    const Tensor& q = *a_.qweight;
    const uint8_t* bytes = q.data<uint8_t>() + n * q.stride(0);
    if (!gathered_.empty()) {
      const int64_t s1 = q.stride(1);
      for (size_t j = 0; j < gathered_.size(); ++j) gathered_[j] = bytes[static_cast<int64_t>(j) * s1];
      bytes = gathered_.data();
    }
    const Tensor& sz = *a_.scale_zero;
    const DType dt = sz.dtype();
    const size_t es = element_size(dt);
    const auto* base = static_cast<const unsigned char*>(sz.data_ptr());
    const int64_t s0 = sz.stride(0), s1 = sz.stride(1), s2 = sz.stride(2);
    for (int64_t g = 0; g < a_.plan.groups; ++g) {
      const int64_t at = n * s0 + g * s1;
      scale_zero_[static_cast<size_t>(2 * g)] = read_float(base + static_cast<size_t>(at) * es, dt);
      scale_zero_[static_cast<size_t>(2 * g + 1)] = read_float(base + static_cast<size_t>(at + s2) * es, dt);
    }
    return bytes;
  }

  const Int4Args& a_;
  std::vector<uint8_t> gathered_;
  std::vector<float> scale_zero_;
};

Result<Int4Args> check_args(AtenTensorHandle x_h, AtenTensorHandle qweight_h, AtenTensorHandle scale_zero_h,
                            int64_t group_size) {
  KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(x_h, "x"));
  KILN_ASSIGN_OR_RETURN(Tensor * qweight, cpu_tensor_arg(qweight_h, "qweight"));
  KILN_ASSIGN_OR_RETURN(Tensor * scale_zero, cpu_tensor_arg(scale_zero_h, "scale_zero"));
  KILN_ASSIGN_OR_RETURN(Int4LinearPlan plan,
                        int4_linear_plan(x->dtype(), x->sizes(), qweight->dtype(), qweight->sizes(),
                                         scale_zero->dtype(), scale_zero->sizes(), group_size));
  return Int4Args{x, qweight, scale_zero, group_size, std::move(plan)};
}

// x's rows as float32, rows x K, in the order unpack_int4_row writes the weight.
std::vector<float> ordered_rows(const Int4Args& a) {
  const int64_t rows = a.plan.rows, k = a.plan.k;
  std::vector<float> loaded = to_floats(*a.x);
  if (!int4_deinterleaved(a.group)) return loaded;
  std::vector<float> ordered(loaded.size());
  for (int64_t r = 0; r < rows; ++r) order_like_int4(loaded.data() + r * k, k, a.group, ordered.data() + r * k);
  return ordered;
}

// Decode: every weight row streamed once against all (<= 4) rows of x.
Error few_rows(const Int4Args& a, const float* x, float* out) {
  const int64_t rows = a.plan.rows, k = a.plan.k, n = a.plan.n;
  // Ranges of at least ~64K weight elements: one row costs K multiply-adds per x row.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / k);
  const bool fused = int4_dot_rows_available(a.group);
  // The per-group sums of x the fused dot takes its zero points' term from.
  std::vector<float> xsum;
  if (fused) {
    const int64_t groups = a.plan.groups;
    xsum.assign(static_cast<size_t>(rows * groups), 0.0f);
    // x is deinterleaved: group g's values are at g * group / 2 in both halves.
    const int64_t half = a.group / 2;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        float sum = 0.0f;
        for (int64_t j = g * half; j < (g + 1) * half; ++j) sum += x[r * k + j] + x[r * k + k / 2 + j];
        xsum[static_cast<size_t>(r * groups + g)] = sum;
      }
  }
  return parallel_for(n, grain, [&](int64_t begin, int64_t end) -> Error {
    RowReader reader(a);
    std::vector<float> w(fused ? 0 : static_cast<size_t>(k));
    float acc[kQuantizedDotMaxRows];
    for (int64_t j = begin; j < end; ++j) {
      if (fused) {
        reader.dot(j, x, xsum.data(), rows, acc);
      } else {
        reader.unpack(j, w.data());
        dot_rows(w.data(), k, x, k, rows, acc);
      }
      for (int64_t r = 0; r < rows; ++r) out[r * n + j] = acc[r];
    }
    return Error::Ok;
  });
}

// Prefill: blocks of weight rows dequantized, then one GEMM per block.
Error many_rows(const Int4Args& a, const float* x, float* out) {
  const int64_t rows = a.plan.rows, k = a.plan.k, n = a.plan.n;
  const int64_t block = kBlockRows;
  const int64_t blocks = (n + block - 1) / block;
  const bool small = rows <= kSmallGemmMaxRows && small_gemm_available();
  return parallel_for(blocks, 1, [&](int64_t begin, int64_t end) -> Error {
    RowReader reader(a);
    std::vector<float> w(static_cast<size_t>(std::min(block, n) * k));
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * block, nb = std::min(block, n - n0);
      for (int64_t j = 0; j < nb; ++j) reader.unpack(n0 + j, w.data() + j * k);
      if (small) {
        small_gemm(rows, nb, k, 1.0f, x, k, w.data(), k, 0.0f, out + n0, n);
      } else {
        const MatrixView<const float> wt{w.data(), nb, k, k, 1};
        KILN_RETURN_IF_ERROR(gemm<float>({x, rows, k, k, 1}, wt.transposed(), {out + n0, rows, nb, n, 1}, 1.0f, 0.0f));
      }
    }
    return Error::Ok;
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_int4_linear(AtenTensorHandle x, AtenTensorHandle qweight,
                                                           AtenTensorHandle scale_zero, int64_t group_size,
                                                           AtenTensorHandle* ret0) {
  return guarded("aoti_torch_cpu_int4_linear", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(Int4Args a, check_args(x, qweight, scale_zero, group_size));
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(a.plan.out_sizes, a.x->dtype()));
    if (result.numel() == 0) return return_tensor(std::move(result), ret0, "ret0");
    if (a.plan.k == 0) {
      // An empty sum: all-zero bytes are 0.0 in every float dtype.
      std::memset(result.data_ptr(), 0, result.nbytes());
      return return_tensor(std::move(result), ret0, "ret0");
    }
    const std::vector<float> xs = ordered_rows(a);
    std::vector<float> out(static_cast<size_t>(a.plan.rows * a.plan.n));
    if (a.plan.rows <= kQuantizedDotMaxRows) {
      KILN_RETURN_IF_ERROR(few_rows(a, xs.data(), out.data()));
    } else {
      KILN_RETURN_IF_ERROR(many_rows(a, xs.data(), out.data()));
    }
    store_floats(out.data(), result);
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
