#include "kiln/tensor.h"

#include <cstring>
#include <limits>

#include "core/device_table.h"

namespace kiln {

std::vector<int64_t> contiguous_strides(std::span<const int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return strides;
}

Result<int64_t> strided_extent_bytes(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                                     DType dtype) {
  if (sizes.size() != strides.size())
    return set_error(Error::InvalidArgument, "sizes and strides have different ranks");
  const size_t elem = element_size(dtype);
  if (elem == 0) return set_error(Error::InvalidArgument, "unknown dtype code " +
                                                            std::to_string(static_cast<int>(dtype)));
  int64_t last = 0;  // largest element index reached
  // Every dimension is checked before an empty one ends the walk, so the
  // verdict on a geometry does not depend on where its zero size sits.
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0)
      return set_error(Error::InvalidArgument, "negative size or stride in dimension " + std::to_string(i));
    empty = empty || sizes[i] == 0;
  }
  if (empty) return int64_t{0};
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t reach = 0;
    if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) || __builtin_add_overflow(last, reach, &last))
      return set_error(Error::InvalidArgument, "tensor geometry overflows int64");
  }
  int64_t count = 0, bytes = 0;  // elements spanned: last + 1 overflows too when last is INT64_MAX
  if (__builtin_add_overflow(last, 1, &count) || __builtin_mul_overflow(count, static_cast<int64_t>(elem), &bytes))
    return set_error(Error::InvalidArgument, "tensor geometry overflows int64");
  return bytes;
}

Tensor::Tensor(StoragePtr storage, DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides,
               int64_t storage_offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      storage_offset_(storage_offset) {}

Result<Tensor> Tensor::empty(std::span<const int64_t> sizes, DType dtype, Device device) {
  auto strides = contiguous_strides(sizes);
  return empty_strided(sizes, strides, dtype, device);
}

Result<Tensor> Tensor::empty_strided(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                                     DType dtype, Device device) {
  KILN_ASSIGN_OR_RETURN(int64_t bytes, strided_extent_bytes(sizes, strides, dtype));
  DeviceInterface* iface = device_for(device.type);
  if (!iface)
    return set_error(Error::NotSupported,
                     std::string("no device backend for '") + device_string(device) + "' in this build");
  // Zero-byte tensors still get a unique non-null pointer: some kernels compare addresses.
  KILN_ASSIGN_OR_RETURN(void* data, iface->allocate(bytes > 0 ? static_cast<size_t>(bytes) : 1,
                                                    device.index, nullptr));
  int index = device.index;
  auto storage = Storage::create(data, static_cast<size_t>(bytes), device,
                                 [iface, index](void* p) { iface->free(p, index, nullptr); });
  return Tensor(std::move(storage), dtype, std::vector<int64_t>(sizes.begin(), sizes.end()),
                std::vector<int64_t>(strides.begin(), strides.end()), 0);
}

Result<Tensor> Tensor::from_blob(void* data, std::span<const int64_t> sizes, std::span<const int64_t> strides,
                                 DType dtype, Device device, Storage::Deleter deleter) {
  KILN_ASSIGN_OR_RETURN(int64_t bytes, strided_extent_bytes(sizes, strides, dtype));
  if (data == nullptr && bytes > 0)
    return set_error(Error::InvalidArgument, "from_blob: null data for a non-empty tensor");
  auto storage = Storage::create(data, static_cast<size_t>(bytes), device, std::move(deleter));
  return Tensor(std::move(storage), dtype, std::vector<int64_t>(sizes.begin(), sizes.end()),
                std::vector<int64_t>(strides.begin(), strides.end()), 0);
}

Result<Tensor> Tensor::make_view(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                                 int64_t storage_offset) const {
  if (!defined()) return set_error(Error::InvalidArgument, "view of an undefined tensor");
  KILN_ASSIGN_OR_RETURN(int64_t bytes, strided_extent_bytes(sizes, strides, dtype_));
  if (storage_offset < 0) return set_error(Error::InvalidArgument, "negative storage offset");
  const auto elem = static_cast<int64_t>(element_size(dtype_));
  int64_t end = 0;
  if (bytes > 0 && (__builtin_mul_overflow(storage_offset, elem, &end) || __builtin_add_overflow(end, bytes, &end) ||
                    end > static_cast<int64_t>(storage_->nbytes())))
    return set_error(Error::InvalidArgument,
                     "view (offset " + std::to_string(storage_offset) + ", " + std::to_string(bytes) +
                         " bytes) reaches past its storage of " + std::to_string(storage_->nbytes()) + " bytes");
  return Tensor(storage_, dtype_, std::vector<int64_t>(sizes.begin(), sizes.end()),
                std::vector<int64_t>(strides.begin(), strides.end()), storage_offset);
}

int64_t Tensor::numel() const noexcept {
  // An empty dimension makes the tensor empty whatever the others (metadata
  // from a caller may pair it with sizes whose product overflows); a product
  // that overflows saturates, as no such tensor fits in memory.
  for (int64_t s : sizes_)
    if (s == 0) return 0;
  int64_t n = 1;
  for (int64_t s : sizes_)
    if (__builtin_mul_overflow(n, s, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

void* Tensor::data_ptr() const noexcept {
  if (!storage_ || !storage_->data()) return nullptr;
  return static_cast<char*>(storage_->data()) + storage_offset_ * static_cast<int64_t>(element_size(dtype_));
}

bool Tensor::is_contiguous() const noexcept {
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;
    if (sizes_[i] == 0) return true;
    if (strides_[i] != expected) return false;
    expected *= sizes_[i];
  }
  return true;
}

std::string Tensor::describe() const {
  std::string out = dtype_name(dtype_);
  out += "[";
  for (size_t i = 0; i < sizes_.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(sizes_[i]);
  }
  out += "] " + device_string(device());
  return out;
}

namespace {
// Host-side strided copy of equally shaped tensors, element size `elem`.
void strided_copy_host(char* dst, const int64_t* dst_strides, const char* src, const int64_t* src_strides,
                       const int64_t* sizes, int64_t dim, size_t elem) {
  if (dim == 0) {
    std::memmove(dst, src, elem);  // dst may be src (in-place ops)
    return;
  }
  if (sizes[0] <= 1) {
    // A dimension of one element (or none) is never stepped along, and its stride may be any
    // value (one that would overflow when scaled to bytes included).
    if (sizes[0] == 1) strided_copy_host(dst, dst_strides + 1, src, src_strides + 1, sizes + 1, dim - 1, elem);
    return;
  }
  if (dim == 1) {
    if (dst_strides[0] == 1 && src_strides[0] == 1) {
      // Dense rows (e.g. a bias broadcast over the rows of a matrix): one copy per row.
      std::memmove(dst, src, static_cast<size_t>(sizes[0]) * elem);  // dst may be src (in-place ops)
      return;
    }
    const int64_t ds = dst_strides[0] * static_cast<int64_t>(elem);
    const int64_t ss = src_strides[0] * static_cast<int64_t>(elem);
    for (int64_t i = 0; i < sizes[0]; ++i) std::memcpy(dst + i * ds, src + i * ss, elem);
    return;
  }
  for (int64_t i = 0; i < sizes[0]; ++i)
    strided_copy_host(dst + i * dst_strides[0] * static_cast<int64_t>(elem), dst_strides + 1,
                      src + i * src_strides[0] * static_cast<int64_t>(elem), src_strides + 1, sizes + 1, dim - 1,
                      elem);
}
}  // namespace

Error copy_tensor(const Tensor& dst, const Tensor& src) {
  KILN_CHECK_OR_RETURN(dst.defined() && src.defined(), Error::InvalidArgument, "copy of an undefined tensor");
  KILN_CHECK_OR_RETURN(dst.dtype() == src.dtype(), Error::InvalidArgument,
                       std::string("copy between dtypes ") + dtype_name(src.dtype()) + " and " +
                           dtype_name(dst.dtype()) + " is not supported");
  KILN_CHECK_OR_RETURN(dst.sizes() == src.sizes(), Error::InvalidArgument,
                       "copy between different shapes: " + src.describe() + " -> " + dst.describe());
  if (dst.numel() == 0) return Error::Ok;
  const size_t elem = element_size(dst.dtype());
  if (dst.device().is_cpu() && src.device().is_cpu()) {
    if (dst.is_contiguous() && src.is_contiguous()) {
      std::memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    } else {
      strided_copy_host(static_cast<char*>(dst.data_ptr()), dst.strides().data(),
                        static_cast<const char*>(src.data_ptr()), src.strides().data(), dst.sizes().data(),
                        dst.dim(), elem);
    }
    return Error::Ok;
  }
  // Cross-device: contiguous on both sides, or stage a non-contiguous host side.
  const bool dst_dev = !dst.device().is_cpu();
  const Device dev = dst_dev ? dst.device() : src.device();
  DeviceInterface* iface = device_for(dev.type);
  KILN_CHECK_OR_RETURN(iface != nullptr, Error::NotSupported,
                       "no device backend for '" + device_string(dev) + "' in this build");
  const bool same_device = !dst.device().is_cpu() && dst.device() == src.device();
  if (same_device && (!dst.is_contiguous() || !src.is_contiguous()))
    return iface->copy_strided(dst.data_ptr(), dst.strides().data(), src.data_ptr(), src.strides().data(),
                               dst.sizes().data(), dst.dim(), elem, dev.index, nullptr);
  if (!dst.is_contiguous() || !src.is_contiguous()) {
    const Tensor& host = dst_dev ? src : dst;
    const Tensor& device_side = dst_dev ? dst : src;
    if (!device_side.is_contiguous()) {
      // Stage through a contiguous buffer on the device, then copy strided there.
      KILN_ASSIGN_OR_RETURN(Tensor staging, Tensor::empty(device_side.sizes(), device_side.dtype(), dev));
      if (dst_dev) {
        KILN_RETURN_IF_ERROR(copy_tensor(staging, src));
        return copy_tensor(dst, staging);
      }
      KILN_RETURN_IF_ERROR(copy_tensor(staging, src));
      return copy_tensor(dst, staging);
    }
    KILN_ASSIGN_OR_RETURN(Tensor staging, Tensor::empty(host.sizes(), host.dtype()));
    KILN_RETURN_IF_ERROR(copy_tensor(staging, src));
    return copy_tensor(dst, staging);
  }
  CopyKind kind = dst_dev ? (src.device().is_cpu() ? CopyKind::HostToDevice : CopyKind::DeviceToDevice)
                          : CopyKind::DeviceToHost;
  return iface->copy(dst.data_ptr(), src.data_ptr(), dst.nbytes(), kind, dev.index, nullptr);
}

}  // namespace kiln
