/* Kiln C API: the frozen, plain-C interface to the Kiln runtime.
 *
 * ABI RULES (read before editing this file)
 *   - The ABI is APPEND-ONLY. Never remove, rename, reorder or change the
 *     signature of a function, and never renumber a constant. New functions and
 *     constants are added at the end of their section, and KILN_ABI_VERSION is
 *     incremented when they are. A program built against ABI version N runs
 *     against any library whose kiln_abi_version() >= N.
 *   - Only plain C types cross this boundary: opaque handles, fixed-width
 *     integers, bool, const char* (NUL-terminated UTF-8) and pointer + length
 *     arrays. No C++ type and no exception ever crosses it.
 *   - Status codes equal kiln::Error and dtype / device codes equal kiln::DType /
 *     kiln::DeviceType (which equal PyTorch's c10 codes); src/capi pins each one
 *     with a static_assert.
 *
 * CONVENTIONS
 *   - Opaque handles are kiln_<thing>_t; functions are kiln_<thing>_<verb>.
 *   - Every function that can fail returns kiln_status_t: KILN_OK (0) on
 *     success, otherwise a KILN_ERROR_* code, with a message naming exactly what
 *     was wrong available from kiln_last_error_message() on the same thread.
 *     Results are written through out-parameters, which are left untouched on
 *     failure.
 *   - Every function is a no-throw firewall: nothing escapes it; an allocation
 *     failure anywhere inside reports KILN_ERROR_OUT_OF_MEMORY.
 *   - Every pointer argument is checked: NULL where a value is required is
 *     KILN_ERROR_INVALID_ARGUMENT naming the argument. Arguments documented
 *     "may be NULL" are optional.
 *   - Ownership is stated on every declaration. "Caller frees with X" means the
 *     returned object is yours and must be released with X exactly once.
 *     "Borrowed" means the pointer is owned by Kiln and valid for the stated
 *     lifetime; do not free it. Every kiln_*_free(NULL) is a no-op.
 *   - Thread safety: functions touching different handles may run concurrently.
 *     Per-handle rules are given on each declaration.
 */
#ifndef KILN_C_API_H_
#define KILN_C_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/export.h"

/* Lets C++ callers (and the implementation) see that no call throws. */
#ifdef __cplusplus
#define KILN_NOEXCEPT noexcept
#else
#define KILN_NOEXCEPT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version of this header. See kiln_abi_version(). */
#define KILN_ABI_VERSION 2u

/* ------------------------------------------------------------------------ */
/* Status codes, dtypes, devices                                             */
/* ------------------------------------------------------------------------ */

/** Result of a fallible call: KILN_OK or one of the KILN_ERROR_* codes. */
typedef int32_t kiln_status_t;

#define KILN_OK 0
#define KILN_ERROR_INTERNAL 1          /* a bug in Kiln or a broken invariant */
#define KILN_ERROR_INVALID_ARGUMENT 2  /* a caller-supplied value is wrong */
#define KILN_ERROR_INVALID_PROGRAM 3   /* program file corrupt, truncated or malformed */
#define KILN_ERROR_NOT_FOUND 4         /* named method, key, file or symbol missing */
#define KILN_ERROR_NOT_SUPPORTED 5     /* valid request this build/device cannot do */
#define KILN_ERROR_OUT_OF_MEMORY 6     /* an allocation failed */
#define KILN_ERROR_IO_ERROR 7          /* the OS refused a file/mapping operation */
#define KILN_ERROR_BACKEND_FAILED 8    /* the compiled model or a device library failed */
#define KILN_ERROR_INVALID_STATE 9     /* call made in the wrong order */
#define KILN_ERROR_MISSING_SHIM 10     /* model imports an aoti_torch_* Kiln lacks */
#define KILN_ERROR_INTEGRITY_ERROR 11  /* a digest or signature does not match */

/** Element type code (PyTorch c10::ScalarType values). */
typedef int32_t kiln_dtype_t;

#define KILN_DTYPE_UINT8 0
#define KILN_DTYPE_INT8 1
#define KILN_DTYPE_INT16 2
#define KILN_DTYPE_INT32 3
#define KILN_DTYPE_INT64 4
#define KILN_DTYPE_FLOAT16 5
#define KILN_DTYPE_FLOAT32 6
#define KILN_DTYPE_FLOAT64 7
#define KILN_DTYPE_BOOL 11
#define KILN_DTYPE_BFLOAT16 15
#define KILN_DTYPE_FLOAT8_E5M2 23
#define KILN_DTYPE_FLOAT8_E4M3FN 24
#define KILN_DTYPE_UINT16 27
#define KILN_DTYPE_UINT32 28
#define KILN_DTYPE_UINT64 29

/** Device type code (PyTorch c10::DeviceType values). */
typedef int32_t kiln_device_type_t;

#define KILN_DEVICE_CPU 0
#define KILN_DEVICE_CUDA 1

/* ------------------------------------------------------------------------ */
/* Library information and errors                                            */
/* ------------------------------------------------------------------------ */

/** The library's ABI version (KILN_ABI_VERSION it was built with). Compare it
 *  with the KILN_ABI_VERSION you compiled against: the library must not be
 *  older. Thread-safe. */
KILN_API uint32_t kiln_abi_version(void) KILN_NOEXCEPT;

/** Kiln's release version, e.g. "0.1.0". Borrowed: static storage.
 *  Thread-safe. */
KILN_API const char* kiln_version_string(void) KILN_NOEXCEPT;

/** Stable short name of a status code ("Ok", "NotFound", ...), or "Unknown".
 *  Borrowed: static storage. Thread-safe. */
KILN_API const char* kiln_status_name(kiln_status_t status) KILN_NOEXCEPT;

/** Message describing the most recent failed call made on the calling thread
 *  ("" if the most recent status-returning call succeeded). Never NULL.
 *  Borrowed: valid until the next Kiln call on this thread; copy it if you
 *  need it longer. Thread-safe (each thread has its own message). */
KILN_API const char* kiln_last_error_message(void) KILN_NOEXCEPT;

/** Lower-case name of a dtype code ("float32", "bfloat16"), or NULL for a code
 *  Kiln does not know. Borrowed: static storage. Thread-safe. */
KILN_API const char* kiln_dtype_name(kiln_dtype_t dtype) KILN_NOEXCEPT;

/** Bytes per element of a dtype code, or 0 for an unknown code. Thread-safe. */
KILN_API size_t kiln_dtype_element_size(kiln_dtype_t dtype) KILN_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Load options: a builder for per-backend key -> bool/int/string options     */
/* ------------------------------------------------------------------------ */

/** Options grouped per backend name ("aoti"). Kiln deep-copies them when they
 *  are passed to a load call, so they may be freed right after. Not
 *  thread-safe: do not modify one kiln_options_t from two threads at once. */
typedef struct kiln_options_t kiln_options_t;

/** Creates an empty options set.
 *  \param[out] out new options; caller frees with kiln_options_free. */
KILN_API kiln_status_t kiln_options_create(kiln_options_t** out) KILN_NOEXCEPT;

/** Sets `key` of `backend` (replacing any earlier value of any type). The
 *  strings are copied; the caller keeps ownership of its arguments. */
KILN_API kiln_status_t kiln_options_set_bool(kiln_options_t* options, const char* backend,
                                             const char* key, bool value) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_options_set_int(kiln_options_t* options, const char* backend,
                                            const char* key, int64_t value) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_options_set_string(kiln_options_t* options, const char* backend,
                                               const char* key, const char* value) KILN_NOEXCEPT;

/** Frees options made by kiln_options_create. NULL is a no-op. */
KILN_API void kiln_options_free(kiln_options_t* options) KILN_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

/** A strided view (sizes, strides in elements, storage offset, dtype, device)
 *  over reference-counted storage. Each kiln_tensor_t is an independent
 *  handle: freeing it drops its reference, and the memory is released (or the
 *  borrowed memory's deleter called) when the last handle, DLPack export or
 *  in-flight execution referring to the storage goes. Accessors may be called
 *  from several threads at once; freeing must not race with other use of the
 *  same handle. The bytes themselves are not synchronised. */
typedef struct kiln_tensor_t kiln_tensor_t;

/** Called once when the storage of a tensor made by kiln_tensor_create_from_data
 *  is released. `data` is the pointer that was passed in. It may run on any
 *  thread that drops the last reference; it must not call back into Kiln on a
 *  handle that is being freed. */
typedef void (*kiln_tensor_deleter_t)(void* data, void* context);

/** Wraps caller memory without copying.
 *  \param data address of element 0 (may be NULL only if the tensor is empty).
 *  \param sizes `ndim` sizes (may be NULL when ndim is 0). Copied.
 *  \param strides `ndim` strides in elements, or NULL for row-major contiguous.
 *         Copied. Negative strides are rejected.
 *  \param device_type, device_index where `data` lives.
 *  \param deleter may be NULL: the memory is BORROWED and the caller must keep
 *         it alive until every tensor made from it (including execute outputs
 *         that alias it and DLPack exports) is freed. Non-NULL: ownership of the
 *         memory passes to Kiln, which calls deleter(data, deleter_context) once
 *         when the storage is released. If this call fails, ownership does NOT
 *         pass and the deleter is never called.
 *  \param[out] out new tensor; caller frees with kiln_tensor_free. */
KILN_API kiln_status_t kiln_tensor_create_from_data(void* data, kiln_dtype_t dtype, const int64_t* sizes,
                                                    const int64_t* strides, size_t ndim,
                                                    kiln_device_type_t device_type, int32_t device_index,
                                                    kiln_tensor_deleter_t deleter, void* deleter_context,
                                                    kiln_tensor_t** out) KILN_NOEXCEPT;

/** Copies CPU memory into a new contiguous CPU tensor owned by Kiln.
 *  \param data address of element 0 of the source (may be NULL only if empty);
 *         borrowed for the duration of the call.
 *  \param strides source strides in elements, or NULL for contiguous.
 *  \param[out] out new tensor (contiguous strides); caller frees with
 *         kiln_tensor_free. */
KILN_API kiln_status_t kiln_tensor_create_copy(const void* data, kiln_dtype_t dtype, const int64_t* sizes,
                                               const int64_t* strides, size_t ndim, kiln_tensor_t** out) KILN_NOEXCEPT;

/** Allocates an uninitialised contiguous tensor on the given device.
 *  \param[out] out new tensor; caller frees with kiln_tensor_free. */
KILN_API kiln_status_t kiln_tensor_create_empty(kiln_dtype_t dtype, const int64_t* sizes, size_t ndim,
                                                kiln_device_type_t device_type, int32_t device_index,
                                                kiln_tensor_t** out) KILN_NOEXCEPT;

/** Accessors. Each writes one property of `tensor` to `out`. */
KILN_API kiln_status_t kiln_tensor_dtype(const kiln_tensor_t* tensor, kiln_dtype_t* out) KILN_NOEXCEPT;
/** Number of dimensions (0 for a scalar). */
KILN_API kiln_status_t kiln_tensor_dim(const kiln_tensor_t* tensor, size_t* out) KILN_NOEXCEPT;
/** Borrowed array of dim() sizes, valid while `tensor` lives (NULL if dim is 0). */
KILN_API kiln_status_t kiln_tensor_sizes(const kiln_tensor_t* tensor, const int64_t** out) KILN_NOEXCEPT;
/** Borrowed array of dim() strides in elements, valid while `tensor` lives. */
KILN_API kiln_status_t kiln_tensor_strides(const kiln_tensor_t* tensor, const int64_t** out) KILN_NOEXCEPT;
/** Offset of element 0 from the start of the storage, in elements. */
KILN_API kiln_status_t kiln_tensor_storage_offset(const kiln_tensor_t* tensor, int64_t* out) KILN_NOEXCEPT;
/** Address of element 0 (storage start + offset). Borrowed: valid while any
 *  reference to the storage lives. Device memory for non-CPU tensors. */
KILN_API kiln_status_t kiln_tensor_data(const kiln_tensor_t* tensor, void** out) KILN_NOEXCEPT;
/** Device type and index. Either out-pointer may be NULL if not wanted. */
KILN_API kiln_status_t kiln_tensor_device(const kiln_tensor_t* tensor, kiln_device_type_t* out_type,
                                          int32_t* out_index) KILN_NOEXCEPT;
/** Number of elements. */
KILN_API kiln_status_t kiln_tensor_numel(const kiln_tensor_t* tensor, int64_t* out) KILN_NOEXCEPT;
/** numel * element size: the bytes of the elements (not of the storage). */
KILN_API kiln_status_t kiln_tensor_nbytes(const kiln_tensor_t* tensor, size_t* out) KILN_NOEXCEPT;

/** Drops this handle's reference. NULL is a no-op. */
KILN_API void kiln_tensor_free(kiln_tensor_t* tensor) KILN_NOEXCEPT;

/** Frees every non-NULL element of `tensors` (length `count`) and then the array
 *  itself. Use it on the array returned by kiln_module_execute; to keep some
 *  tensors, move them out and set their slots to NULL first. NULL is a no-op. */
KILN_API void kiln_tensor_array_free(kiln_tensor_t** tensors, size_t count) KILN_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* DLPack (version 0.6 ABI: unversioned DLManagedTensor, capsule "dltensor")  */
/* ------------------------------------------------------------------------ */

/** Wraps a DLManagedTensor (passed as void* so this header needs no dlpack
 *  include) as a kiln tensor, without copying.
 *  Supports kDLCPU and kDLCUDA devices, lanes == 1, byte_offset, strides NULL
 *  (contiguous) or non-negative, and the dtypes: int8..64, uint8..64,
 *  float16/32/64, bfloat16 (kDLBfloat), bool (code 6, 8 bits), float8 e4m3fn
 *  (code 10), e5m2 (code 12), complex64/complex128 (kDLComplex).
 *  Ownership: on success Kiln owns the DLManagedTensor and calls its deleter
 *  (if non-NULL) exactly once, when the storage is released. On failure the
 *  DLManagedTensor is untouched and still owned by the caller.
 *  \param[out] out new tensor; caller frees with kiln_tensor_free. */
KILN_API kiln_status_t kiln_tensor_from_dlpack(void* dl_managed_tensor, kiln_tensor_t** out) KILN_NOEXCEPT;

/** Exports `tensor` as a new DLManagedTensor (as void*) sharing its memory. The
 *  export holds its own reference to the storage, so `tensor` may be freed
 *  first. data points at element 0 (byte_offset 0); strides are always set.
 *  \param[out] dl_managed_tensor_out the consumer owns it and must call its
 *         deleter exactly once (which releases the storage reference). */
KILN_API kiln_status_t kiln_tensor_to_dlpack(const kiln_tensor_t* tensor, void** dl_managed_tensor_out) KILN_NOEXCEPT;

/** Wraps an unversioned DLManagedTensor (e.g. from kiln_tensor_to_dlpack) in a
 *  DLPack 1.x DLManagedTensorVersioned (version 1.0, flags 0: writable, not a
 *  copy; same DLTensor fields), what a "dltensor_versioned" capsule holds.
 *  numpy >= 2 marks arrays imported from legacy capsules read-only.
 *  Ownership: on success the wrapper owns `dl_managed_tensor`; the consumer
 *  calls the wrapper's deleter exactly once, which runs the wrapped tensor's
 *  deleter and frees the wrapper. */
KILN_API kiln_status_t kiln_dlpack_to_versioned(void* dl_managed_tensor,
                                                void** dl_managed_tensor_versioned_out) KILN_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Method metadata                                                           */
/* ------------------------------------------------------------------------ */

/** A snapshot of one method's contract and metadata, independent of the module
 *  it came from. Immutable: safe to read from several threads at once. */
typedef struct kiln_method_meta_t kiln_method_meta_t;

/** One input or output of a method. Borrowed from its kiln_method_meta_t and
 *  valid as long as it. */
typedef struct kiln_tensor_spec_t kiln_tensor_spec_t;

/** Method name, backend ("aoti") and device ("cpu", "cuda"). Borrowed: valid
 *  while `meta` lives. */
KILN_API kiln_status_t kiln_method_meta_name(const kiln_method_meta_t* meta, const char** out) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_method_meta_backend(const kiln_method_meta_t* meta, const char** out) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_method_meta_device(const kiln_method_meta_t* meta, const char** out) KILN_NOEXCEPT;

KILN_API kiln_status_t kiln_method_meta_input_count(const kiln_method_meta_t* meta, size_t* out) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_method_meta_output_count(const kiln_method_meta_t* meta, size_t* out) KILN_NOEXCEPT;
/** The index-th input/output spec (borrowed). KILN_ERROR_INVALID_ARGUMENT if
 *  index is out of range. */
KILN_API kiln_status_t kiln_method_meta_input(const kiln_method_meta_t* meta, size_t index,
                                              const kiln_tensor_spec_t** out) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_method_meta_output(const kiln_method_meta_t* meta, size_t index,
                                               const kiln_tensor_spec_t** out) KILN_NOEXCEPT;

/** Method metadata (torch_version, cpu_isa, compiler, ...): string key/value
 *  pairs in ascending key order. Strings are borrowed while `meta` lives. */
KILN_API kiln_status_t kiln_method_meta_metadata_count(const kiln_method_meta_t* meta, size_t* out) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_method_meta_metadata_entry(const kiln_method_meta_t* meta, size_t index,
                                                       const char** out_key, const char** out_value) KILN_NOEXCEPT;
/** The value of `key`; KILN_ERROR_NOT_FOUND if absent. */
KILN_API kiln_status_t kiln_method_meta_metadata_get(const kiln_method_meta_t* meta, const char* key,
                                                     const char** out_value) KILN_NOEXCEPT;

/** Frees a snapshot from kiln_module_method_meta. NULL is a no-op. Invalidates
 *  every spec and string borrowed from it. */
KILN_API void kiln_method_meta_free(kiln_method_meta_t* meta) KILN_NOEXCEPT;

/** Name of the input/output ("" if the program gave none). Borrowed. */
KILN_API kiln_status_t kiln_tensor_spec_name(const kiln_tensor_spec_t* spec, const char** out) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_tensor_spec_dtype(const kiln_tensor_spec_t* spec, kiln_dtype_t* out) KILN_NOEXCEPT;
/** Rank of the input/output. */
KILN_API kiln_status_t kiln_tensor_spec_dim(const kiln_tensor_spec_t* spec, size_t* out) KILN_NOEXCEPT;
/** Size of dimension `d`: the static size, or for a dynamic dimension the size
 *  seen at export. */
KILN_API kiln_status_t kiln_tensor_spec_dim_size(const kiln_tensor_spec_t* spec, size_t d, int64_t* out) KILN_NOEXCEPT;
/** Whether dimension `d` is dynamic. */
KILN_API kiln_status_t kiln_tensor_spec_dim_is_dynamic(const kiln_tensor_spec_t* spec, size_t d, bool* out) KILN_NOEXCEPT;
/** Bounds [min, max] of dimension `d`; max is -1 when unbounded. For a static
 *  dimension both equal its size. */
KILN_API kiln_status_t kiln_tensor_spec_dim_bounds(const kiln_tensor_spec_t* spec, size_t d, int64_t* out_min,
                                                   int64_t* out_max) KILN_NOEXCEPT;
/** Symbol name of dimension `d` ("s0", "batch"; "" for a static one). Borrowed. */
KILN_API kiln_status_t kiln_tensor_spec_dim_name(const kiln_tensor_spec_t* spec, size_t d, const char** out) KILN_NOEXCEPT;
/** The layout the method's compiled code reads an input in, as a dim order:
 *  the dimension at position `k` (0: outermost) of a dense tensor in that
 *  layout. Row-major gives k for every k; channels_last (rank 4) gives
 *  0, 2, 3, 1. Inputs in any other layout are copied into it by execute
 *  (except inputs the method writes in place, which are refused). Since ABI
 *  version 2. */
KILN_API kiln_status_t kiln_tensor_spec_dim_order(const kiln_tensor_spec_t* spec, size_t k, size_t* out) KILN_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Modules                                                                   */
/* ------------------------------------------------------------------------ */

/** One `.kiln` program and its loaded methods.
 *  Thread safety: kiln_module_load / load_method / unload_method / free must
 *  not race with any other call on the same module. kiln_module_execute may
 *  run from several threads at once on methods that are already loaded. The
 *  query functions (method_count, method_name, method_meta,
 *  is_method_loaded) may run concurrently with each other and with execute. */
typedef struct kiln_module_t kiln_module_t;

/** Creates a module for the program at `path`; nothing is read until load.
 *  \param data_files `n_data_files` paths of external weight files in the
 *         order the program names them (may be NULL when n_data_files is 0).
 *         All strings are copied.
 *  \param[out] out new module; caller frees with kiln_module_free. */
KILN_API kiln_status_t kiln_module_create(const char* path, const char* const* data_files,
                                          size_t n_data_files, kiln_module_t** out) KILN_NOEXCEPT;

/** Maps and validates the program and deep-copies `options` (may be NULL: no
 *  options; the caller may free its options right after). On failure the
 *  module is unchanged. Errors: KILN_ERROR_NOT_FOUND / KILN_ERROR_IO_ERROR for
 *  an unreadable file, KILN_ERROR_INVALID_PROGRAM for a corrupt one,
 *  KILN_ERROR_INVALID_ARGUMENT for a rejected option. Options under the name
 *  "program" (require_signature, trusted_keys, trusted_keys_file) and the
 *  environment (KILN_REQUIRE_SIGNATURE, KILN_TRUSTED_KEYS) set the signature
 *  policy: a program that is unsigned, signed by an untrusted key or modified
 *  is then refused here with KILN_ERROR_INTEGRITY_ERROR, before any library is
 *  loaded (docs/program-format.md, "Signatures"). */
KILN_API kiln_status_t kiln_module_load(kiln_module_t* module, const kiln_options_t* options) KILN_NOEXCEPT;

/** Loads one method (library, container, weights). `options` may be NULL: the
 *  module's copy from kiln_module_load is used. Loads the module first (with no
 *  options) if needed. */
KILN_API kiln_status_t kiln_module_load_method(kiln_module_t* module, const char* name,
                                               const kiln_options_t* options) KILN_NOEXCEPT;

/** Frees everything a loaded method holds. KILN_ERROR_NOT_FOUND if the method
 *  is not loaded. */
KILN_API kiln_status_t kiln_module_unload_method(kiln_module_t* module, const char* name) KILN_NOEXCEPT;

/** Whether the method is currently loaded. */
KILN_API kiln_status_t kiln_module_is_method_loaded(const kiln_module_t* module, const char* name,
                                                    bool* out) KILN_NOEXCEPT;

/** Number of methods in the program (loads the module first if needed). */
KILN_API kiln_status_t kiln_module_method_count(kiln_module_t* module, size_t* out) KILN_NOEXCEPT;

/** Name of the index-th method. Borrowed: valid until kiln_module_free. */
KILN_API kiln_status_t kiln_module_method_name(kiln_module_t* module, size_t index, const char** out) KILN_NOEXCEPT;

/** A snapshot of the named method's contract and metadata.
 *  \param[out] out caller frees with kiln_method_meta_free; it stays valid
 *         after the module is freed. */
KILN_API kiln_status_t kiln_module_method_meta(kiln_module_t* module, const char* name,
                                               kiln_method_meta_t** out) KILN_NOEXCEPT;

/** Runs method `name`, loading it first if needed.
 *  \param inputs `n_inputs` tensor handles (may be NULL when n_inputs is 0).
 *         Borrowed for the duration of the call; neither the handles nor their
 *         memory are modified or retained, except that an output may alias an
 *         input's storage (it then holds its own reference).
 *  \param[out] outputs new array of *n_outputs new tensors. Caller frees
 *         with kiln_tensor_array_free (or each element with kiln_tensor_free
 *         and the array with kiln_tensor_array_free(array, 0)). Set to NULL
 *         and 0 when the method has no outputs.
 *  Inputs are checked against the method's contract (count, dtype, rank, static
 *  dims, dynamic bounds, device, and that each view lies inside its memory);
 *  the error names the offending input. Inputs may have any strides and
 *  storage offset (transposed, sliced, broadcast with stride 0, ...): one
 *  whose layout differs from the one the method was compiled for
 *  (kiln_tensor_spec_dim_order) is copied into that layout on the method's
 *  device first (a CUDA device input also when its data is not 16-byte
 *  aligned); one already in it is used without a copy. An input the method
 *  writes in place (method metadata `mutated_inputs`) is never copied: if its
 *  layout differs, the call fails with KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status_t kiln_module_execute(kiln_module_t* module, const char* name,
                                           kiln_tensor_t* const* inputs, size_t n_inputs,
                                           kiln_tensor_t*** outputs, size_t* n_outputs) KILN_NOEXCEPT;

/** Frees the module, unloading every method. Tensors returned by execute stay
 *  valid. NULL is a no-op. */
KILN_API void kiln_module_free(kiln_module_t* module) KILN_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Runtimes and settings (since ABI version 2)                               */
/* ------------------------------------------------------------------------ */

/** The context modules run in: the devices, backends and program importers of
 *  this build and the settings (docs/settings.md). Modules share ownership of
 *  their runtime, so it may be freed while modules of it live. Thread-safe. */
typedef struct kiln_runtime_t kiln_runtime_t;

/** Creates a runtime, reading the environment (KILN_<SETTING>) now.
 *  KILN_ERROR_INVALID_ARGUMENT naming the variable when one does not parse.
 *  \param[out] out new runtime; caller frees with kiln_runtime_free. */
KILN_API kiln_status_t kiln_runtime_create(kiln_runtime_t** out) KILN_NOEXCEPT;

/** A new handle on the process's default runtime (the one kiln_module_create
 *  uses). \param[out] out caller frees with kiln_runtime_free. */
KILN_API kiln_status_t kiln_runtime_default(kiln_runtime_t** out) KILN_NOEXCEPT;

/** Sets a setting. A process-scope setting changes it for the whole process,
 *  a runtime-scope one for this runtime's modules (docs/settings.md). A string
 *  is parsed for bool and int settings. KILN_ERROR_INVALID_ARGUMENT for an
 *  unknown name or a value of the wrong type; KILN_ERROR_INVALID_STATE when
 *  the environment fixes the setting. */
KILN_API kiln_status_t kiln_runtime_set_bool(kiln_runtime_t* runtime, const char* name, bool value) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_runtime_set_int(kiln_runtime_t* runtime, const char* name, int64_t value) KILN_NOEXCEPT;
KILN_API kiln_status_t kiln_runtime_set_string(kiln_runtime_t* runtime, const char* name,
                                               const char* value) KILN_NOEXCEPT;

/** A setting's value as text ("true"/"false", a decimal integer, or the
 *  string), written NUL-terminated into `buffer` of `capacity` bytes (cut to
 *  fit; `buffer` may be NULL when `capacity` is 0). `*length` gets the full
 *  length without the NUL, so a call with capacity 0 asks for the size.
 *  KILN_ERROR_NOT_FOUND for an unknown name. */
KILN_API kiln_status_t kiln_runtime_get_setting(const kiln_runtime_t* runtime, const char* name, char* buffer,
                                                size_t capacity, size_t* length) KILN_NOEXCEPT;

/** Releases this handle. NULL is a no-op. */
KILN_API void kiln_runtime_free(kiln_runtime_t* runtime) KILN_NOEXCEPT;

/** Number of settings in the table. */
KILN_API size_t kiln_setting_count(void) KILN_NOEXCEPT;

/** The index-th setting: its name, type ("bool", "int", "string" or the
 *  '|'-separated words of a choice), default as text, scope ("process" or
 *  "runtime") and one line of documentation. Every string is static. Any
 *  output pointer may be NULL. */
KILN_API kiln_status_t kiln_setting_describe(size_t index, const char** name, const char** type,
                                             const char** default_value, const char** scope,
                                             const char** doc) KILN_NOEXCEPT;

/** Like kiln_module_create, for a module of `runtime` (NULL: the default). */
KILN_API kiln_status_t kiln_module_create_with_runtime(kiln_runtime_t* runtime, const char* path,
                                                       const char* const* data_files, size_t n_data_files,
                                                       kiln_module_t** out) KILN_NOEXCEPT;

/** A module of the program in `data` (`size` bytes of a .kiln program with
 *  its weights inside, or of a PyTorch .pt2 package), for `runtime` (NULL:
 *  the default). The bytes are copied at once into a sealed in-memory file,
 *  so the caller may free them on return, and nothing can change them later.
 *  \param[out] out new module; caller frees with kiln_module_free. */
KILN_API kiln_status_t kiln_module_create_from_buffer(kiln_runtime_t* runtime, const void* data, size_t size,
                                                      kiln_module_t** out) KILN_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* CUDA (since ABI version 2)                                                */
/* ------------------------------------------------------------------------ */
/* Answered by the CUDA plugin, loaded on first use; KILN_ERROR_NOT_SUPPORTED
 * (the message says why) where there is no usable GPU or CUDA build. Streams
 * are cudaStream_t values passed as void*. Thread-safe. */

/** Number of visible GPUs (0 without CUDA). */
KILN_API int32_t kiln_cuda_device_count(void) KILN_NOEXCEPT;

/** The calling thread's current stream on `device` as Kiln sees it (NULL: the
 *  legacy default stream). Methods loaded with aoti option stream="caller"
 *  run on it. */
KILN_API kiln_status_t kiln_cuda_current_stream(int32_t device, void** out) KILN_NOEXCEPT;

/** Sets the calling thread's current stream on `device` (borrowed: it must
 *  outlive its use); `previous` (may be NULL) gets the one it replaces. */
KILN_API kiln_status_t kiln_cuda_set_current_stream(int32_t device, void* stream, void** previous) KILN_NOEXCEPT;

/** Counters of Kiln's caching allocator on `device`: bytes of live
 *  allocations, their peak since start or the last reset, bytes the pool holds
 *  from the driver, live allocations. Any output may be NULL. */
KILN_API kiln_status_t kiln_cuda_memory_stats(int32_t device, uint64_t* bytes_in_use, uint64_t* peak_bytes_in_use,
                                              uint64_t* bytes_reserved, uint64_t* allocations_in_use) KILN_NOEXCEPT;

/** Sets the peak to the bytes now in use on `device`. */
KILN_API kiln_status_t kiln_cuda_reset_peak_memory_stats(int32_t device) KILN_NOEXCEPT;

/** Waits for `device` to be idle and gives the allocator's cached free memory
 *  back to the driver. */
KILN_API kiln_status_t kiln_cuda_release_cached_memory(int32_t device) KILN_NOEXCEPT;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* KILN_C_API_H_ */
