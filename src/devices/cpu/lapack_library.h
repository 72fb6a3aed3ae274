// The LAPACK routines behind the CPU linear-algebra fallback ops (Cholesky
// inverse and solve, QR, triangular solves), opened on first use like the
// BLAS (blas_library.h): a model that never calls one never loads LAPACK.
// OpenBLAS exports LAPACK's Fortran symbols itself, so the same
// libopenblas.so.0 usually serves both; liblapack.so.3 is the fallback. The
// setting blas_library is tried first when it names a library that has them.
//
// Fortran calling convention: every argument by pointer, matrices
// column-major, and a hidden length (size_t) after the other arguments for
// each CHARACTER argument. Thread-safe.
#pragma once

#include <complex>
#include <cstddef>

#include "kiln/error.h"

namespace kiln::cpu {

/// LAPACK's INTEGER (32-bit in the LP64 builds Debian and pip ship).
using lapack_int = int;

template <typename T>
struct LapackRoutines {
  // Inverse of A = U^H U or L L^H from its Cholesky factor (in place).
  void (*potri)(const char* uplo, const lapack_int* n, T* a, const lapack_int* lda, lapack_int* info, size_t);
  // Solves A X = B given A's Cholesky factor.
  void (*potrs)(const char* uplo, const lapack_int* n, const lapack_int* nrhs, const T* a, const lapack_int* lda,
                T* b, const lapack_int* ldb, lapack_int* info, size_t);
  // QR factorization as Householder reflectors.
  void (*geqrf)(const lapack_int* m, const lapack_int* n, T* a, const lapack_int* lda, T* tau, T* work,
                const lapack_int* lwork, lapack_int* info);
  // C := op(Q) C or C op(Q), Q from geqrf's reflectors (ormqr for real T,
  // unmqr for complex T).
  void (*ormqr)(const char* side, const char* trans, const lapack_int* m, const lapack_int* n, const lapack_int* k,
                const T* a, const lapack_int* lda, const T* tau, T* c, const lapack_int* ldc, T* work,
                const lapack_int* lwork, lapack_int* info, size_t, size_t);
  // BLAS triangular solve with several right-hand sides (no singularity check).
  void (*trsm)(const char* side, const char* uplo, const char* transa, const char* diag, const lapack_int* m,
               const lapack_int* n, const T* alpha, const T* a, const lapack_int* lda, T* b, const lapack_int* ldb,
               size_t, size_t, size_t, size_t);
};

struct LapackFunctions {
  LapackRoutines<float> s;
  LapackRoutines<double> d;
  LapackRoutines<std::complex<float>> c;
  LapackRoutines<std::complex<double>> z;

  template <typename T>
  const LapackRoutines<T>& get() const;
};

template <>
inline const LapackRoutines<float>& LapackFunctions::get<float>() const { return s; }
template <>
inline const LapackRoutines<double>& LapackFunctions::get<double>() const { return d; }
template <>
inline const LapackRoutines<std::complex<float>>& LapackFunctions::get<std::complex<float>>() const { return c; }
template <>
inline const LapackRoutines<std::complex<double>>& LapackFunctions::get<std::complex<double>>() const { return z; }

/// The loaded routines, or NotSupported naming the libraries tried (and how to
/// install one) when none could be opened. The first call loads.
Result<const LapackFunctions*> lapack();

}  // namespace kiln::cpu
