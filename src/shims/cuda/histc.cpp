// aoti_torch_cuda_histc: counts of elements in `bins` equal-width bins over
// [min, max], in a new contiguous tensor of self's floating dtype owned by the
// caller (kernels/search_kernel.cu). As ATen's CUDA kernel: min and max are
// taken in self's dtype; min == max means the data's own min and max (found on
// the device); equal edges are widened by 1; elements outside the edges and
// NaNs are not counted; max falls in the last bin. A data range that is NaN or
// infinite is an error, as ATen's, which costs one synchronisation to read the
// range back; under CUDA graph capture nothing may synchronise, and such a
// range leaves every bin 0 instead. Explicit edges (MoE routing's) never
// synchronise.
#include <cmath>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/search_kernel.h"
#include "shims/common/histc_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

using aoti::hist::num;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_histc(AtenTensorHandle self_h, int64_t bins, double min, double max,
                                                      AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_histc", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    const DType dt = self.dtype;
    KILN_RETURN_IF_ERROR(aoti::hist::histc_args(dt, bins, min, max));
    // ATen compares min and max in the accumulate type (float32, float64 for
    // float64), then keeps them in self's dtype.
    const DType acc = dt == DType::Float64 ? DType::Float64 : DType::Float32;
    const double min_acc = round_to_floating(min, acc), max_acc = round_to_floating(max, acc);
    const bool data_range = min_acc == max_acc && self.numel() > 0;
    double lo = round_to_floating(min_acc, dt), hi = round_to_floating(max_acc, dt);
    if (!data_range) {
      if (lo == hi) {
        lo = round_to_floating(lo - 1, dt);
        hi = round_to_floating(hi + 1, dt);
      }
      if (!std::isfinite(lo) || !std::isfinite(hi)) return aoti::hist::range_not_finite(lo, hi);
      if (!(lo < hi))
        return aoti::invalid("argument 'max' (" + num(hi) + ") must be larger than 'min' (" + num(lo) +
                             ") in dtype " + dtype_name(dt));
    }
    const std::vector<int64_t> sizes{bins};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(sizes, dt, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(self));
    const cudaStream_t stream = current_stream(self.device_index);
    DeviceBuffer range;
    if (data_range) {
      KILN_ASSIGN_OR_RETURN(range, DeviceBuffer::allocate(2 * sizeof(double), self.device_index, stream));
    }
    KILN_RETURN_IF_ERROR(launch_histc(self.data, dt, in_index, self.numel(), o.data, bins, data_range, lo, hi,
                                      static_cast<double*>(range.get()), stream));
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    if (data_range && capture == cudaStreamCaptureStatusNone) {
      double edges[2] = {0, 0};
      KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(edges, range.get(), sizeof edges, cudaMemcpyDeviceToHost, stream));
      KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
      // The kernel leaves NaN edges for a range with a NaN, an infinity or no width.
      if (std::isnan(edges[0]) || std::isnan(edges[1]))
        return aoti::invalid("the data range of 'self' is not finite (it holds NaN or infinity), so histc has no "
                             "bins to count into");
    }
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
