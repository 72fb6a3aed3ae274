// The host-staged CUDA ops (host_staged.h): one definition per entry of
// host_staged_ops.inc, all through HostStaged, and the copies they share.
//
// Tensors cross as the bytes their view spans from element 0 (strided_extent_bytes), so a host copy
// has exactly the device tensor's sizes and strides, gaps and overlaps included, and the CPU op sees
// the layout the model library handed over. Written arguments go back element by element when they
// have gaps, so memory between their elements is never written.
#include "shims/cuda/host_staged.h"

#include <algorithm>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/device/strided_copy.h"
#include "shims/common/layout_util.h"

namespace kiln::cudadev {
namespace {

constexpr int32_t kCpu = static_cast<int32_t>(DeviceType::CPU);
constexpr int32_t kCuda = static_cast<int32_t>(DeviceType::CUDA);

Result<int64_t> span_bytes(const TensorRef& t) {
  for (int64_t s : t.strides)
    if (s < 0) return set_error(Error::NotSupported, "negative strides cannot be staged: " + t.describe());
  return strided_extent_bytes(t.sizes, t.strides, t.dtype);
}

Error copy_bytes(void* dst, const void* src, int64_t nbytes, cudaMemcpyKind kind, int device, cudaStream_t stream) {
  if (nbytes == 0) return Error::Ok;
  ScopedDevice on(device);
  KILN_RETURN_IF_ERROR(on.status());
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, static_cast<size_t>(nbytes), kind, stream));
  return Error::Ok;
}

}  // namespace

StagedCall::~StagedCall() {
  // Returns the CPU op produced that finish() did not hand over (on failure).
  for (const Return& r : returns_)
    if (*r.slot != nullptr) (void)aoti_torch_delete_tensor_object(*r.slot);
}

std::string StagedCall::param_name(size_t index) const {
  // param_names_ is the macro's "(a, b, c)".
  std::string names(param_names_);
  size_t start = names.find_first_not_of("( ");
  for (size_t i = 0; i < index && start != std::string::npos; ++i) {
    start = names.find(',', start);
    if (start != std::string::npos) start = names.find_first_not_of(", ", start);
  }
  if (start == std::string::npos) return "parameter " + std::to_string(index);
  const size_t end = names.find_first_of(",)", start);
  return names.substr(start, end - start);
}

cudaStream_t StagedCall::stream_of(int device) {
  if (std::find(devices_.begin(), devices_.end(), device) == devices_.end()) devices_.push_back(device);
  return current_stream(device);
}

Error StagedCall::not_capturing(int device) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(current_stream(device), &capture));
  if (capture != cudaStreamCaptureStatusNone)
    return set_error(Error::NotSupported, std::string(op_) +
                                              " runs through the host on CUDA and cannot be recorded in a CUDA "
                                              "graph");
  return Error::Ok;
}

Result<AtenTensorHandle> StagedCall::stage(AtenTensorHandle handle, bool written, const std::string& name) {
  bool defined = false;
  // Null and undefined handles are the CPU op's to report.
  if (handle == nullptr || aoti_torch_is_defined(handle, &defined) != 0 || !defined) return handle;
  KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(handle, name.c_str(), /*require_cuda=*/false));
  if (t.device_type != kCuda) return handle;
  if (device_ < 0) device_ = t.device_index;
  KILN_RETURN_IF_ERROR(not_capturing(t.device_index));
  KILN_ASSIGN_OR_RETURN(int64_t nbytes, span_bytes(t));
  KILN_ASSIGN_OR_RETURN(OwnedHandle host, new_tensor(t.sizes, t.strides, t.dtype, kCpu, 0));
  void* host_data = nullptr;
  if (aoti_torch_get_data_ptr(host.get(), &host_data) != 0) return set_error(Error::Internal, last_error_message());
  KILN_RETURN_IF_ERROR(copy_bytes(host_data, t.data, nbytes, cudaMemcpyDeviceToHost, t.device_index,
                                  stream_of(t.device_index)));
  const AtenTensorHandle staged = host.get();
  if (written) writes_.push_back(WriteBack{std::move(t), staged});
  host_.push_back(std::move(host));
  return staged;
}

Result<AtenTensorHandle> StagedCall::tensor(AtenTensorHandle handle, bool written, size_t index) {
  return stage(handle, written, param_name(index));
}

Result<AtenTensorHandle*> StagedCall::optional_tensor(AtenTensorHandle* handle, size_t index) {
  if (handle == nullptr || *handle == nullptr) return handle;
  KILN_ASSIGN_OR_RETURN(AtenTensorHandle staged, stage(*handle, false, param_name(index)));
  slots_.push_back(staged);
  return &slots_.back();
}

Result<const AtenTensorHandle*> StagedCall::tensor_list(const AtenTensorHandle* list, int64_t len, size_t index) {
  if (list == nullptr || len <= 0) return list;
  std::vector<AtenTensorHandle>& staged = lists_.emplace_back(static_cast<size_t>(len));
  const std::string name = param_name(index);
  for (int64_t i = 0; i < len; ++i) {
    KILN_ASSIGN_OR_RETURN(staged[static_cast<size_t>(i)],
                          stage(list[i], false, name + "[" + std::to_string(i) + "]"));
  }
  return staged.data();
}

Result<const AtenTensorHandle**> StagedCall::optional_tensor_list(const AtenTensorHandle** list, int64_t len,
                                                                  size_t index) {
  if (list == nullptr || len <= 0) return list;
  std::vector<const AtenTensorHandle*>& staged = optional_lists_.emplace_back(static_cast<size_t>(len), nullptr);
  const std::string name = param_name(index);
  for (int64_t i = 0; i < len; ++i) {
    const AtenTensorHandle* entry = list[i];
    if (entry == nullptr || *entry == nullptr) {
      staged[static_cast<size_t>(i)] = entry;
      continue;
    }
    KILN_ASSIGN_OR_RETURN(AtenTensorHandle h, stage(*entry, false, name + "[" + std::to_string(i) + "]"));
    slots_.push_back(h);
    staged[static_cast<size_t>(i)] = &slots_.back();
  }
  return staged.data();
}

AtenTensorHandle* StagedCall::return_slot(AtenTensorHandle* caller, bool column_major) {
  if (caller == nullptr) return nullptr;
  slots_.push_back(nullptr);
  returns_.push_back(Return{caller, &slots_.back(), column_major});
  return returns_.back().slot;
}

Error StagedCall::synchronize() {
  for (int device : devices_) {
    ScopedDevice on(device);
    KILN_RETURN_IF_ERROR(on.status());
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(current_stream(device)));
  }
  return Error::Ok;
}

Result<OwnedHandle> StagedCall::to_device(AtenTensorHandle host, bool column_major, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(TensorRef h, read_tensor(host, name.c_str(), /*require_cuda=*/false));
  std::vector<int64_t> strides = h.strides;
  if (column_major) {
    if (h.dim() != 2)
      return set_error(Error::Internal, name + ": a column-major result must be 2-D, got " + h.describe());
    strides = {1, h.sizes[0]};
  }
  // A result with no CUDA tensor among the arguments goes to the current device.
  if (device_ < 0) {
    KILN_ASSIGN_OR_RETURN(device_, resolve_device(-1));
    KILN_RETURN_IF_ERROR(not_capturing(device_));
  }
  OwnedHandle relaid;
  if (strides != h.strides) {
    // Relaid out on the host, where a strided copy is cheap, then moved as one block.
    KILN_ASSIGN_OR_RETURN(relaid, new_tensor(h.sizes, strides, h.dtype, kCpu, 0));
    if (aoti_torch_copy_(relaid.get(), host, 0) != 0) return set_error(Error::Internal, last_error_message());
    KILN_ASSIGN_OR_RETURN(h, read_tensor(relaid.get(), name.c_str(), /*require_cuda=*/false));
  }
  KILN_ASSIGN_OR_RETURN(int64_t nbytes, span_bytes(h));
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(h.sizes, h.strides, h.dtype, kCuda, device_));
  KILN_ASSIGN_OR_RETURN(TensorRef d, read_tensor(out.get(), name.c_str()));
  KILN_RETURN_IF_ERROR(copy_bytes(d.data, h.data, nbytes, cudaMemcpyHostToDevice, device_, stream_of(device_)));
  if (relaid.get() != nullptr) {
    // The relaid copy dies here: the copy must have read it.
    ScopedDevice on(device_);
    KILN_RETURN_IF_ERROR(on.status());
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(current_stream(device_)));
  }
  return out;
}

Error StagedCall::write_back(const WriteBack& w) {
  const TensorRef& d = w.device;
  KILN_ASSIGN_OR_RETURN(int64_t nbytes, span_bytes(d));
  void* host_data = nullptr;
  if (aoti_torch_get_data_ptr(w.host, &host_data) != 0) return set_error(Error::Internal, last_error_message());
  cudaStream_t stream = stream_of(d.device_index);
  if (aoti::non_overlapping_and_dense(d.sizes, d.strides))
    return copy_bytes(d.data, host_data, nbytes, cudaMemcpyHostToDevice, d.device_index, stream);
  // Gaps between the elements may belong to other tensors: the span goes to
  // scratch memory and only the elements are copied from there.
  KILN_ASSIGN_OR_RETURN(DeviceBuffer scratch, DeviceBuffer::allocate(static_cast<size_t>(nbytes), d.device_index, stream));
  KILN_RETURN_IF_ERROR(copy_bytes(scratch.get(), host_data, nbytes, cudaMemcpyHostToDevice, d.device_index, stream));
  ScopedDevice on(d.device_index);
  KILN_RETURN_IF_ERROR(on.status());
  return launch_strided_copy(d.data, d.strides.data(), scratch.get(), d.strides.data(), d.sizes.data(), d.dim(),
                             d.element_bytes(), stream);
}

Error StagedCall::finish() {
  std::vector<OwnedHandle> results;
  results.reserve(returns_.size());
  for (size_t i = 0; i < returns_.size(); ++i) {
    const Return& r = returns_[i];
    bool defined = false;
    if (*r.slot == nullptr || aoti_torch_is_defined(*r.slot, &defined) != 0 || !defined) {
      // No tensor, or an undefined one (device-neutral): handed over as it is.
      results.emplace_back(std::exchange(*r.slot, nullptr));
      continue;
    }
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, to_device(*r.slot, r.column_major, "ret" + std::to_string(i)));
    results.push_back(std::move(out));
  }
  for (const WriteBack& w : writes_) KILN_RETURN_IF_ERROR(write_back(w));
  // The host copies are freed when this call ends: the copies from them must be done.
  KILN_RETURN_IF_ERROR(synchronize());
  for (size_t i = 0; i < returns_.size(); ++i) *returns_[i].caller = results[i].release();
  return Error::Ok;
}

Error StagedCall::cpu_failed() const {
  const std::string prefix = std::string(cpu_op_) + ": ";
  std::string message = last_error_message();
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  return set_error(Error::InvalidArgument, message.empty() ? std::string("the CPU op failed") : message);
}

}  // namespace kiln::cudadev

extern "C" {

#define KILN_HOST_STAGED(op, roles, params, args)                                                             \
  static_assert(::kiln::cudadev::roles_fit(&aoti_torch_cpu_##op, roles), "roles of " #op " do not fit its C " \
                                                                         "parameters");                       \
  KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_##op params {                                               \
    return ::kiln::cudadev::HostStaged("aoti_torch_cuda_" #op, "aoti_torch_cpu_" #op, roles, #args,           \
                                       &aoti_torch_cpu_##op) args;                                            \
  }
#include "shims/cuda/host_staged_ops.inc"
#undef KILN_HOST_STAGED

}  // extern "C"
