#include "devices/cuda/libraries/cublaslt_api.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "devices/cuda/libraries/lazy_library.h"

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

Result<const CublasLtApi*> cublaslt() {
  static std::once_flag once;
  static CublasLtApi api;
  static Error status = Error::Ok;
  static std::string message;
  std::call_once(once, [] {
    status = load(api);
    if (status != Error::Ok) message = last_error_message();
  });
  if (status != Error::Ok) return set_error(status, message);
  return &api;
}

Result<cublasLtHandle_t> cublaslt_handle(const CublasLtApi& api, int device) {
  // One handle per thread and device: never shared between threads, and
  // deliberately not destroyed at thread exit (the CUDA context may be gone).
  thread_local std::unordered_map<int, cublasLtHandle_t> handles;
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  KILN_RETURN_IF_ERROR(cublas_status(api, api.create(&h), "cublasLtCreate"));
  handles.emplace(device, h);
  return h;
}

Error cublas_status(const CublasLtApi& api, cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Error::Ok;
  const char* text = api.status_string ? api.status_string(status) : nullptr;
  return set_error(status == CUBLAS_STATUS_ALLOC_FAILED ? Error::OutOfMemory : Error::BackendFailed,
                   std::string(what) + " failed: " + (text ? text : "status " + std::to_string(static_cast<int>(status))));
}

}  // namespace kiln::cudadev
