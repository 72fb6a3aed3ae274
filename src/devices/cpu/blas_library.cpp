#include "devices/cpu/blas_library.h"

#include <string>

#include "core/lazy_library.h"
#include "kiln/log.h"

namespace kiln::cpu {
namespace {

LazyLibrary& library() {
  static LazyLibrary* lib = new LazyLibrary(
      "CBLAS (for the CPU matrix ops)", SettingId::BlasLibrary, {"libopenblas.so.0", "libblas.so.3"},
      {"cblas_sgemm", "cblas_dgemm"}, "Install OpenBLAS (Debian/Ubuntu: apt-get install libopenblas0)");
  return *lib;
}

Error load(BlasFunctions& functions) {
  LazyLibrary& lib = library();
  KILN_RETURN_IF_ERROR(resolve(lib, functions.sgemm, "cblas_sgemm"));
  KILN_RETURN_IF_ERROR(resolve(lib, functions.dgemm, "cblas_dgemm"));
  auto sgemv = reinterpret_cast<decltype(functions.sgemv)>(lib.optional_symbol("cblas_sgemv"));
  auto dgemv = reinterpret_cast<decltype(functions.dgemv)>(lib.optional_symbol("cblas_dgemv"));
  if (sgemv && dgemv) {
    functions.sgemv = sgemv;
    functions.dgemv = dgemv;
  }
  // Searched in the library and its dependencies: the libgomp it is bound to.
  auto get = reinterpret_cast<int (*)()>(lib.optional_symbol("omp_get_max_threads"));
  auto set = reinterpret_cast<void (*)(int)>(lib.optional_symbol("omp_set_num_threads"));
  if (get && set) {
    functions.omp_get_max_threads = get;
    functions.omp_set_num_threads = set;
  }
  // Which kernels OpenBLAS chose for this CPU: its OPENBLAS_CORETYPE, when set, forces
  // a family (Haswell's, AVX2 only, runs MiniLM at 0.55-0.6 of the speed on an AVX-512 CPU).
  if (auto corename = reinterpret_cast<char* (*)()>(lib.optional_symbol("openblas_get_corename")))
    KILN_LOG(Info, std::string("OpenBLAS runs its ") + corename() + " kernels");
  return Error::Ok;
}

}  // namespace

Result<const BlasFunctions*> blas() { return load_table_once<BlasFunctions>(load); }

}  // namespace kiln::cpu
