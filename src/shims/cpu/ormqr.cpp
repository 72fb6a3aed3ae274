// aoti_torch_cpu_ormqr: other multiplied by the Q that geqrf's Householder
// reflectors (self, tau) represent: Q C, Q^T C (Q^H for complex), C Q or
// C Q^T, through LAPACK's ormqr / unmqr in the input's precision as ATen's CPU
// kernel. As ATen: self, tau and other share batch dimensions exactly (no
// broadcasting); the result has other's shape, batched column-major.
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

constexpr const char* kOp = "ormqr";

template <typename T>
Error ormqr_impl(const Tensor& input, const Tensor& tau_t, const Tensor& other, bool left, bool transpose,
                 const Tensor& out) {
  const int64_t rows = input.size(input.dim() - 2);  // the reflectors' length
  const int64_t cols = input.size(input.dim() - 1);
  const int64_t k = tau_t.size(tau_t.dim() - 1);
  const int64_t m = other.size(other.dim() - 2);
  const int64_t n = other.size(other.dim() - 1);
  const int64_t batches = product(batch_sizes(other));
  std::vector<Wide<T>> c_all = read_elements<Wide<T>>(other);
  if (m > 0 && n > 0 && k > 0 && batches > 0) {
    KILN_ASSIGN_OR_RETURN(const LapackFunctions* lib, lapack());
    const LapackRoutines<T>& f = lib->get<T>();
    KILN_ASSIGN_OR_RETURN(lapack_int lm, lapack_dim(m, kOp));
    KILN_ASSIGN_OR_RETURN(lapack_int ln, lapack_dim(n, kOp));
    KILN_ASSIGN_OR_RETURN(lapack_int lk, lapack_dim(k, kOp));
    KILN_ASSIGN_OR_RETURN(lapack_int lda, lapack_dim(rows, kOp));
    const std::vector<Wide<T>> a_all = read_elements<Wide<T>>(input);
    const std::vector<Wide<T>> tau_all = read_elements<Wide<T>>(tau_t);
    const char side = left ? 'L' : 'R';
    const char trans = !transpose ? 'N' : (is_std_complex<T>::value ? 'C' : 'T');
    std::vector<T> a(static_cast<size_t>(rows * k));
    std::vector<T> tau(static_cast<size_t>(k));
    std::vector<T> c(static_cast<size_t>(m * n));
    T query{};
    lapack_int lwork = -1, info = 0;
    f.ormqr(&side, &trans, &lm, &ln, &lk, a.data(), &lda, tau.data(), c.data(), &lm, &query, &lwork, &info, 1, 1);
    lwork = std::max<lapack_int>(static_cast<lapack_int>(std::real(query)), std::max<lapack_int>(left ? ln : lm, 1));
    std::vector<T> work(static_cast<size_t>(lwork));
    for (int64_t b = 0; b < batches; ++b) {
      // Only the first k columns hold reflectors.
      const Wide<T>* src = a_all.data() + b * rows * cols;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < k; ++j) a[static_cast<size_t>(i + j * rows)] = static_cast<T>(src[i * cols + j]);
      for (int64_t i = 0; i < k; ++i) tau[static_cast<size_t>(i)] = static_cast<T>(tau_all[static_cast<size_t>(b * k + i)]);
      to_column_major<T>(c_all, b, m, n, c.data(), m);
      f.ormqr(&side, &trans, &lm, &ln, &lk, a.data(), &lda, tau.data(), c.data(), &lm, work.data(), &lwork, &info, 1,
              1);
      if (info != 0) return aoti::invalid(std::string(kOp) + ": LAPACK ormqr rejected argument " + std::to_string(-info));
      from_column_major<T>(c.data(), m, m, n, c_all, b);
    }
  }
  write_elements(c_all.data(), out);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_ormqr(AtenTensorHandle self, AtenTensorHandle input2,
                                                     AtenTensorHandle input3, int32_t left, int32_t transpose,
                                                     AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_ormqr", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * input, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * tau, cpu_tensor_arg(input2, "input2"));
    KILN_ASSIGN_OR_RETURN(Tensor * other, cpu_tensor_arg(input3, "input3"));
    KILN_RETURN_IF_ERROR(aoti::linalg::ormqr_args(input->dtype(), input->sizes(), tau->dtype(), tau->sizes(),
                                                  other->dtype(), other->sizes(), left != 0));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_column_major(batch_sizes(*other), other->size(other->dim() - 2),
                                                       other->size(other->dim() - 1), other->dtype()));
    KILN_RETURN_IF_ERROR(visit_lapack_type(input->dtype(), kOp, "self", [&](auto tag) -> Error {
      return ormqr_impl<decltype(tag)>(*input, *tau, *other, left != 0, transpose != 0, out);
    }));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
