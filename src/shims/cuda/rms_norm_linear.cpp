// aoti_torch_cuda_rms_norm_linear: Kiln's fused op kiln::rms_norm_linear
// (python/kiln/exporter/kiln_ops.py) on the GPU, as the GEMV kernel with its
// RMSNorm prologue: one launch where the unfused graph has a norm kernel and
// a product. The export pass puts the op only where x has at most
// kGemvMaxRows rows (decode), which is where the GEMV applies; anything else
// is refused with the reason.
#include <string>
#include <vector>

#include "shims/common/shim_util.h"
#include "devices/cuda/cuda_check.h"
#include "shims/cuda/cuda_shims.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/device/device_attributes.h"
#include "devices/cuda/kernels/gemv_kernel.h"
#include "shims/cuda/tensor_ref.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error rms_norm_linear(const TensorRef& x, const TensorRef& g, const TensorRef& w, double eps, double offset,
                      AtenTensorHandle* ret0) {
  if (x.dim() < 1 || w.dim() != 2 || g.dim() != 1)
    return set_error(Error::InvalidArgument, "rms_norm_linear: expected x [..., K], norm_weight [K], weight [N, K]; "
                                             "got x " + x.describe() + ", norm_weight " + g.describe() + ", weight " +
                                             w.describe());
  const int64_t k = x.sizes.back(), n = w.sizes[0];
  if (g.sizes[0] != k || w.sizes[1] != k)
    return set_error(Error::InvalidArgument, "rms_norm_linear: the last dim of x (" + std::to_string(k) +
                                                 ") must match norm_weight " + g.describe() + " and weight " +
                                                 w.describe());
  if (w.dtype != x.dtype)
    return set_error(Error::InvalidArgument, "rms_norm_linear: weight " + w.describe() + " and x " + x.describe() +
                                                 " differ in dtype");
  if (x.device_index != w.device_index || x.device_index != g.device_index)
    return set_error(Error::InvalidArgument, "rms_norm_linear: x, norm_weight and weight are on different GPUs");
  const int64_t rows = k == 0 ? 0 : x.numel() / k;
  // x's rows must be contiguous and evenly spaced (a plain [..., K] tensor).
  const std::vector<int64_t> dense = contiguous_strides(x.sizes);
  if (x.strides != dense || g.strides[0] != 1)
    return set_error(Error::NotSupported, "rms_norm_linear: x " + x.describe() + " or norm_weight " + g.describe() +
                                              " is not contiguous");

  std::vector<int64_t> out_sizes = x.sizes;
  out_sizes.back() = n;
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(out_sizes, contiguous_strides(out_sizes), x.dtype,
                                                    static_cast<int32_t>(DeviceType::CUDA), x.device_index));
  KILN_ASSIGN_OR_RETURN(TensorRef y, read_tensor(out.get(), "result"));
  if (rows > 0 && n > 0) {
    const GemvParams p{.a = x.data, .w = w.data, .out = y.data, .dtype = x.dtype, .M = rows, .N = n, .K = k,
                       .lda = k, .ldw = w.strides[0], .w_ks = w.strides[1], .out_rs = n,
                       .norm_weight = g.data, .norm_dtype = g.dtype, .norm_eps = static_cast<float>(eps),
                       .norm_offset = static_cast<float>(offset)};
    if (const char* why = gemv_unsupported(p))
      return set_error(Error::NotSupported, std::string("rms_norm_linear: the fused GEMV does not take x ") +
                                                x.describe() + " and weight " + w.describe() + ": " + why);
    ScopedDevice scoped(x.device_index);
    KILN_RETURN_IF_ERROR(scoped.status());
    KILN_ASSIGN_OR_RETURN(const int sm_count, multiprocessor_count(x.device_index));
    KILN_RETURN_IF_ERROR(launch_gemv(p, sm_count, current_stream(x.device_index)));
  }
  *ret0 = out.release();
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_rms_norm_linear(AtenTensorHandle x, AtenTensorHandle norm_weight,
                                                                AtenTensorHandle weight, double eps,
                                                                double weight_offset, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_rms_norm_linear", [&]() -> Error {
    if (ret0 == nullptr) return set_error(Error::InvalidArgument, "output argument 'ret0' is null");
    KILN_ASSIGN_OR_RETURN(TensorRef xr, read_tensor(x, "x"));
    KILN_ASSIGN_OR_RETURN(TensorRef gr, read_tensor(norm_weight, "norm_weight"));
    KILN_ASSIGN_OR_RETURN(TensorRef wr, read_tensor(weight, "weight"));
    return rms_norm_linear(xr, gr, wr, eps, weight_offset, ret0);
  });
}

}  // extern "C"
