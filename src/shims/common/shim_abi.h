// Kiln's declarations of the device-neutral aoti_torch_* C shim ABI: the
// functions a model library compiled by AOTInductor (link_libtorch=False)
// leaves undefined and libkiln defines, whatever the device (tensor handles,
// getters, views, dtype and device codes). Each device's fallback ops are
// declared beside their code (src/shims/cpu/cpu_shims.h, src/shims/cuda/
// cuda_shims.h). Signatures follow PyTorch 2.11's aoti_torch/c/shim.h and
// generated/c_shim_<device>.h; they are written here from those headers'
// documented contracts, not included, because Kiln never depends on torch at
// build or run time.
//
// Every function declared here is listed in src/shims/common/shims.txt (a test
// keeps the lists and libkiln's exports in sync).
//
// Conventions shared by every function returning AOTITorchError:
//  - 0 on success, 1 on failure; on failure the calling thread's Kiln error
//    message (kiln::last_error_message) names the function and the problem.
//  - No exception ever escapes; no function aborts on bad input.
//  - "new reference" outputs are handles the caller owns and frees with
//    aoti_torch_delete_tensor_object. Pointer arguments are borrowed.
//  - Thread-safety: calls on distinct handles may run concurrently; calls that
//    mutate one handle (delete, assign) must not race with other uses of it.
#pragma once

#include <stddef.h>
#include <stdint.h>

// The shims must be visible to a dlopen'ed model library however libkiln was
// loaded, despite -fvisibility=hidden.
#define KILN_SHIM_EXPORT __attribute__((visibility("default")))

extern "C" {

struct AtenTensorOpaque;
/// Opaque tensor handle; in Kiln it is a heap-allocated kiln::Tensor (see tensor_handle.h).
typedef struct AtenTensorOpaque* AtenTensorHandle;
struct AOTIProxyExecutorOpaque;
typedef struct AOTIProxyExecutorOpaque* AOTIProxyExecutorHandle;
struct AtenGeneratorOpaque;
/// Opaque generator handle of the *_generator fallbacks; Kiln has no generator
/// objects (random ops draw from the method's seed), so only null is accepted.
typedef struct AtenGeneratorOpaque* AtenGeneratorHandle;

/// 0 = success, 1 = failure (AOTI_TORCH_SUCCESS / AOTI_TORCH_FAILURE).
typedef int32_t AOTITorchError;
/// Return type of the model library's AOTInductor* entry points (same 0/1 convention).
typedef int32_t AOTIRuntimeError;

#define KILN_AOTI_SUCCESS 0
#define KILN_AOTI_FAILURE 1

// ---- Codes: c10 enum values the model caches at load time ------------------
KILN_SHIM_EXPORT uint64_t aoti_torch_abi_version();
KILN_SHIM_EXPORT int32_t aoti_torch_device_type_cpu();
KILN_SHIM_EXPORT int32_t aoti_torch_device_type_cuda();
KILN_SHIM_EXPORT int32_t aoti_torch_device_type_mps();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e5m2();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e4m3fn();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_bfloat16();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float16();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float32();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float64();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_complex64();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_complex128();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_uint8();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_uint16();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_uint32();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_uint64();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_int8();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_int16();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_int32();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_int64();
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_bool();
/// Bytes per element of a dtype code; 0 for a code Kiln does not know.
KILN_SHIM_EXPORT size_t aoti_torch_dtype_element_size(int32_t dtype);
KILN_SHIM_EXPORT int32_t aoti_torch_layout_strided();
KILN_SHIM_EXPORT int32_t aoti_torch_memory_format_contiguous_format();
KILN_SHIM_EXPORT int32_t aoti_torch_memory_format_channels_last();
KILN_SHIM_EXPORT int32_t aoti_torch_memory_format_channels_last_3d();
KILN_SHIM_EXPORT int32_t aoti_torch_memory_format_preserve_format();

// ---- Creation and lifetime --------------------------------------------------
/// Uninitialised tensor with the given geometry on (device_type, device_index); new reference.
/// strides_ptr may be null for contiguous strides.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr,
                                                         const int64_t* strides_ptr, int32_t dtype,
                                                         int32_t device_type, int32_t device_index,
                                                         AtenTensorHandle* ret_new_tensor);
/// As empty_strided, CPU only. Kiln's CPU memory is ordinary (not page-locked) host memory.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_empty_strided_pinned(int64_t ndim, const int64_t* sizes_ptr,
                                                                const int64_t* strides_ptr, int32_t dtype,
                                                                int32_t device_type, int32_t device_index,
                                                                AtenTensorHandle* ret_new_tensor);
/// Wraps caller memory without taking ownership: element 0 of the view is at
/// data + storage_offset elements. Null data allocates a fresh tensor instead
/// (the convention for zero-size constants). New reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                                   const int64_t* strides_ptr, int64_t storage_offset,
                                                                   int32_t dtype, int32_t device_type,
                                                                   int32_t device_index, AtenTensorHandle* ret);
/// As create_tensor_from_blob; layout must be strided (opaque metadata is ignored).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret, int32_t layout,
    const uint8_t* opaque_metadata, int64_t opaque_metadata_size);
/// A view of self's storage whose storage offset is self's plus offset_increment; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                                               const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                                               int64_t offset_increment,
                                                               AtenTensorHandle* ret_new_tensor);
/// View with self's dimensionality and self's storage offset; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_as_strided(AtenTensorHandle self, const int64_t* sizes_ptr,
                                                      const int64_t* strides_ptr, AtenTensorHandle* ret);
/// A view of self's storage (self's storage offset must be 0) with another
/// dtype, starting offset_bytes in; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch__alloc_from_pool(AtenTensorHandle self, int64_t offset_bytes, int32_t dtype,
                                                            int64_t ndim, const int64_t* sizes_ptr,
                                                            const int64_t* strides_ptr,
                                                            AtenTensorHandle* ret_new_tensor);
/// Another handle to the same tensor (shares storage); new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle,
                                                             AtenTensorHandle* new_handle);
/// A handle to an undefined tensor; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_new_uninitialized_tensor(AtenTensorHandle* ret);
/// Frees a handle (the storage goes when its last view goes). Null is a no-op.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor);
/// Copy with self's strides when self is dense, contiguous otherwise; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret);
/// Copy with exactly self's sizes and strides; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret);
/// self[...] = src, broadcasting src and converting dtype; any devices.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking);
/// Deprecated form of copy_ (note the argument order: src first).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_tensor_copy_(AtenTensorHandle src, AtenTensorHandle dst);
/// Makes *dst an alias of *src (both handles still freed separately).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst);
/// A new handle aliasing src; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst);
/// Sets every element to zero.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_zero_(AtenTensorHandle self);
/// Wraps a scalar as a 0-dim CPU tensor; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float32(float value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float64(double value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint16(uint16_t value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint32(uint32_t value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint64(uint64_t value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t value, AtenTensorHandle* ret);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_bool(bool value, AtenTensorHandle* ret);

// ---- Getters (pointers returned are borrowed and live as long as the handle) --
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr);
/// Bytes of the underlying storage.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor, int64_t* ret_numel);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret_is_defined);

// item_*: the single element of a one-element tensor, converted to the
// requested type (any source dtype, any device). Half and BFloat16 results are
// written as their 16-bit patterns (c10::Half / c10::BFloat16 are 2-byte structs).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_float16(AtenTensorHandle tensor, uint16_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_bfloat16(AtenTensorHandle tensor, uint16_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_float32(AtenTensorHandle tensor, float* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_float64(AtenTensorHandle tensor, double* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_uint8(AtenTensorHandle tensor, uint8_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_uint16(AtenTensorHandle tensor, uint16_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_uint32(AtenTensorHandle tensor, uint32_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_uint64(AtenTensorHandle tensor, uint64_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_int8(AtenTensorHandle tensor, int8_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_int16(AtenTensorHandle tensor, int16_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_int32(AtenTensorHandle tensor, int32_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_int64(AtenTensorHandle tensor, int64_t* ret_value);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret_value);

// ---- Misc ---------------------------------------------------------------------
/// Thread-local autograd flag; Kiln only runs inference, so it defaults to false
/// and only records what the model sets.
KILN_SHIM_EXPORT bool aoti_torch_grad_mode_is_enabled();
KILN_SHIM_EXPORT void aoti_torch_grad_mode_set_enabled(bool enabled);
/// The model's assertion hook. libtorch throws here; Kiln cannot let an
/// exception cross into the model library, so a false `cond` is logged,
/// recorded as the thread's error and flagged (see shim_state.h), and the call
/// returns. See misc_shims.cpp for what that means for the model.
KILN_SHIM_EXPORT void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg);
/// Logs a model warning at Warning level.
KILN_SHIM_EXPORT void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg);
/// Logs a tensor's description (debug printer hook) at Info level.
KILN_SHIM_EXPORT void aoti_torch_print_tensor_handle(AtenTensorHandle self, const char* msg);

}  // extern "C"
