// Tensor: a strided view (sizes, strides, storage offset, dtype) over a shared
// Storage. This is the type behind every AtenTensorHandle that Kiln hands to a
// compiled model library.
//
// Ownership: a Tensor holds one strong reference to its Storage. Copying a
// Tensor makes another view of the same memory (no data copy); views made by
// view() share storage too. Sizes and strides live inside the Tensor, so the
// pointers returned by sizes().data() stay valid as long as the Tensor does
// (the aoti_torch_get_sizes contract). Not thread-safe for mutation.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/export.h"
#include "kiln/storage.h"

namespace kiln {

class KILN_API Tensor {
 public:
  /// An undefined tensor (no storage); defined() is false.
  Tensor() = default;

  /// A view over `storage`. Strides and offset are in elements. Does not check
  /// bounds; use make_view() for untrusted geometry.
  Tensor(StoragePtr storage, DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides,
         int64_t storage_offset = 0);

  /// Allocates an uninitialised contiguous tensor on `device` through that
  /// device's allocator.
  static Result<Tensor> empty(std::span<const int64_t> sizes, DType dtype, Device device = {});
  /// Allocates storage large enough for the given strided geometry.
  static Result<Tensor> empty_strided(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                                      DType dtype, Device device = {});
  /// Wraps memory the caller owns (deleter empty: borrowed; caller keeps it
  /// alive) or hands over (deleter set: called when the last view goes).
  /// `data` points at element 0 of the view. Checks the geometry.
  static Result<Tensor> from_blob(void* data, std::span<const int64_t> sizes,
                                  std::span<const int64_t> strides, DType dtype, Device device = {},
                                  Storage::Deleter deleter = {});

  /// A view sharing this tensor's storage; fails if it would reach outside it.
  Result<Tensor> make_view(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                           int64_t storage_offset) const;

  bool defined() const noexcept { return static_cast<bool>(storage_); }
  DType dtype() const noexcept { return dtype_; }
  Device device() const noexcept { return storage_ ? storage_->device() : Device{}; }
  int64_t dim() const noexcept { return static_cast<int64_t>(sizes_.size()); }
  const std::vector<int64_t>& sizes() const noexcept { return sizes_; }
  const std::vector<int64_t>& strides() const noexcept { return strides_; }
  int64_t size(int64_t d) const { return sizes_.at(static_cast<size_t>(d)); }
  int64_t stride(int64_t d) const { return strides_.at(static_cast<size_t>(d)); }
  int64_t storage_offset() const noexcept { return storage_offset_; }
  const StoragePtr& storage() const noexcept { return storage_; }
  int64_t numel() const noexcept;
  size_t nbytes() const noexcept { return static_cast<size_t>(numel()) * element_size(dtype_); }
  /// Address of element 0: storage data + storage_offset * element size.
  void* data_ptr() const noexcept;
  template <typename T>
  T* data() const noexcept {
    return static_cast<T*>(data_ptr());
  }
  /// True if strides are the row-major contiguous strides (size-1 dims ignored).
  bool is_contiguous() const noexcept;

  /// "float32[2, 3] cpu".
  std::string describe() const;

 private:
  StoragePtr storage_;
  DType dtype_ = DType::Float32;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t storage_offset_ = 0;
};

/// Row-major contiguous strides for `sizes`.
KILN_API std::vector<int64_t> contiguous_strides(std::span<const int64_t> sizes);

/// Bytes a strided tensor reaches from element 0 (0 if any size is 0); error
/// on negative sizes/strides or overflow.
KILN_API Result<int64_t> strided_extent_bytes(std::span<const int64_t> sizes,
                                              std::span<const int64_t> strides, DType dtype);

/// Copies `src` into `dst` element by element (any strides, same dtype and
/// sizes), across devices through the device interfaces.
KILN_API Error copy_tensor(const Tensor& dst, const Tensor& src);

}  // namespace kiln
