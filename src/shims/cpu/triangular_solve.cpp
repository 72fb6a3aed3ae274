// aoti_torch_cpu_triangular_solve: X with op(A) X = B for triangular A (upper
// or lower, op = transpose or not, unit diagonal or read), through BLAS trsm in
// the input's precision as ATen's CPU kernel. Like trsm (and ATen), a zero on
// the diagonal is not an error: the solution holds infinities and NaNs.
// Returns (solution, cloned_coefficient): both broadcast to the common batch
// shape of B and A, batched column-major as ATen's; the second is A's values.
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/lapack_library.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/linalg_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;
using namespace kiln::cpu::linalg;

namespace {

template <typename T>
Error triangular_solve_impl(const Tensor& rhs, const Tensor& coeff, bool upper, bool transpose, bool unit,
                            const std::vector<int64_t>& batch, const Tensor& solution, const Tensor& clone) {
  constexpr const char* op = "triangular_solve";
  const int64_t n = coeff.size(coeff.dim() - 1);
  const int64_t k = rhs.size(rhs.dim() - 1);
  const int64_t batches = product(batch);
  const std::vector<Wide<T>> bvals = read_elements<Wide<T>>(rhs);
  const std::vector<Wide<T>> avals = read_elements<Wide<T>>(coeff);
  const std::vector<int64_t> bsrc = broadcast_source(batch_sizes(rhs), batch);
  const std::vector<int64_t> asrc = broadcast_source(batch_sizes(coeff), batch);
  std::vector<Wide<T>> x_all(static_cast<size_t>(batches * n * k));
  std::vector<Wide<T>> a_all(static_cast<size_t>(batches * n * n));
  for (int64_t b = 0; b < batches; ++b)
    std::copy_n(avals.begin() + asrc[static_cast<size_t>(b)] * n * n, n * n, a_all.begin() + b * n * n);
  if (n > 0 && k > 0 && batches > 0) {
    KILN_ASSIGN_OR_RETURN(const LapackFunctions* lib, lapack());
    const LapackRoutines<T>& f = lib->get<T>();
    KILN_ASSIGN_OR_RETURN(lapack_int ln, lapack_dim(n, op));
    KILN_ASSIGN_OR_RETURN(lapack_int lk, lapack_dim(k, op));
    const char side = 'L', uplo = upper ? 'U' : 'L', trans = transpose ? 'T' : 'N', diag = unit ? 'U' : 'N';
    const T one(1);
    std::vector<T> a(static_cast<size_t>(n * n));
    std::vector<T> x(static_cast<size_t>(n * k));
    for (int64_t b = 0; b < batches; ++b) {
      to_column_major<T>(avals, asrc[static_cast<size_t>(b)], n, n, a.data(), n);
      to_column_major<T>(bvals, bsrc[static_cast<size_t>(b)], n, k, x.data(), n);
      f.trsm(&side, &uplo, &trans, &diag, &ln, &lk, &one, a.data(), &ln, x.data(), &ln, 1, 1, 1, 1);
      from_column_major<T>(x.data(), n, n, k, x_all, b);
    }
  }
  write_elements(x_all.data(), solution);
  write_elements(a_all.data(), clone);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_triangular_solve(AtenTensorHandle self, AtenTensorHandle A,
                                                                int32_t upper, int32_t transpose,
                                                                int32_t unitriangular, AtenTensorHandle* ret0,
                                                                AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cpu_triangular_solve", [&]() -> Error {
    constexpr const char* op = "triangular_solve";
    KILN_ASSIGN_OR_RETURN(Tensor * rhs, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * coeff, cpu_tensor_arg(A, "A"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> batch,
                          aoti::linalg::triangular_system_args(rhs->dtype(), rhs->sizes(), coeff->dtype(),
                                                               coeff->sizes(), op, "self", "A"));
    const int64_t n = coeff->size(coeff->dim() - 1);
    KILN_ASSIGN_OR_RETURN(Tensor solution, new_column_major(batch, n, rhs->size(rhs->dim() - 1), rhs->dtype()));
    KILN_ASSIGN_OR_RETURN(Tensor clone, new_column_major(batch, n, n, coeff->dtype()));
    KILN_RETURN_IF_ERROR(visit_lapack_type(rhs->dtype(), op, "self", [&](auto tag) -> Error {
      return triangular_solve_impl<decltype(tag)>(*rhs, *coeff, upper != 0, transpose != 0, unitriangular != 0,
                                                  batch, solution, clone);
    }));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_RETURN_IF_ERROR(return_tensor(std::move(solution), ret0, "ret0"));
    return return_tensor(std::move(clone), ret1, "ret1");
  });
}

}  // extern "C"
