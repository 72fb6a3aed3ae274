#include "shims/cuda/attention_util.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/device/device_attributes.h"
#include "devices/cuda/kernels/attention_mma_kernel.h"
#include "shims/common/shim_util.h"

namespace kiln::cudadev {
namespace {

constexpr int32_t kCuda = static_cast<int32_t>(DeviceType::CUDA);
constexpr int32_t kCpu = static_cast<int32_t>(DeviceType::CPU);

// Dense, non-overlapping strides (in some dimension order)?
bool non_overlapping_and_dense(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<size_t> dims(sizes.size());
  std::iota(dims.begin(), dims.end(), 0);
  std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (size_t d : dims) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// Dense strides for `shape` that keep `like`'s dimension order (outermost =
// largest stride; ties keep dimension order).
std::vector<int64_t> strides_matching(const std::vector<int64_t>& shape, const std::vector<int64_t>& like) {
  std::vector<int> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return like[a] > like[b]; });
  return dense_strides_in_order(shape, order);
}

}  // namespace

std::vector<int64_t> attention_like_query(const TensorRef& q, const std::vector<int64_t>& shape) {
  if (shape == q.sizes && non_overlapping_and_dense(q.sizes, q.strides)) return q.strides;
  return strides_matching(shape, q.strides);
}

Result<OwnedHandle> zero_cpu_tensor(std::vector<int64_t> sizes, DType dtype) {
  const auto strides = contiguous_strides(sizes);
  KILN_ASSIGN_OR_RETURN(OwnedHandle h, new_tensor(sizes, strides, dtype, kCpu, 0));
  void* data = nullptr;
  if (aoti_torch_get_data_ptr(h.get(), &data) != 0) return set_error(Error::Internal, "reading a CPU tensor's data");
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n > 0 && data != nullptr) std::memset(data, 0, static_cast<size_t>(n) * element_size(dtype));
  return h;
}

Result<OwnedHandle> zero_cuda_tensor(std::vector<int64_t> sizes, DType dtype, int device) {
  const auto strides = contiguous_strides(sizes);
  KILN_ASSIGN_OR_RETURN(OwnedHandle h, new_tensor(sizes, strides, dtype, kCuda, device));
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n > 0) {
    void* data = nullptr;
    if (aoti_torch_get_data_ptr(h.get(), &data) != 0)
      return set_error(Error::Internal, "reading a CUDA tensor's data");
    ScopedDevice scoped(device);
    KILN_RETURN_IF_ERROR(scoped.status());
    KILN_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(data, 0, static_cast<size_t>(n) * element_size(dtype), current_stream(device)));
  }
  return h;
}

Result<OwnedHandle> new_cuda_tensor(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                    DType dtype, int device) {
  return new_tensor(sizes, strides, dtype, kCuda, device);
}

Error check_attention_bias(const TensorRef& bias, const TensorRef& query, const char* name) {
  if (bias.dtype != DType::Bool && bias.dtype != DType::Float32 && bias.dtype != query.dtype)
    return set_error(Error::NotSupported, std::string(name) + " of dtype " + dtype_name(bias.dtype) +
                                              " (expected bool, float32 or the query's dtype)");
  if (bias.device_index != query.device_index || bias.dim() > 4)
    return set_error(Error::InvalidArgument, std::string(name) + " " + bias.describe() + " is not usable here");
  return Error::Ok;
}

Error set_attention_bias(const TensorRef& bias, const char* name, AttentionParams& p) {
  const int64_t full[4] = {p.B, p.Hq, p.L, p.S};
  if (bias.sizes.size() > 4)
    return set_error(Error::InvalidArgument, std::string(name) + " " + bias.describe() + " has more than 4 dimensions");
  const size_t lead = 4 - bias.sizes.size();
  for (size_t d = 0; d < 4; ++d) {
    if (d < lead) {
      p.bias_strides[d] = 0;
      continue;
    }
    const int64_t size = bias.sizes[d - lead];
    if (size == full[d]) {
      p.bias_strides[d] = bias.strides[d - lead];
    } else if (size == 1) {
      p.bias_strides[d] = 0;
    } else {
      return set_error(Error::InvalidArgument, std::string(name) + " " + bias.describe() + " does not broadcast to [" +
                                                   std::to_string(p.B) + ", " + std::to_string(p.Hq) + ", " +
                                                   std::to_string(p.L) + ", " + std::to_string(p.S) + "]");
    }
  }
  p.bias = bias.data;
  p.bias_dtype = bias.dtype;
  return Error::Ok;
}

Error run_attention(const AttentionParams& p, int device) {
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  const cudaStream_t stream = current_stream(device);
  KILN_ASSIGN_OR_RETURN(const int sm_count, multiprocessor_count(device));
  KILN_ASSIGN_OR_RETURN(const bool tensor_cores, mma_attention_available(device));
  const AttentionPlan plan = plan_attention(p, sm_count, tensor_cores);
  // Split-KV scratch (partial results per key chunk): from the caching
  // allocator on the op's stream, so freeing it at scope exit is ordered
  // after the kernels queued below.
  DeviceBuffer workspace;
  if (plan.workspace_bytes > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, DeviceBuffer::allocate(plan.workspace_bytes, device, stream));
  }
  return launch_attention(p, plan, workspace.get(), stream);
}

}  // namespace kiln::cudadev
