// The cuDNN functions Kiln calls (cuDNN 9's backend API, and its legacy
// convolution API as the fallback),
// resolved lazily from libcudnn.so.9 (or $KILN_CUDNN_LIBRARY) on the first
// convolution. cudnn.h supplies types only; nothing links against cuDNN.
#pragma once

#include <cudnn.h>

#include "kiln/error.h"

namespace kiln::cudadev {

struct CudnnApi {
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnCreateTensorDescriptor) tensor_create = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) tensor_destroy = nullptr;
  decltype(&cudnnSetTensorNdDescriptor) tensor_set = nullptr;
  decltype(&cudnnCreateFilterDescriptor) filter_create = nullptr;
  decltype(&cudnnDestroyFilterDescriptor) filter_destroy = nullptr;
  decltype(&cudnnSetFilterNdDescriptor) filter_set = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) conv_create = nullptr;
  decltype(&cudnnDestroyConvolutionDescriptor) conv_destroy = nullptr;
  decltype(&cudnnSetConvolutionNdDescriptor) conv_set = nullptr;
  decltype(&cudnnSetConvolutionGroupCount) conv_set_groups = nullptr;
  decltype(&cudnnSetConvolutionMathType) conv_set_math = nullptr;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) fwd_algos = nullptr;
  decltype(&cudnnConvolutionForward) fwd = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) bwd_data_algos = nullptr;
  decltype(&cudnnConvolutionBackwardData) bwd_data = nullptr;
  decltype(&cudnnAddTensor) add_tensor = nullptr;
  // Backend (graph) API: convolutions with cached execution plans.
  decltype(&cudnnBackendCreateDescriptor) backend_create = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) backend_destroy = nullptr;
  decltype(&cudnnBackendSetAttribute) backend_set = nullptr;
  decltype(&cudnnBackendGetAttribute) backend_get = nullptr;
  decltype(&cudnnBackendFinalize) backend_finalize = nullptr;
  decltype(&cudnnBackendExecute) backend_execute = nullptr;
};

/// The loaded table (loads cuDNN on first call; thread-safe).
Result<const CudnnApi*> cudnn();

/// This thread's cuDNN handle for `device` (created on first use).
Result<cudnnHandle_t> cudnn_handle(const CudnnApi& api, int device);

/// Ok, or BackendFailed naming `what` and cuDNN's status text.
Error cudnn_status(const CudnnApi& api, cudnnStatus_t status, const char* what);

}  // namespace kiln::cudadev
