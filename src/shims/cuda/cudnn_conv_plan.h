// Convolutions through cuDNN's backend (graph) API, with the finalized
// execution plan of each configuration cached per thread.
//
// Why: cuDNN 9's legacy entry points (cudnnConvolutionForward and
// cudnnConvolutionBackwardData) build and finalize an operation graph and an
// engine configuration inside every call. On an H100 that is about 65 us of
// host time per convolution: ResNet-50 at batch 1 spent 5.35 ms of host time a
// call against 1.98 ms in PyTorch's loader, which executes cached plans.
// Here a configuration's plan is built once (heuristics, then the first engine
// configuration that finalizes and runs) and later calls only build a variant
// pack (or reuse the last one when the pointers repeat) and execute.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "devices/cuda/libraries/cudnn_api.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// One convolution, in cuDNN's terms: dims in logical order (N, C, spatial)
/// with the strides that give the memory layout, for x (the input), w and y
/// (the output). For a transposed convolution x is cuDNN's dy and y its dx.
struct ConvProblem {
  bool transposed = false;
  cudnnDataType_t io_type = CUDNN_DATA_FLOAT;
  cudnnDataType_t compute_type = CUDNN_DATA_FLOAT;
  /// float32 without TF32: engines that use tensor cores or convert inputs
  /// down are skipped.
  bool fp32_strict = false;
  std::vector<int64_t> x_sizes, x_strides, w_sizes, w_strides, y_sizes, y_strides;
  std::vector<int64_t> pad, stride, dilation;
};

struct ConvPointers {
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
};

/// Runs the convolution `describe()` returns on `stream` with the plan cached
/// under `key` for this thread (built on the first call; `key` must identify
/// everything in the problem). `describe` is called only to build a plan, so
/// a cached call fills no ConvProblem (nine vectors); pass a lambda through
/// std::cref so that the std::function does not allocate either. Ok when
/// the convolution was enqueued. NotSupported when `stream` is capturing and
/// this thread has no plan yet, or when cuDNN's backend API has no
/// engine for it, remembered for the key, so that the caller can take the
/// legacy API from then on without asking again; other errors as they come.
Error run_planned_convolution(const CudnnApi& api, cudnnHandle_t handle, const std::string& key,
                              const std::function<ConvProblem()>& describe, const ConvPointers& ptrs, int device,
                              cudaStream_t stream);

}  // namespace kiln::cudadev
