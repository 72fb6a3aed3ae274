// The view ops of torch's C shim headers (narrow, slice, permute, reshape,
// squeeze, dtype and complex views) and the in-place ops that re-view self
// (resize_, resize_as_, set_), for every device: a view only makes new
// geometry over the input's storage, so one device-neutral implementation per
// op (this directory) serves aoti_torch_cpu_<op> and aoti_torch_cuda_<op>
// alike, checking that the tensor is on the device its name says. reshape's
// copy, when ATen's would copy, goes through the allocation and copy shims;
// resize_'s growth through the device's allocator and copy.
// Listed in src/shims/common/shims.txt. Conventions: shim_abi.h.
#pragma once

#include "shims/common/shim_abi.h"

extern "C" {

/// complex tensor seen as (real, imag) pairs: a view sharing self's storage.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0);
/// float pairs (last dim 2) seen as complex: a view sharing self's storage.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_as_complex(AtenTensorHandle self, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_view_as_complex(AtenTensorHandle self, AtenTensorHandle* ret0);
/// view of [start, start + length) along dim.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_narrow(AtenTensorHandle self, int64_t dim, int64_t start, int64_t length, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_narrow(AtenTensorHandle self, int64_t dim, int64_t start, int64_t length, AtenTensorHandle* ret0);
/// view with dimensions reordered.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_permute(AtenTensorHandle self, const int64_t* dims, int64_t dims_len_, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_permute(AtenTensorHandle self, const int64_t* dims, int64_t dims_len_, AtenTensorHandle* ret0);
/// self with a new shape: a view when ATen's would be, else a contiguous copy.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_reshape(AtenTensorHandle self, const int64_t* shape, int64_t shape_len_, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_reshape(AtenTensorHandle self, const int64_t* shape, int64_t shape_len_, AtenTensorHandle* ret0);
/// view of start:end:step along dim.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_slice_Tensor(AtenTensorHandle self, int64_t dim, int64_t* start, int64_t* end, int64_t step, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_slice_Tensor(AtenTensorHandle self, int64_t dim, int64_t* start, int64_t* end, int64_t step, AtenTensorHandle* ret0);
/// view without dim when its size is 1.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_squeeze_dim(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_squeeze_dim(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0);
/// the same bytes seen as another dtype (a view).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_dtype(AtenTensorHandle self, int32_t dtype, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_view_dtype(AtenTensorHandle self, int32_t dtype, AtenTensorHandle* ret0);

/// resizes self in place: contiguous (or channels-last) geometry at its
/// offset; more bytes than its storage has move self alone to a larger
/// storage on its device holding the old bytes, refused when the storage is
/// shared (see resize.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_resize_(AtenTensorHandle self, const int64_t* size, int64_t size_len_, int32_t* memory_format);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_resize_(AtenTensorHandle self, const int64_t* size, int64_t size_len_, int32_t* memory_format);
/// resizes self to the_template's sizes in place, as resize_.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_resize_as_(AtenTensorHandle self, AtenTensorHandle the_template, int32_t* memory_format);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_resize_as_(AtenTensorHandle self, AtenTensorHandle the_template, int32_t* memory_format);
/// makes self a view of source's storage and geometry, keeping self's dtype.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_set__source_Tensor(AtenTensorHandle self, AtenTensorHandle source);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_set__source_Tensor(AtenTensorHandle self, AtenTensorHandle source);

}  // extern "C"
