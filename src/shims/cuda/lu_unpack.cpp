// aoti_torch_cuda_lu_unpack: P, L, U from the packed LU factorization
// linalg.lu_factor gives (LU_data [..., m, n], LU_pivots [..., min(m, n)]
// int32, 1-based row swaps) with A = P L U, on the device without a library
// (kernels/linalg_kernel.cu): L unit lower triangular [..., m, k], U upper
// triangular [..., k, n], P the permutation [..., m, m], all of LU_data's
// dtype and contiguous, as ATen's. A result not asked for (unpack_data /
// unpack_pivots false) is an empty [0]. The CPU op's argument rules and
// messages (shims/common/linalg_args.h): pivots whose batch dimensions differ
// from LU_data's are refused rather than broadcast.
//
// Every pivot is checked when P is asked for: outside a CUDA graph capture a
// pivot outside [1, m] is an error naming it (one synchronisation to read the
// check's flag), as ATen's CPU op and the device assert of its CUDA kernel;
// under capture nothing may synchronise, and such a pivot is skipped (no swap).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/linalg_kernel.h"
#include "shims/common/linalg_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// The first out-of-range pivot the kernel recorded (none: Ok), read back.
Error report_bad_pivot(const unsigned long long* first_bad, const TensorRef& pivots, const StridedIndexer& index,
                       int64_t m, cudaStream_t stream) {
  unsigned long long pos = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&pos, first_bad, sizeof(pos), cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  if (pos == std::numeric_limits<unsigned long long>::max()) return Error::Ok;
  int32_t value = 0;
  const int32_t* at = static_cast<const int32_t*>(pivots.data) + index.offset(static_cast<int64_t>(pos));
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&value, at, sizeof(value), cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return aoti::linalg::lu_pivot_range_error(value, m);
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_lu_unpack(AtenTensorHandle LU_data, AtenTensorHandle LU_pivots,
                                                          int32_t unpack_data, int32_t unpack_pivots,
                                                          AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                                          AtenTensorHandle* ret2) {
  return aoti::guarded("aoti_torch_cuda_lu_unpack", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret2, "ret2"));
    KILN_ASSIGN_OR_RETURN(TensorRef lu, read_tensor(LU_data, "LU_data"));
    KILN_ASSIGN_OR_RETURN(TensorRef pivots, read_tensor(LU_pivots, "LU_pivots"));
    KILN_RETURN_IF_ERROR(aoti::linalg::lu_unpack_args(lu.sizes, pivots.dtype, pivots.sizes));
    if (pivots.device_index != lu.device_index)
      return aoti::invalid("lu_unpack: 'LU_pivots' is on CUDA device " + std::to_string(pivots.device_index) +
                           " but 'LU_data' on " + std::to_string(lu.device_index));
    const DType dt = lu.dtype;
    ElementBits one;
    // ATen's CUDA tril/triu (which build L and U) have no float8 kernels.
    if (!one_bits(dt, &one))
      return aoti::invalid(std::string("lu_unpack: 'LU_data' has dtype ") + dtype_name(dt) +
                           ", which lu_unpack does not support on CUDA");
    const int64_t m = lu.sizes[lu.sizes.size() - 2];
    const int64_t n = lu.sizes.back();
    const int64_t k = std::min(m, n);
    const std::vector<int64_t> batch = aoti::linalg::batch_sizes(lu.sizes);
    const int64_t batches = aoti::linalg::product(batch);
    const std::vector<int64_t> none{0};
    const int device = lu.device_index;
    ScopedDevice scoped(device);
    KILN_RETURN_IF_ERROR(scoped.status());
    const cudaStream_t stream = current_stream(device);
    using aoti::linalg::with_matrix;
    KILN_ASSIGN_OR_RETURN(OwnedHandle p_out, new_contiguous(unpack_pivots ? with_matrix(batch, m, m) : none, dt, device));
    KILN_ASSIGN_OR_RETURN(OwnedHandle l_out, new_contiguous(unpack_data ? with_matrix(batch, m, k) : none, dt, device));
    KILN_ASSIGN_OR_RETURN(OwnedHandle u_out, new_contiguous(unpack_data ? with_matrix(batch, k, n) : none, dt, device));
    const size_t elem = lu.element_bytes();
    if (unpack_data) {
      KILN_ASSIGN_OR_RETURN(TensorRef l, read_tensor(l_out.get(), "ret1"));
      KILN_ASSIGN_OR_RETURN(TensorRef u, read_tensor(u_out.get(), "ret2"));
      KILN_ASSIGN_OR_RETURN(StridedIndexer lu_index, indexer(lu));
      KILN_RETURN_IF_ERROR(launch_lu_unpack_data(lu.data, lu_index, l.data, u.data, batches, m, n, elem, one, stream));
    }
    if (unpack_pivots && batches * m > 0) {
      KILN_ASSIGN_OR_RETURN(TensorRef p, read_tensor(p_out.get(), "ret0"));
      KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p.data, 0, static_cast<size_t>(batches * m * m) * elem, stream));
      KILN_ASSIGN_OR_RETURN(StridedIndexer pivots_index, indexer(pivots));
      KILN_ASSIGN_OR_RETURN(DeviceBuffer perm,
                            DeviceBuffer::allocate(static_cast<size_t>(batches * m) * sizeof(int64_t), device, stream));
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
      const bool check = capture == cudaStreamCaptureStatusNone && k > 0;
      DeviceBuffer flag;
      if (check) {
        KILN_ASSIGN_OR_RETURN(flag, DeviceBuffer::allocate(sizeof(unsigned long long), device, stream));
        KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flag.get(), 0xFF, sizeof(unsigned long long), stream));
      }
      auto* first_bad = static_cast<unsigned long long*>(flag.get());
      KILN_RETURN_IF_ERROR(launch_lu_unpack_pivots(static_cast<const int32_t*>(pivots.data), pivots_index, p.data,
                                                   static_cast<int64_t*>(perm.get()), batches, m, k, elem, one,
                                                   first_bad, stream));
      if (check) KILN_RETURN_IF_ERROR(report_bad_pivot(first_bad, pivots, pivots_index, m, stream));
    }
    KILN_RETURN_IF_ERROR(return_handle(p_out, ret0, "ret0"));
    KILN_RETURN_IF_ERROR(return_handle(l_out, ret1, "ret1"));
    return return_handle(u_out, ret2, "ret2");
  });
}

}  // extern "C"
