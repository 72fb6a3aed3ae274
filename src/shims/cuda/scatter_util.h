// What the CUDA scatter family (scatter.cpp: scatter.src, scatter.value,
// scatter_reduce.two; index_reduce.cpp) shares: the plan's geometry, the
// index check with its one readback, self copied into out, and the run of
// the kernels for a reduction (identity, fold, mean's division).
#pragma once

#include <cuda_runtime_api.h>

#include <limits>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/strided_copy.h"
#include "devices/cuda/kernels/scatter_kernel.h"
#include "shims/common/scatter_args.h"
#include "shims/cuda/op_util.h"

namespace kiln::cudadev {

/// A tensor's strides with a 0-d tensor seen as 1-d of one element.
inline std::vector<int64_t> nonempty_strides(const TensorRef& t) {
  return t.dim() == 0 ? std::vector<int64_t>{1} : t.strides;
}

inline ScatterOp scatter_op(aoti::Reduction r) {
  switch (r) {
    case aoti::Reduction::Sum:
    case aoti::Reduction::Mean: return ScatterOp::Sum;
    case aoti::Reduction::Prod: return ScatterOp::Prod;
    case aoti::Reduction::Max: return ScatterOp::Max;
    case aoti::Reduction::Min: return ScatterOp::Min;
    default: return ScatterOp::Assign;
  }
}

inline const char* reduction_name(aoti::Reduction r) {
  switch (r) {
    case aoti::Reduction::Sum: return "sum";
    case aoti::Reduction::Mean: return "mean";
    case aoti::Reduction::Prod: return "prod";
    case aoti::Reduction::Max: return "amax";
    case aoti::Reduction::Min: return "amin";
    default: return "none";
  }
}

/// Error unless ATen's CUDA kernel for reduction `r` takes `dtype` (the
/// dtypes every device refuses were refused before, by aoti's checks).
inline Error cuda_reduction_dtype_check(aoti::Reduction r, DType dtype, const char* op) {
  if (scatter_reduce_supports(scatter_op(r), dtype)) return Error::Ok;
  return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(dtype) + ", which " + op +
                       " with reduce '" + reduction_name(r) + "' does not support on CUDA");
}

/// Error unless every tensor is on `self`'s device.
inline Error same_device(const TensorRef& t, const TensorRef& self, const char* name) {
  if (t.device_index == self.device_index) return Error::Ok;
  return aoti::invalid(std::string("argument '") + name + "' is on CUDA device " + std::to_string(t.device_index) +
                       " but self on " + std::to_string(self.device_index));
}

/// Fills `dims` of `p` from `sizes` (at least one dimension).
inline Error plan_dims(ScatterPlan& p, std::span<const int64_t> sizes) {
  if (sizes.size() > static_cast<size_t>(ScatterPlan::kMaxDims))
    return set_error(Error::NotSupported, "tensors of more than " + std::to_string(ScatterPlan::kMaxDims) +
                                              " dimensions are not supported by the CUDA scatter ops");
  p.ndim = static_cast<int>(sizes.size());
  p.numel = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    p.sizes[d] = sizes[d];
    p.numel *= sizes[d];
  }
  return Error::Ok;
}

/// Checks every index value of `p` (only its index is read): outside a CUDA
/// graph capture an out-of-range value is an error naming it and dimension
/// `error_dim` (one synchronisation); under capture nothing is read back and
/// the kernels skip such elements.
inline Error check_scatter_indices(const ScatterPlan& p, int64_t error_dim, int device, cudaStream_t stream) {
  if (p.numel == 0) return Error::Ok;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return Error::Ok;
  KILN_ASSIGN_OR_RETURN(DeviceBuffer flag, DeviceBuffer::allocate(sizeof(unsigned long long), device, stream));
  auto* first_bad = static_cast<unsigned long long*>(flag.get());
  KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_bad, 0xFF, sizeof(unsigned long long), stream));
  KILN_RETURN_IF_ERROR(launch_scatter_index_check(p, first_bad, stream));
  unsigned long long bad = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&bad, first_bad, sizeof(bad), cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  if (bad == std::numeric_limits<unsigned long long>::max()) return Error::Ok;
  // The offending value, read back for the message.
  int64_t rest = static_cast<int64_t>(bad), off = 0;
  for (int d = p.ndim - 1; d >= 0; --d) {
    off += (rest % p.sizes[d]) * p.index_strides[d];
    rest /= p.sizes[d];
  }
  int64_t v64 = 0;
  int32_t v32 = 0;
  const bool narrow = p.index_dtype == DType::Int32;
  const size_t bytes = narrow ? sizeof(v32) : sizeof(v64);
  void* dst = narrow ? static_cast<void*>(&v32) : static_cast<void*>(&v64);
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, static_cast<const char*>(p.index) + off * static_cast<int64_t>(bytes),
                                            bytes, cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return aoti::index_out_of_bounds(narrow ? v32 : v64, p.dim_size, error_dim, "index");
}

/// out = self (same sizes), unless they are the same elements already.
inline Error copy_self_to_out(const TensorRef& out, const TensorRef& self, cudaStream_t stream) {
  if ((out.data == self.data && out.strides == self.strides) || self.numel() == 0) return Error::Ok;
  return launch_strided_copy(out.data, out.strides.data(), self.data, self.strides.data(), self.sizes.data(),
                             self.dim(), self.element_bytes(), stream);
}

/// Folds src into `out` (already holding self) as reduction `r` along the
/// plan `p` (its out_strides are out's and count_strides contiguous over
/// out's sizes): the targets start from the identity without include_self,
/// and mean divides by the number of contributions.
inline Error run_scatter_reduction(const ScatterPlan& p, aoti::Reduction r, bool include_self, const TensorRef& out,
                                   int device, cudaStream_t stream) {
  const ScatterOp op = scatter_op(r);
  if (!include_self) KILN_RETURN_IF_ERROR(launch_scatter_identity(p, op, stream));
  KILN_RETURN_IF_ERROR(launch_scatter(p, op, stream));
  const int64_t n = out.numel();
  if (r != aoti::Reduction::Mean || n == 0) return Error::Ok;
  const size_t bytes = static_cast<size_t>(n) * sizeof(unsigned long long);
  KILN_ASSIGN_OR_RETURN(DeviceBuffer counts, DeviceBuffer::allocate(bytes, device, stream));
  auto* c = static_cast<unsigned long long*>(counts.get());
  KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c, 0, bytes, stream));
  KILN_RETURN_IF_ERROR(launch_scatter_count(p, c, stream));
  const std::vector<int64_t> sizes = aoti::nonempty_sizes(out.sizes), strides = nonempty_strides(out);
  KILN_ASSIGN_OR_RETURN(StridedIndexer out_index, indexer(sizes, strides));
  return launch_scatter_mean(out.data, out.dtype, out_index, c, include_self, n, stream);
}

}  // namespace kiln::cudadev
