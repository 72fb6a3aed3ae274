// The cuBLAS functions Kiln calls (triangular solves), resolved lazily from
// libcublas.so.13 (or $KILN_CUBLAS_LIBRARY) on the first op that needs one.
// The toolkit header supplies types only; nothing links against cuBLAS.
#pragma once

#include <cublas_v2.h>

#include "kiln/error.h"

namespace kiln::cudadev {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasStrsmBatched) strsm_batched = nullptr;
  decltype(&cublasDtrsmBatched) dtrsm_batched = nullptr;
  decltype(&cublasCtrsmBatched) ctrsm_batched = nullptr;
  decltype(&cublasZtrsmBatched) ztrsm_batched = nullptr;
};

/// The loaded table (loads cuBLAS on first call; thread-safe). The error says
/// which library or symbol is missing.
Result<const CublasApi*> cublas();

/// This thread's cuBLAS handle for `device` (created on first use; the
/// device must be current then, as cuBLAS binds a handle to it).
Result<cublasHandle_t> cublas_handle(const CublasApi& api, int device);

/// Ok, or BackendFailed (OutOfMemory for CUBLAS_STATUS_ALLOC_FAILED) naming
/// `what` and cuBLAS's status text.
Error cublas_call_status(const CublasApi& api, cublasStatus_t status, const char* what);

}  // namespace kiln::cudadev
