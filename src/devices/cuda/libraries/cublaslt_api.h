// The cuBLASLt functions Kiln calls, resolved lazily from libcublasLt.so.13
// (or $KILN_CUBLASLT_LIBRARY) on the first GEMM. The toolkit header supplies
// types only; nothing links against cuBLASLt.
#pragma once

#include <cublasLt.h>

#include "kiln/error.h"

namespace kiln::cudadev {

struct CublasLtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
};

/// The loaded table (loads cuBLASLt on first call; thread-safe). The error
/// says which library or symbol is missing.
Result<const CublasLtApi*> cublaslt();

/// This thread's cuBLASLt handle for the current device (created on first use).
Result<cublasLtHandle_t> cublaslt_handle(const CublasLtApi& api, int device);

/// Ok, or BackendFailed naming `what` and cuBLASLt's status text.
Error cublas_status(const CublasLtApi& api, cublasStatus_t status, const char* what);

}  // namespace kiln::cudadev
