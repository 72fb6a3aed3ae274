// The cuSOLVER (dense) functions Kiln calls, resolved lazily from
// libcusolver.so.12 (or $KILN_CUSOLVER_LIBRARY) on the first op that needs
// one. The toolkit header supplies types only; nothing links against cuSOLVER.
// Each routine is held per precision (s, d, c, z as LAPACK names them; the
// complex ormqr is unmqr).
#pragma once

#include <cusolverDn.h>

#include "kiln/error.h"

namespace kiln::cudadev {

struct CusolverApi {
  decltype(&cusolverDnCreate) create = nullptr;
  decltype(&cusolverDnSetStream) set_stream = nullptr;
  decltype(&cusolverDnSpotrs) spotrs = nullptr;
  decltype(&cusolverDnDpotrs) dpotrs = nullptr;
  decltype(&cusolverDnCpotrs) cpotrs = nullptr;
  decltype(&cusolverDnZpotrs) zpotrs = nullptr;
  decltype(&cusolverDnSgeqrf_bufferSize) sgeqrf_size = nullptr;
  decltype(&cusolverDnDgeqrf_bufferSize) dgeqrf_size = nullptr;
  decltype(&cusolverDnCgeqrf_bufferSize) cgeqrf_size = nullptr;
  decltype(&cusolverDnZgeqrf_bufferSize) zgeqrf_size = nullptr;
  decltype(&cusolverDnSgeqrf) sgeqrf = nullptr;
  decltype(&cusolverDnDgeqrf) dgeqrf = nullptr;
  decltype(&cusolverDnCgeqrf) cgeqrf = nullptr;
  decltype(&cusolverDnZgeqrf) zgeqrf = nullptr;
  decltype(&cusolverDnSormqr_bufferSize) sormqr_size = nullptr;
  decltype(&cusolverDnDormqr_bufferSize) dormqr_size = nullptr;
  decltype(&cusolverDnCunmqr_bufferSize) cunmqr_size = nullptr;
  decltype(&cusolverDnZunmqr_bufferSize) zunmqr_size = nullptr;
  decltype(&cusolverDnSormqr) sormqr = nullptr;
  decltype(&cusolverDnDormqr) dormqr = nullptr;
  decltype(&cusolverDnCunmqr) cunmqr = nullptr;
  decltype(&cusolverDnZunmqr) zunmqr = nullptr;
};

/// The loaded table (loads cuSOLVER on first call; thread-safe). The error
/// says which library or symbol is missing.
Result<const CusolverApi*> cusolver();

/// This thread's cuSOLVER handle for `device` (created on first use; the
/// device must be current then, as cuSOLVER binds a handle to it).
Result<cusolverDnHandle_t> cusolver_handle(const CusolverApi& api, int device);

/// Ok, or BackendFailed (OutOfMemory for CUSOLVER_STATUS_ALLOC_FAILED) naming
/// `what` and the status (cuSOLVER has no function that describes its codes).
Error cusolver_status(cusolverStatus_t status, const char* what);

}  // namespace kiln::cudadev
