// aoti_torch_cpu_geqrf: the QR factorization of each matrix of a batch as
// LAPACK's geqrf gives it (R on and above the diagonal, the Householder
// vectors below it, and their scalars tau), in the input's precision as
// ATen's CPU kernel; `a` is batched column-major and `tau` contiguous
// [..., min(m, n)], as ATen returns them.
#include <algorithm>
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
Error geqrf_impl(const Tensor& input, const Tensor& a_out, const Tensor& tau_out) {
  constexpr const char* op = "geqrf";
  const int64_t m = input.size(input.dim() - 2);
  const int64_t n = input.size(input.dim() - 1);
  const int64_t k = std::min(m, n);
  const int64_t batches = product(batch_sizes(input));
  std::vector<Wide<T>> values = read_elements<Wide<T>>(input);
  std::vector<Wide<T>> taus(static_cast<size_t>(batches * k));
  if (k > 0 && batches > 0) {
    KILN_ASSIGN_OR_RETURN(const LapackFunctions* lib, lapack());
    const LapackRoutines<T>& f = lib->get<T>();
    KILN_ASSIGN_OR_RETURN(lapack_int lm, lapack_dim(m, op));
    KILN_ASSIGN_OR_RETURN(lapack_int ln, lapack_dim(n, op));
    std::vector<T> a(static_cast<size_t>(m * n));
    std::vector<T> tau(static_cast<size_t>(k));
    // Workspace size query.
    T query{};
    lapack_int lwork = -1, info = 0;
    f.geqrf(&lm, &ln, a.data(), &lm, tau.data(), &query, &lwork, &info);
    lwork = std::max<lapack_int>(static_cast<lapack_int>(std::real(query)), std::max<lapack_int>(ln, 1));
    std::vector<T> work(static_cast<size_t>(lwork));
    for (int64_t b = 0; b < batches; ++b) {
      to_column_major<T>(values, b, m, n, a.data(), m);
      f.geqrf(&lm, &ln, a.data(), &lm, tau.data(), work.data(), &lwork, &info);
      if (info != 0) return aoti::invalid(std::string(op) + ": LAPACK geqrf rejected argument " + std::to_string(-info));
      from_column_major<T>(a.data(), m, m, n, values, b);
      for (int64_t i = 0; i < k; ++i) taus[static_cast<size_t>(b * k + i)] = static_cast<Wide<T>>(tau[static_cast<size_t>(i)]);
    }
  }
  write_elements(values.data(), a_out);
  write_elements(taus.data(), tau_out);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_geqrf(AtenTensorHandle self, AtenTensorHandle* ret0,
                                                     AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cpu_geqrf", [&]() -> Error {
    constexpr const char* op = "geqrf";
    KILN_ASSIGN_OR_RETURN(Tensor * input, cpu_tensor_arg(self, "self"));
    KILN_RETURN_IF_ERROR(matrix_batch_arg(*input, op, "self"));
    const std::vector<int64_t> batch = batch_sizes(*input);
    const int64_t m = input->size(input->dim() - 2);
    const int64_t n = input->size(input->dim() - 1);
    KILN_ASSIGN_OR_RETURN(Tensor a, new_column_major(batch, m, n, input->dtype()));
    std::vector<int64_t> tau_sizes = batch;
    tau_sizes.push_back(std::min(m, n));
    KILN_ASSIGN_OR_RETURN(Tensor tau, new_cpu_tensor(tau_sizes, input->dtype()));
    KILN_RETURN_IF_ERROR(visit_lapack_type(input->dtype(), op, "self", [&](auto tag) -> Error {
      return geqrf_impl<decltype(tag)>(*input, a, tau);
    }));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_RETURN_IF_ERROR(return_tensor(std::move(a), ret0, "ret0"));
    return return_tensor(std::move(tau), ret1, "ret1");
  });
}

}  // extern "C"
