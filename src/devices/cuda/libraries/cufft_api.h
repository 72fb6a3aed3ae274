// The cuFFT functions Kiln calls, resolved lazily from libcufft.so.12 (or
// $KILN_CUFFT_LIBRARY) on the first FFT. The toolkit header supplies types
// only; nothing links against cuFFT.
#pragma once

#include <cufft.h>

#include "kiln/error.h"

namespace kiln::cudadev {

struct CufftApi {
  decltype(&cufftCreate) create = nullptr;
  decltype(&cufftDestroy) destroy = nullptr;
  decltype(&cufftSetAutoAllocation) set_auto_allocation = nullptr;
  decltype(&cufftMakePlanMany64) make_plan_many = nullptr;
  decltype(&cufftSetWorkArea) set_work_area = nullptr;
  decltype(&cufftSetStream) set_stream = nullptr;
  decltype(&cufftExecC2C) exec_c2c = nullptr;
  decltype(&cufftExecZ2Z) exec_z2z = nullptr;
  decltype(&cufftExecR2C) exec_r2c = nullptr;
  decltype(&cufftExecD2Z) exec_d2z = nullptr;
};

/// The loaded table (loads cuFFT on first call; thread-safe). The error says
/// which library or symbol is missing.
Result<const CufftApi*> cufft();

/// Ok, or BackendFailed (OutOfMemory for CUFFT_ALLOC_FAILED) naming `what`
/// and the status (cuFFT has no function that describes its codes).
Error cufft_status(cufftResult status, const char* what);

}  // namespace kiln::cudadev
