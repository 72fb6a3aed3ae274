#include "devices/cuda/libraries/cublaslt_api.h"

#include <string>

#include "core/lazy_library.h"

namespace kiln::cudadev {
namespace {

LazyLibrary& library() {
  static LazyLibrary* lib = new LazyLibrary("cuBLASLt", SettingId::CublasltLibrary, {"libcublasLt.so.13"});
  return *lib;
}

Error load(CublasLtApi& api) {
  LazyLibrary& lib = library();
  KILN_RETURN_IF_ERROR(resolve(lib, api.create, "cublasLtCreate"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.desc_create, "cublasLtMatmulDescCreate"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.desc_destroy, "cublasLtMatmulDescDestroy"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.desc_set, "cublasLtMatmulDescSetAttribute"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.layout_create, "cublasLtMatrixLayoutCreate"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.layout_destroy, "cublasLtMatrixLayoutDestroy"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.layout_set, "cublasLtMatrixLayoutSetAttribute"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.pref_create, "cublasLtMatmulPreferenceCreate"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.pref_destroy, "cublasLtMatmulPreferenceDestroy"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.pref_set, "cublasLtMatmulPreferenceSetAttribute"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.heuristic, "cublasLtMatmulAlgoGetHeuristic"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.matmul, "cublasLtMatmul"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.status_string, "cublasLtGetStatusString"));
  return Error::Ok;
}

}  // namespace

Result<const CublasLtApi*> cublaslt() { return load_table_once<CublasLtApi>(load); }

Result<cublasLtHandle_t> cublaslt_handle(const CublasLtApi& api, int device) {
  return thread_handle<cublasLtHandle_t>(
      device, [&](cublasLtHandle_t* h) { return cublas_status(api, api.create(h), "cublasLtCreate"); });
}

Error cublas_status(const CublasLtApi& api, cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Error::Ok;
  const char* text = api.status_string ? api.status_string(status) : nullptr;
  return set_error(status == CUBLAS_STATUS_ALLOC_FAILED ? Error::OutOfMemory : Error::BackendFailed,
                   std::string(what) + " failed: " + (text ? text : "status " + std::to_string(static_cast<int>(status))));
}

}  // namespace kiln::cudadev
