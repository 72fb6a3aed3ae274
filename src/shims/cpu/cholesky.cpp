// aoti_torch_cpu_cholesky_inverse, aoti_torch_cpu_cholesky_solve: the inverse
// of A = L L^H (or U^H U) and the solution of A X = B, given A's Cholesky
// factor, through LAPACK's potri / potrs in the input's precision as ATen.
// Batched (cholesky_solve broadcasts the batch dimensions of B and the
// factor); results are batched column-major like ATen's. A zero on the
// factor's diagonal makes cholesky_inverse fail with ATen's words; potrs does
// not check, so cholesky_solve then gives infinities and NaNs as ATen does.
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
T conj_if_complex(T v) {
  if constexpr (is_std_complex<T>::value) return std::conj(v);
  else return v;
}

template <typename T>
Error cholesky_inverse_impl(const Tensor& factor, bool upper, const Tensor& out) {
  constexpr const char* op = "cholesky_inverse";
  const int64_t n = factor.size(factor.dim() - 1);
  const int64_t batches = product(batch_sizes(factor));
  std::vector<Wide<T>> values = read_elements<Wide<T>>(factor);
  if (n > 0 && batches > 0) {
    KILN_ASSIGN_OR_RETURN(const LapackFunctions* lib, lapack());
    const LapackRoutines<T>& f = lib->get<T>();
    KILN_ASSIGN_OR_RETURN(lapack_int ln, lapack_dim(n, op));
    const char uplo = upper ? 'U' : 'L';
    std::vector<T> a(static_cast<size_t>(n * n));
    for (int64_t b = 0; b < batches; ++b) {
      to_column_major<T>(values, b, n, n, a.data(), n);
      lapack_int info = 0;
      f.potri(&uplo, &ln, a.data(), &ln, &info, 1);
      if (info > 0)
        return aoti::invalid(std::string(op) + ": " + batch_prefix(factor.dim() > 2, b) + "The diagonal element " +
                             std::to_string(info) +
                             " is zero, the inversion could not be completed because the input matrix is singular.");
      if (info < 0) return aoti::invalid(std::string(op) + ": LAPACK potri rejected argument " + std::to_string(-info));
      // potri fills one triangle; the inverse is Hermitian.
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = j + 1; i < n; ++i) {
          if (upper) a[i + j * n] = conj_if_complex(a[j + i * n]);
          else a[j + i * n] = conj_if_complex(a[i + j * n]);
        }
      from_column_major<T>(a.data(), n, n, n, values, b);
    }
  }
  write_elements(values.data(), out);
  return Error::Ok;
}

template <typename T>
Error cholesky_solve_impl(const Tensor& rhs, const Tensor& factor, bool upper, const std::vector<int64_t>& batch,
                          const Tensor& out) {
  constexpr const char* op = "cholesky_solve";
  const int64_t n = factor.size(factor.dim() - 1);
  const int64_t k = rhs.size(rhs.dim() - 1);
  const int64_t batches = product(batch);
  std::vector<Wide<T>> result(static_cast<size_t>(batches * n * k));
  if (n > 0 && k > 0 && batches > 0) {
    KILN_ASSIGN_OR_RETURN(const LapackFunctions* lib, lapack());
    const LapackRoutines<T>& f = lib->get<T>();
    KILN_ASSIGN_OR_RETURN(lapack_int ln, lapack_dim(n, op));
    KILN_ASSIGN_OR_RETURN(lapack_int lk, lapack_dim(k, op));
    const std::vector<Wide<T>> bvals = read_elements<Wide<T>>(rhs);
    const std::vector<Wide<T>> avals = read_elements<Wide<T>>(factor);
    const std::vector<int64_t> bsrc = broadcast_source(batch_sizes(rhs), batch);
    const std::vector<int64_t> asrc = broadcast_source(batch_sizes(factor), batch);
    const char uplo = upper ? 'U' : 'L';
    std::vector<T> a(static_cast<size_t>(n * n));
    std::vector<T> x(static_cast<size_t>(n * k));
    for (int64_t b = 0; b < batches; ++b) {
      to_column_major<T>(avals, asrc[static_cast<size_t>(b)], n, n, a.data(), n);
      to_column_major<T>(bvals, bsrc[static_cast<size_t>(b)], n, k, x.data(), n);
      lapack_int info = 0;
      f.potrs(&uplo, &ln, &lk, a.data(), &ln, x.data(), &ln, &info, 1);
      if (info != 0) return aoti::invalid(std::string(op) + ": LAPACK potrs rejected argument " + std::to_string(-info));
      from_column_major<T>(x.data(), n, n, k, result, b);
    }
  }
  write_elements(result.data(), out);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cholesky_inverse(AtenTensorHandle self, int32_t upper,
                                                                AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_cholesky_inverse", [&]() -> Error {
    constexpr const char* op = "cholesky_inverse";
    KILN_ASSIGN_OR_RETURN(Tensor * factor, cpu_tensor_arg(self, "self"));
    KILN_RETURN_IF_ERROR(square_batch_arg(*factor, op, "self"));
    const int64_t n = factor->size(factor->dim() - 1);
    KILN_ASSIGN_OR_RETURN(Tensor out, new_column_major(batch_sizes(*factor), n, n, factor->dtype()));
    KILN_RETURN_IF_ERROR(visit_lapack_type(factor->dtype(), op, "self", [&](auto tag) -> Error {
      return cholesky_inverse_impl<decltype(tag)>(*factor, upper != 0, out);
    }));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cholesky_solve(AtenTensorHandle self, AtenTensorHandle input2,
                                                              int32_t upper, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_cholesky_solve", [&]() -> Error {
    constexpr const char* op = "cholesky_solve";
    KILN_ASSIGN_OR_RETURN(Tensor * rhs, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * factor, cpu_tensor_arg(input2, "input2"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> batch,
                          aoti::linalg::triangular_system_args(rhs->dtype(), rhs->sizes(), factor->dtype(),
                                                               factor->sizes(), op, "self", "input2"));
    const int64_t n = factor->size(factor->dim() - 1);
    KILN_ASSIGN_OR_RETURN(Tensor out, new_column_major(batch, n, rhs->size(rhs->dim() - 1), rhs->dtype()));
    KILN_RETURN_IF_ERROR(visit_lapack_type(rhs->dtype(), op, "self", [&](auto tag) -> Error {
      return cholesky_solve_impl<decltype(tag)>(*rhs, *factor, upper != 0, batch, out);
    }));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
