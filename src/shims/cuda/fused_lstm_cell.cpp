// aoti_torch_cuda__thnn_fused_lstm_cell: ATen's element-wise LSTM cell (the
// step after the two gate products, which the caller has done): one kernel
// (kernels/rnn_kernel.cu) in float32 (float64 for float64). Results as ATen
// lays them out: hy and cy contiguous like cx, workspace contiguous like
// input_gates, holding the activated gates i, f, g, o that a backward pass
// would read.
#include <string>

#include "devices/cuda/kernels/rnn_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error check_same(const TensorRef& ref, const TensorRef& t, const char* name) {
  if (t.dtype != ref.dtype)
    return aoti::invalid(std::string(name) + " " + t.describe() + " has another dtype than input_gates " +
                         ref.describe());
  if (t.device_index != ref.device_index)
    return aoti::invalid(std::string(name) + " is on CUDA device " + std::to_string(t.device_index) +
                         ", input_gates on " + std::to_string(ref.device_index));
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__thnn_fused_lstm_cell(
    AtenTensorHandle input_gates, AtenTensorHandle hidden_gates, AtenTensorHandle cx,
    AtenTensorHandle* input_bias, AtenTensorHandle* hidden_bias, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2) {
  return aoti::guarded("aoti_torch_cuda__thnn_fused_lstm_cell", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret2, "ret2"));
    KILN_ASSIGN_OR_RETURN(TensorRef ig, read_tensor(input_gates, "input_gates"));
    KILN_ASSIGN_OR_RETURN(TensorRef hg, read_tensor(hidden_gates, "hidden_gates"));
    KILN_ASSIGN_OR_RETURN(TensorRef c, read_tensor(cx, "cx"));
    KILN_RETURN_IF_ERROR(check_same(ig, hg, "hidden_gates"));
    KILN_RETURN_IF_ERROR(check_same(ig, c, "cx"));
    if (ig.dim() != 2 || hg.sizes != ig.sizes)
      return aoti::invalid("input_gates and hidden_gates must be 2-D of one shape [batch, 4 * hidden], got " +
                           ig.describe() + " and " + hg.describe());
    const int64_t batch = ig.sizes[0], gates = ig.sizes[1];
    if (gates % 4 != 0 || c.dim() != 2 || c.sizes[0] != batch || c.sizes[1] != gates / 4)
      return aoti::invalid("cx " + c.describe() + " must be [batch, hidden] for gates " + ig.describe() +
                           " of [batch, 4 * hidden]");

    const bool has_ib = input_bias != nullptr && *input_bias != nullptr;
    const bool has_hb = hidden_bias != nullptr && *hidden_bias != nullptr;
    if (has_ib != has_hb) return aoti::invalid("input_bias and hidden_bias must be given together");
    TensorRef ib, hb;
    if (has_ib) {
      KILN_ASSIGN_OR_RETURN(ib, read_tensor(*input_bias, "input_bias"));
      KILN_ASSIGN_OR_RETURN(hb, read_tensor(*hidden_bias, "hidden_bias"));
      KILN_RETURN_IF_ERROR(check_same(ig, ib, "input_bias"));
      KILN_RETURN_IF_ERROR(check_same(ig, hb, "hidden_bias"));
      if (ib.dim() != 1 || ib.sizes[0] != gates || hb.sizes != ib.sizes)
        return aoti::invalid("input_bias " + ib.describe() + " and hidden_bias " + hb.describe() +
                             " must be 1-D of the gates' size " + std::to_string(gates));
    }

    KILN_ASSIGN_OR_RETURN(OwnedHandle hy, new_contiguous(c.sizes, c.dtype, c.device_index));
    KILN_ASSIGN_OR_RETURN(OwnedHandle cy, new_contiguous(c.sizes, c.dtype, c.device_index));
    KILN_ASSIGN_OR_RETURN(OwnedHandle workspace, new_contiguous(ig.sizes, ig.dtype, ig.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef hy_ref, read_tensor(hy.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef cy_ref, read_tensor(cy.get(), "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef ws_ref, read_tensor(workspace.get(), "ret2"));

    FusedLstmCellParams p;
    p.dtype = ig.dtype;
    p.batch = batch;
    p.hidden = gates / 4;
    p.input_gates = ig.data;
    p.ig_stride0 = ig.strides[0];
    p.ig_stride1 = ig.strides[1];
    p.hidden_gates = hg.data;
    p.hg_stride0 = hg.strides[0];
    p.hg_stride1 = hg.strides[1];
    p.cx = c.data;
    p.cx_stride0 = c.strides[0];
    p.cx_stride1 = c.strides[1];
    if (has_ib) {
      p.input_bias = ib.data;
      p.hidden_bias = hb.data;
      p.ib_stride = ib.strides[0];
      p.hb_stride = hb.strides[0];
    }
    p.hy = hy_ref.data;
    p.cy = cy_ref.data;
    p.workspace = ws_ref.data;
    ScopedDevice scoped(ig.device_index);
    KILN_RETURN_IF_ERROR(scoped.status());
    KILN_RETURN_IF_ERROR(launch_fused_lstm_cell(p, current_stream(ig.device_index)));
    KILN_RETURN_IF_ERROR(return_handle(hy, ret0, "ret0"));
    KILN_RETURN_IF_ERROR(return_handle(cy, ret1, "ret1"));
    return return_handle(workspace, ret2, "ret2");
  });
}

}  // extern "C"
