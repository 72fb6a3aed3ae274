// aoti_torch_cuda_grouped_mm: Kiln's op kiln::grouped_mm (python/kiln/exporter/kiln_ops.py)
// on the GPU, the experts' product of a Mixture-of-Experts layer. offs stays
// on the device and is never read by the host, so the op does not synchronise
// the stream and can be recorded in a CUDA graph; the kernels
// (kernels/grouped_mm_kernel.h) find each row's group from offs themselves.
// Unlike the CPU op, offs out of order or past S is therefore not reported:
// it is clamped into range on the device (never an access outside the
// tensors) and gives unspecified rows.
#include <string>
#include <vector>

#include "shims/common/shim_util.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/kernels/grouped_mm_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"
#include "shims/cuda/tensor_ref.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error grouped_mm(const TensorRef& x, const TensorRef& w, const TensorRef& offs, AtenTensorHandle* ret0) {
  if (x.dim() != 2 || w.dim() != 3 || offs.dim() != 1)
    return set_error(Error::InvalidArgument, "grouped_mm: expected input [S, K], weight [G, K, N], offs [G]; got "
                                             "input " + x.describe() + ", weight " + w.describe() + ", offs " +
                                                 offs.describe());
  if (w.sizes[1] != x.sizes[1] || offs.sizes[0] != w.sizes[0])
    return set_error(Error::InvalidArgument, "grouped_mm: input " + x.describe() + ", weight " + w.describe() +
                                                 " and offs " + offs.describe() +
                                                 " disagree in K or the number of groups");
  if (w.dtype != x.dtype)
    return set_error(Error::InvalidArgument, "grouped_mm: weight " + w.describe() + " and input " + x.describe() +
                                                 " differ in dtype");
  if (x.device_index != w.device_index || x.device_index != offs.device_index)
    return set_error(Error::InvalidArgument, "grouped_mm: input, weight and offs are on different GPUs");
  const GroupedMmParams p{.x = x.data, .w = w.data, .offs = offs.data, .out = nullptr, .dtype = x.dtype,
                          .offs_dtype = offs.dtype, .S = x.sizes[0], .K = x.sizes[1], .N = w.sizes[2],
                          .G = w.sizes[0], .x_rs = x.strides[0], .x_ks = x.strides[1], .w_gs = w.strides[0],
                          .w_ks = w.strides[1], .w_ns = w.strides[2], .offs_stride = offs.strides[0]};
  if (const char* why = grouped_mm_unsupported(p))
    return set_error(Error::NotSupported, std::string("grouped_mm: input ") + x.describe() + ", weight " +
                                              w.describe() + ", offs " + offs.describe() + ": " + why);
  const std::vector<int64_t> sizes = {p.S, p.N};
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(sizes, x.dtype, x.device_index));
  KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "result"));
  GroupedMmParams run = p;
  run.out = o.data;
  ScopedDevice scoped(x.device_index);
  KILN_RETURN_IF_ERROR(scoped.status());
  KILN_RETURN_IF_ERROR(launch_grouped_mm(run, current_stream(x.device_index)));
  return return_handle(out, ret0, "ret0");
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_grouped_mm(AtenTensorHandle input, AtenTensorHandle weight,
                                                           AtenTensorHandle offs, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_grouped_mm", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(input, "input"));
    KILN_ASSIGN_OR_RETURN(TensorRef w, read_tensor(weight, "weight"));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(offs, "offs"));
    return grouped_mm(x, w, o, ret0);
  });
}

}  // extern "C"
