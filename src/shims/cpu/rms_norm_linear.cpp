// aoti_torch_cpu_rms_norm_linear: Kiln's fused op kiln::rms_norm_linear
// (python/kiln/exporter/kiln_ops.py), which the export pass
// norm_linear_fusion.py puts where an RMSNorm feeds a bias-free linear. On the
// CPU it is the reference for the devices that fuse the two for speed; it
// computes what the unfused graph does: the norm in float32, its result
// rounded to x's dtype, then the product through the mm fallbacks' matmul.
#include <cmath>
#include <string>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "devices/cpu/float_io.h"
#include "shims/cpu/matmul.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

struct NormLinearArgs {
  Tensor* x;
  Tensor* norm_weight;
  Tensor* weight;
  int64_t rows, k, n;
};

Result<NormLinearArgs> check_args(AtenTensorHandle x_h, AtenTensorHandle nw_h, AtenTensorHandle w_h) {
  KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(x_h, "x"));
  KILN_ASSIGN_OR_RETURN(Tensor * nw, cpu_tensor_arg(nw_h, "norm_weight"));
  KILN_ASSIGN_OR_RETURN(Tensor * w, cpu_tensor_arg(w_h, "weight"));
  const DType dt = x->dtype();
  if (dt != DType::Float32 && dt != DType::BFloat16 && dt != DType::Float16)
    return set_error(Error::NotSupported, std::string("rms_norm_linear: dtype ") + dtype_name(dt) +
                                              " is not supported (float32, bfloat16, float16)");
  KILN_RETURN_IF_ERROR(same_dtype(*w, dt, "weight"));
  if (!is_float_dtype(nw->dtype())) return invalid("rms_norm_linear: norm_weight " + nw->describe() + " is not float");
  if (x->dim() < 1 || w->dim() != 2 || nw->dim() != 1)
    return invalid("rms_norm_linear: expected x [..., K], norm_weight [K], weight [N, K]; got x " + x->describe() +
                   ", norm_weight " + nw->describe() + ", weight " + w->describe());
  const int64_t k = x->size(x->dim() - 1);
  if (nw->size(0) != k || w->size(1) != k)
    return invalid("rms_norm_linear: the last dim of x (" + std::to_string(k) + ") must match norm_weight " +
                   nw->describe() + " and the columns of weight " + w->describe());
  return NormLinearArgs{x, nw, w, k == 0 ? 0 : x->numel() / k, k, w->size(0)};
}

// rows x k normalised rows (float32 values of x's dtype) into `y`.
void normalise(const NormLinearArgs& a, double eps, double weight_offset, std::vector<float>& y) {
  y = to_floats(*a.x);
  const std::vector<float> g = to_floats(*a.norm_weight);
  std::vector<float> scale(g.size());
  for (size_t i = 0; i < g.size(); ++i) scale[i] = g[i] + static_cast<float>(weight_offset);
  for (int64_t r = 0; r < a.rows; ++r) {
    float* row = y.data() + r * a.k;
    float sum = 0.0f;
    for (int64_t i = 0; i < a.k; ++i) sum += row[i] * row[i];
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(a.k) + static_cast<float>(eps));
    for (int64_t i = 0; i < a.k; ++i) row[i] = (row[i] * inv) * scale[static_cast<size_t>(i)];
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_rms_norm_linear(AtenTensorHandle x, AtenTensorHandle norm_weight,
                                                               AtenTensorHandle weight, double eps,
                                                               double weight_offset, AtenTensorHandle* ret0) {
  return guarded("aoti_torch_cpu_rms_norm_linear", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(NormLinearArgs a, check_args(x, norm_weight, weight));
    std::vector<int64_t> out_sizes = a.x->sizes();
    out_sizes.back() = a.n;
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(out_sizes, contiguous_strides(out_sizes),
                                                            a.x->dtype(), Device{}));
    if (out.numel() > 0) {
      std::vector<float> y;
      normalise(a, eps, weight_offset, y);
      // The unfused graph rounds the norm's result to x's dtype before the product.
      const std::vector<int64_t> rows_k = {a.rows, a.k};
      KILN_ASSIGN_OR_RETURN(Tensor normed,
                            Tensor::empty_strided(rows_k, contiguous_strides(rows_k), a.x->dtype(), Device{}));
      store_floats(y.data(), normed);
      // out [rows, n] = normed [rows, k] @ weight^T [k, n], as views of out and weight.
      const Tensor out_rows(out.storage(), out.dtype(), {a.rows, a.n}, {a.n, 1}, out.storage_offset());
      const Tensor weight_t(a.weight->storage(), a.weight->dtype(), {a.k, a.n},
                            {a.weight->stride(1), a.weight->stride(0)}, a.weight->storage_offset());
      KILN_RETURN_IF_ERROR(matmul(out_rows, nullptr, normed, weight_t, 0.0, 1.0, 0));
    }
    AtenTensorHandle h = new_handle(std::move(out));
    if (h == nullptr) return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
    *ret0 = h;
    return Error::Ok;
  });
}

}  // extern "C"
