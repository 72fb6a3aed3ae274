#include "devices/cuda/libraries/cusolver_api.h"

#include <string>

#include "core/lazy_library.h"

namespace kiln::cudadev {
namespace {

LazyLibrary& library() {
  // libcusolver.so.12 is the soname of both the CUDA 13 toolkit's cuSOLVER and
  // the nvidia-cusolver wheel's (nvidia/cu13/lib), which torch installs. It
  // pulls in cuBLAS, cuBLASLt and cuSPARSE of the same toolkit itself.
  static LazyLibrary* lib = new LazyLibrary("cuSOLVER", SettingId::CusolverLibrary, {"libcusolver.so.12"});
  return *lib;
}

Error load(CusolverApi& api) {
  LazyLibrary& lib = library();
  KILN_RETURN_IF_ERROR(resolve(lib, api.create, "cusolverDnCreate"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.set_stream, "cusolverDnSetStream"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.spotrs, "cusolverDnSpotrs"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.dpotrs, "cusolverDnDpotrs"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.cpotrs, "cusolverDnCpotrs"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.zpotrs, "cusolverDnZpotrs"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.sgeqrf_size, "cusolverDnSgeqrf_bufferSize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.dgeqrf_size, "cusolverDnDgeqrf_bufferSize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.cgeqrf_size, "cusolverDnCgeqrf_bufferSize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.zgeqrf_size, "cusolverDnZgeqrf_bufferSize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.sgeqrf, "cusolverDnSgeqrf"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.dgeqrf, "cusolverDnDgeqrf"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.cgeqrf, "cusolverDnCgeqrf"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.zgeqrf, "cusolverDnZgeqrf"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.sormqr_size, "cusolverDnSormqr_bufferSize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.dormqr_size, "cusolverDnDormqr_bufferSize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.cunmqr_size, "cusolverDnCunmqr_bufferSize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.zunmqr_size, "cusolverDnZunmqr_bufferSize"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.sormqr, "cusolverDnSormqr"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.dormqr, "cusolverDnDormqr"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.cunmqr, "cusolverDnCunmqr"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.zunmqr, "cusolverDnZunmqr"));
  return Error::Ok;
}

const char* status_name(cusolverStatus_t status) {
  switch (status) {
    case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_MAPPING_ERROR: return "CUSOLVER_STATUS_MAPPING_ERROR";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED: return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_INVALID_WORKSPACE: return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default: return nullptr;
  }
}

}  // namespace

Result<const CusolverApi*> cusolver() { return load_table_once<CusolverApi>(load); }

Result<cusolverDnHandle_t> cusolver_handle(const CusolverApi& api, int device) {
  return thread_handle<cusolverDnHandle_t>(
      device, [&](cusolverDnHandle_t* h) { return cusolver_status(api.create(h), "cusolverDnCreate"); });
}

Error cusolver_status(cusolverStatus_t status, const char* what) {
  if (status == CUSOLVER_STATUS_SUCCESS) return Error::Ok;
  const char* name = status_name(status);
  return set_error(status == CUSOLVER_STATUS_ALLOC_FAILED ? Error::OutOfMemory : Error::BackendFailed,
                   std::string(what) + " failed: " +
                       (name ? name : "status " + std::to_string(static_cast<int>(status))));
}

}  // namespace kiln::cudadev
