#include "devices/cuda/libraries/cublas_api.h"

#include <string>

#include "core/lazy_library.h"

namespace kiln::cudadev {
namespace {

LazyLibrary& library() {
  // libcublas.so.13 is the soname of the CUDA 13 toolkit's cuBLAS and of the
  // nvidia-cublas wheel's (nvidia/cu13/lib), which torch installs.
  static LazyLibrary* lib = new LazyLibrary("cuBLAS", SettingId::CublasLibrary, {"libcublas.so.13"});
  return *lib;
}

Error load(CublasApi& api) {
  LazyLibrary& lib = library();
  KILN_RETURN_IF_ERROR(resolve(lib, api.create, "cublasCreate_v2"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.set_stream, "cublasSetStream_v2"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.status_string, "cublasGetStatusString"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.strsm_batched, "cublasStrsmBatched"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.dtrsm_batched, "cublasDtrsmBatched"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.ctrsm_batched, "cublasCtrsmBatched"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.ztrsm_batched, "cublasZtrsmBatched"));
  return Error::Ok;
}

}  // namespace

Result<const CublasApi*> cublas() { return load_table_once<CublasApi>(load); }

Result<cublasHandle_t> cublas_handle(const CublasApi& api, int device) {
  return thread_handle<cublasHandle_t>(
      device, [&](cublasHandle_t* h) { return cublas_call_status(api, api.create(h), "cublasCreate"); });
}

Error cublas_call_status(const CublasApi& api, cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Error::Ok;
  const char* text = api.status_string ? api.status_string(status) : nullptr;
  return set_error(status == CUBLAS_STATUS_ALLOC_FAILED ? Error::OutOfMemory : Error::BackendFailed,
                   std::string(what) + " failed: " + (text ? text : "status " + std::to_string(static_cast<int>(status))));
}

}  // namespace kiln::cudadev
