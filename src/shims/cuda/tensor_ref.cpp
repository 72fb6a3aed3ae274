#include "shims/cuda/tensor_ref.h"

#include "devices/cuda/device/cuda_device.h"
#include "devices/cuda/device/strided_copy.h"

namespace kiln::cudadev {
namespace {

// A shim call failed: its message is already recorded by libkiln.
Error shim_failed(const char* what) {
  const std::string& detail = last_error_message();
  return set_error(Error::InvalidArgument, std::string(what) + (detail.empty() ? "" : ": " + detail));
}

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

int64_t TensorRef::numel() const noexcept {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::string TensorRef::describe() const {
  return std::string(dtype_name(dtype)) + join(sizes) + " (strides " + join(strides) + ")";
}

Result<TensorRef> read_tensor(AtenTensorHandle handle, const char* name, bool require_cuda) {
  const std::string arg = std::string("argument '") + name + "'";
  if (handle == nullptr) return set_error(Error::InvalidArgument, arg + " is a null tensor handle");
  bool defined = false;
  if (aoti_torch_is_defined(handle, &defined) != 0) return shim_failed(arg.c_str());
  if (!defined) return set_error(Error::InvalidArgument, arg + " is an undefined tensor");
  TensorRef t;
  t.handle = handle;
  int32_t dtype = 0;
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  if (aoti_torch_get_data_ptr(handle, &t.data) != 0 || aoti_torch_get_dtype(handle, &dtype) != 0 ||
      aoti_torch_get_device_type(handle, &t.device_type) != 0 ||
      aoti_torch_get_device_index(handle, &t.device_index) != 0 || aoti_torch_get_dim(handle, &dim) != 0 ||
      aoti_torch_get_sizes(handle, &sizes) != 0 || aoti_torch_get_strides(handle, &strides) != 0)
    return shim_failed(arg.c_str());
  if (!is_known_dtype(dtype))
    return set_error(Error::InvalidArgument, arg + " has unknown dtype code " + std::to_string(dtype));
  t.dtype = static_cast<DType>(dtype);
  if (dim > 0 && (sizes == nullptr || strides == nullptr))
    return set_error(Error::Internal, arg + ": null sizes/strides from the shim");
  t.sizes.assign(sizes, sizes + dim);
  t.strides.assign(strides, strides + dim);
  if (require_cuda && t.device_type != static_cast<int32_t>(DeviceType::CUDA))
    return set_error(Error::InvalidArgument, arg + " (" + t.describe() + ") is not a CUDA tensor (device type " +
                                                 std::to_string(t.device_type) + ")");
  return t;
}

void OwnedHandle::reset() noexcept {
  if (handle_ != nullptr) (void)aoti_torch_delete_tensor_object(handle_);
  handle_ = nullptr;
}

Result<OwnedHandle> new_tensor(std::span<const int64_t> sizes, std::span<const int64_t> strides, DType dtype,
                               int32_t device_type, int32_t device_index) {
  AtenTensorHandle h = nullptr;
  if (aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(),
                               static_cast<int32_t>(dtype), device_type, device_index, &h) != 0) {
    const std::string detail = last_error_message();
    return set_error(Error::OutOfMemory, "allocating an output tensor failed: " + detail);
  }
  return OwnedHandle(h);
}

Result<OwnedHandle> new_undefined_tensor() {
  AtenTensorHandle h = nullptr;
  if (aoti_torch_new_uninitialized_tensor(&h) != 0) return shim_failed("creating an undefined tensor handle");
  return OwnedHandle(h);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  reset();
  ptr_ = std::exchange(other.ptr_, nullptr);
  device_ = other.device_;
  stream_ = other.stream_;
  return *this;
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t nbytes, int device, cudaStream_t stream) {
  KILN_ASSIGN_OR_RETURN(void* p, CudaDevice::instance().allocate(nbytes > 0 ? nbytes : 1, device, stream));
  DeviceBuffer b;
  b.ptr_ = p;
  b.device_ = device;
  b.stream_ = stream;
  return b;
}

void DeviceBuffer::reset() noexcept {
  if (ptr_ != nullptr) CudaDevice::instance().free(ptr_, device_, stream_);
  ptr_ = nullptr;
}

Result<DeviceBuffer> copy_to_layout(const TensorRef& t, std::span<const int64_t> strides, cudaStream_t stream) {
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_bytes();
  KILN_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(bytes, t.device_index, stream));
  KILN_RETURN_IF_ERROR(launch_strided_copy(buf.get(), strides.data(), t.data, t.strides.data(), t.sizes.data(),
                                           t.dim(), t.element_bytes(), stream));
  return buf;
}

bool is_dense_in_order(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                       std::span<const int> order) {
  int64_t expected = 1;
  for (size_t k = order.size(); k-- > 0;) {
    const auto d = static_cast<size_t>(order[k]);
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

std::vector<int64_t> dense_strides_in_order(std::span<const int64_t> sizes, std::span<const int> order) {
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t stride = 1;
  for (size_t k = order.size(); k-- > 0;) {
    const auto d = static_cast<size_t>(order[k]);
    strides[d] = stride;
    stride *= sizes[d] > 1 ? sizes[d] : 1;
  }
  return strides;
}

}  // namespace kiln::cudadev
