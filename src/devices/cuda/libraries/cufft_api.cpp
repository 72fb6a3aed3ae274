#include "devices/cuda/libraries/cufft_api.h"

#include <string>

#include "core/lazy_library.h"

namespace kiln::cudadev {
namespace {

LazyLibrary& library() {
  // libcufft.so.12 is the soname of both the CUDA 13 toolkit's cuFFT and the
  // nvidia-cufft wheel's (nvidia/cu13/lib), which torch installs.
  static LazyLibrary* lib = new LazyLibrary("cuFFT", SettingId::CufftLibrary, {"libcufft.so.12"});
  return *lib;
}

Error load(CufftApi& api) {
  LazyLibrary& lib = library();
  KILN_RETURN_IF_ERROR(resolve(lib, api.create, "cufftCreate"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.destroy, "cufftDestroy"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.set_auto_allocation, "cufftSetAutoAllocation"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.make_plan_many, "cufftMakePlanMany64"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.set_work_area, "cufftSetWorkArea"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.set_stream, "cufftSetStream"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.exec_c2c, "cufftExecC2C"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.exec_z2z, "cufftExecZ2Z"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.exec_r2c, "cufftExecR2C"));
  KILN_RETURN_IF_ERROR(resolve(lib, api.exec_d2z, "cufftExecD2Z"));
  return Error::Ok;
}

const char* status_name(cufftResult status) {
  switch (status) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    case CUFFT_MISSING_DEPENDENCY: return "CUFFT_MISSING_DEPENDENCY";
    default: return nullptr;
  }
}

}  // namespace

Result<const CufftApi*> cufft() { return load_table_once<CufftApi>(load); }

Error cufft_status(cufftResult status, const char* what) {
  if (status == CUFFT_SUCCESS) return Error::Ok;
  const char* name = status_name(status);
  return set_error(status == CUFFT_ALLOC_FAILED ? Error::OutOfMemory : Error::BackendFailed,
                   std::string(what) + " failed: " +
                       (name ? name : "status " + std::to_string(static_cast<int>(status))));
}

}  // namespace kiln::cudadev
