#include "devices/cpu/lapack_library.h"

#include <string>

#include "core/lazy_library.h"

namespace kiln::cpu {
namespace {

LazyLibrary& library() {
  static LazyLibrary* lib = new LazyLibrary(
      "LAPACK (for the CPU linear-algebra ops)", SettingId::BlasLibrary, {"libopenblas.so.0", "liblapack.so.3"},
      {"dpotrs_", "dgeqrf_", "dormqr_", "zunmqr_", "dtrsm_"},
      "Install OpenBLAS (Debian/Ubuntu: apt-get install libopenblas0)");
  return *lib;
}

template <typename T>
Error load_routines(LazyLibrary& lib, LapackRoutines<T>& r, char prefix, const char* qr_multiply) {
  const std::string p(1, prefix);
  KILN_RETURN_IF_ERROR(resolve(lib, r.potri, (p + "potri_").c_str()));
  KILN_RETURN_IF_ERROR(resolve(lib, r.potrs, (p + "potrs_").c_str()));
  KILN_RETURN_IF_ERROR(resolve(lib, r.geqrf, (p + "geqrf_").c_str()));
  KILN_RETURN_IF_ERROR(resolve(lib, r.ormqr, (p + qr_multiply).c_str()));
  KILN_RETURN_IF_ERROR(resolve(lib, r.trsm, (p + "trsm_").c_str()));
  return Error::Ok;
}

Error load(LapackFunctions& f) {
  LazyLibrary& lib = library();
  KILN_RETURN_IF_ERROR(load_routines(lib, f.s, 's', "ormqr_"));
  KILN_RETURN_IF_ERROR(load_routines(lib, f.d, 'd', "ormqr_"));
  KILN_RETURN_IF_ERROR(load_routines(lib, f.c, 'c', "unmqr_"));
  KILN_RETURN_IF_ERROR(load_routines(lib, f.z, 'z', "unmqr_"));
  return Error::Ok;
}

}  // namespace

Result<const LapackFunctions*> lapack() { return load_table_once<LapackFunctions>(load); }

}  // namespace kiln::cpu
