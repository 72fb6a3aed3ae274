// The C entry points an AOTInductor model library exports (torch 2.11's
// aoti_runtime/interface.h, declared here in our own words), looked up once per
// library. Required ones fail the load when absent; optional ones differ across
// torch versions and are null when the library lacks them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aoti/aoti_library.h"
#include "shims/common/shim_abi.h"
#include "kiln/error.h"

namespace kiln::aoti {

struct ContainerOpaque;
using ContainerHandle = ContainerOpaque*;
using AotiStreamHandle = void*;
using ProxyExecutorHandle = void*;
/// One (constant name, tensor) pair of a user-managed constant buffer.
struct ConstantMapEntry {
  const char* name;
  AtenTensorHandle handle;
};

struct EntryPoints {
  // Required.
  AOTIRuntimeError (*create_with_device)(ContainerHandle*, size_t num_models, const char* device,
                                         const char* cubin_dir) = nullptr;
  AOTIRuntimeError (*destroy)(ContainerHandle) = nullptr;
  // Input handles are stolen; output handles are owned by the caller.
  AOTIRuntimeError (*run)(ContainerHandle, AtenTensorHandle* inputs, size_t num_inputs, AtenTensorHandle* outputs,
                          size_t num_outputs, AotiStreamHandle, ProxyExecutorHandle) = nullptr;
  AOTIRuntimeError (*get_num_inputs)(ContainerHandle, size_t*) = nullptr;
  AOTIRuntimeError (*get_num_outputs)(ContainerHandle, size_t*) = nullptr;
  // Optional.
  AOTIRuntimeError (*run_single_threaded)(ContainerHandle, AtenTensorHandle*, size_t, AtenTensorHandle*, size_t,
                                          AotiStreamHandle, ProxyExecutorHandle) = nullptr;
  AOTIRuntimeError (*get_constants_blob_size)(ContainerHandle, uint64_t*) = nullptr;
  AOTIRuntimeError (*update_constants_from_blob)(ContainerHandle, const uint8_t*) = nullptr;
  AOTIRuntimeError (*get_num_constants)(ContainerHandle, size_t*) = nullptr;
  AOTIRuntimeError (*get_call_spec)(ContainerHandle, const char**, const char**) = nullptr;
  // Constants the caller owns (the container borrows the handles).
  AOTIRuntimeError (*update_user_managed_constant_buffer_pairs)(ContainerHandle, const ConstantMapEntry* pairs,
                                                                size_t num_pairs, bool use_inactive,
                                                                bool validate_full_update) = nullptr;

  /// Looks every entry point up in `library`. BackendFailed naming the first
  /// missing required one.
  static Result<EntryPoints> resolve(const AotiLibrary& library);
};

}  // namespace kiln::aoti
