#include "devices/cuda/libraries/cudnn_api.h"

#include <string>

#include "core/lazy_library.h"

namespace kiln::cudadev {
namespace {

LazyLibrary& library() {
  static LazyLibrary* lib = new LazyLibrary("cuDNN", SettingId::CudnnLibrary, {"libcudnn.so.9"});
  return *lib;
}

Error load(CudnnApi& api) {
  LazyLibrary& lib = library();
  KILN_RETURN_IF_ERROR(resolve(lib, api.create, "cudnnCreate"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.set_stream, "cudnnSetStream"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.error_string, "cudnnGetErrorString"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.tensor_create, "cudnnCreateTensorDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.tensor_destroy, "cudnnDestroyTensorDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.tensor_set, "cudnnSetTensorNdDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.filter_create, "cudnnCreateFilterDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.filter_destroy, "cudnnDestroyFilterDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.filter_set, "cudnnSetFilterNdDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.conv_create, "cudnnCreateConvolutionDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.conv_destroy, "cudnnDestroyConvolutionDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.conv_set, "cudnnSetConvolutionNdDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.conv_set_groups, "cudnnSetConvolutionGroupCount"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.conv_set_math, "cudnnSetConvolutionMathType"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.fwd_algos, "cudnnGetConvolutionForwardAlgorithm_v7"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.fwd, "cudnnConvolutionForward"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.bwd_data_algos, "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.bwd_data, "cudnnConvolutionBackwardData"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.add_tensor, "cudnnAddTensor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.backend_create, "cudnnBackendCreateDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.backend_destroy, "cudnnBackendDestroyDescriptor"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.backend_set, "cudnnBackendSetAttribute"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.backend_get, "cudnnBackendGetAttribute"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.backend_finalize, "cudnnBackendFinalize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.backend_execute, "cudnnBackendExecute"));
  return Error::Ok;
}

}  // namespace

Result<const CudnnApi*> cudnn() { return load_table_once<CudnnApi>(load); }

Result<cudnnHandle_t> cudnn_handle(const CudnnApi& api, int device) {
  return thread_handle<cudnnHandle_t>(device,
                                      [&](cudnnHandle_t* h) { return cudnn_status(api, api.create(h), "cudnnCreate"); });
}

Error cudnn_status(const CudnnApi& api, cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return Error::Ok;
  const char* text = api.error_string ? api.error_string(status) : nullptr;
  return set_error(status == CUDNN_STATUS_ALLOC_FAILED ? Error::OutOfMemory : Error::BackendFailed,
                   std::string(what) + " failed: " + (text ? text : "status " + std::to_string(static_cast<int>(status))));
}

}  // namespace kiln::cudadev
