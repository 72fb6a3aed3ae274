// The BLAS library behind the CPU matrix ops, opened on first use.
//
// OpenBLAS linked statically would add ~25 MB to libkiln.so (its archive
// holds kernels for every x86 generation), and linked dynamically it would
// make libkiln unloadable on machines without it even for models that never
// call a CPU fallback op. So it is dlopen'ed the first time a GEMM runs
// (core/lazy_library.h): setting blas_library if set, else libopenblas.so.0,
// else libblas.so.3 (any CBLAS-providing build). Thread-safe.
#pragma once

#include <cblas.h>

#include "kiln/error.h"

namespace kiln::cpu {

struct BlasFunctions {
  void (*sgemm)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float, const float*, blasint,
                const float*, blasint, float, float*, blasint);
  void (*dgemm)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, double, const double*,
                blasint, const double*, blasint, double, double*, blasint);
  // Matrix-vector products (null when the library lacks them: gemm() then
  // uses the GEMMs for those shapes too).
  void (*sgemv)(CBLAS_ORDER, CBLAS_TRANSPOSE, blasint, blasint, float, const float*, blasint, const float*, blasint,
                float, float*, blasint) = nullptr;
  void (*dgemv)(CBLAS_ORDER, CBLAS_TRANSPOSE, blasint, blasint, double, const double*, blasint, const double*,
                blasint, double, double*, blasint) = nullptr;
  // The OpenMP runtime an OpenMP build of OpenBLAS threads with (null for other
  // builds). Its GEMMs use omp_get_max_threads() of the calling thread, which
  // the model's run sets (aoti.num_threads); gemm() lowers it for small products.
  int (*omp_get_max_threads)() = nullptr;
  void (*omp_set_num_threads)(int) = nullptr;
};

/// The loaded functions, or NotSupported naming the libraries tried (and how
/// to install one) when none could be opened. The first call loads.
Result<const BlasFunctions*> blas();

}  // namespace kiln::cpu
