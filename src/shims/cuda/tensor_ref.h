// How the CUDA ops see tensors: only through libkiln's exported aoti_torch_*
// shim functions (getters, empty_strided, delete), exactly like a model
// library does, so the plugin never depends on the layout of kiln::Tensor or
// on libkiln's internal helpers. Plus DeviceBuffer, a scoped temporary from
// the caching allocator.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shims/common/shim_abi.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"  // contiguous_strides

namespace kiln::cudadev {

/// A borrowed snapshot of a tensor handle's metadata (valid while the handle lives).
struct TensorRef {
  AtenTensorHandle handle = nullptr;
  void* data = nullptr;  ///< element 0
  DType dtype = DType::Float32;
  int32_t device_type = 0;
  int32_t device_index = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;

  int64_t dim() const noexcept { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const noexcept;
  size_t element_bytes() const noexcept { return element_size(dtype); }
  /// "float16[2, 3] (strides [3, 1])" for messages.
  std::string describe() const;
};

/// Reads `handle` (argument `name` of `op`, for messages); fails on a null or
/// undefined tensor and, with `require_cuda`, on a non-CUDA one.
Result<TensorRef> read_tensor(AtenTensorHandle handle, const char* name, bool require_cuda = true);

/// Owns a tensor handle created here until released to the caller.
class OwnedHandle {
 public:
  OwnedHandle() = default;
  explicit OwnedHandle(AtenTensorHandle h) noexcept : handle_(h) {}
  OwnedHandle(OwnedHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  OwnedHandle& operator=(OwnedHandle&& other) noexcept {
    reset();
    handle_ = std::exchange(other.handle_, nullptr);
    return *this;
  }
  ~OwnedHandle() { reset(); }
  AtenTensorHandle get() const noexcept { return handle_; }
  AtenTensorHandle release() noexcept { return std::exchange(handle_, nullptr); }
  void reset() noexcept;

 private:
  AtenTensorHandle handle_ = nullptr;
};

/// New uninitialised tensor through aoti_torch_empty_strided (on CUDA this is
/// the caching allocator, on the thread's current stream).
Result<OwnedHandle> new_tensor(std::span<const int64_t> sizes, std::span<const int64_t> strides, DType dtype,
                               int32_t device_type, int32_t device_index);
/// A handle to an undefined tensor (what ATen returns for a None output).
Result<OwnedHandle> new_undefined_tensor();

/// Scoped device memory from CudaDevice (stream-ordered: freed on `stream`
/// when it goes out of scope, so work queued on that stream before the free
/// may still use it).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), device_(other.device_), stream_(other.stream_) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer() { reset(); }
  static Result<DeviceBuffer> allocate(size_t nbytes, int device, cudaStream_t stream);
  void* get() const noexcept { return ptr_; }
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

/// Copies `t` into a fresh buffer laid out with `strides` (same sizes), on
/// `stream`. The buffer holds the copy; strides must describe a dense layout.
Result<DeviceBuffer> copy_to_layout(const TensorRef& t, std::span<const int64_t> strides, cudaStream_t stream);

/// True if `strides` are exactly the dense layout that lists dimensions in
/// `order` from outermost to innermost (size-1 dimensions may have any stride).
bool is_dense_in_order(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                       std::span<const int> order);

/// Dense strides that list dimensions in `order` from outermost to innermost.
std::vector<int64_t> dense_strides_in_order(std::span<const int64_t> sizes, std::span<const int> order);

}  // namespace kiln::cudadev
