// aoti_torch_cpu_lu_unpack: P, L, U from the packed LU factorization
// linalg.lu_factor gives (LU_data [..., m, n], LU_pivots [..., min(m, n)]
// int32, 1-based row swaps) with A = P L U. L is unit lower triangular
// [..., m, k], U upper triangular [..., k, n], P the permutation [..., m, m],
// all of LU_data's dtype and contiguous. As ATen: a pivot outside [1, m] is an
// error; a result not asked for (unpack_data / unpack_pivots false) is an
// empty [0]. Unlike ATen, pivots whose batch dimensions differ from LU_data's
// are refused rather than broadcast (ATen's broadcast gives wrong P's).
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/linalg_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;
using namespace kiln::cpu::linalg;

namespace {

template <typename W>
Error unpack(const Tensor& lu, const Tensor& pivots, bool unpack_data, bool unpack_pivots, const Tensor& p_out,
             const Tensor& l_out, const Tensor& u_out) {
  const int64_t m = lu.size(lu.dim() - 2);
  const int64_t n = lu.size(lu.dim() - 1);
  const int64_t k = std::min(m, n);
  const std::vector<int64_t> batch = batch_sizes(lu);
  const int64_t batches = product(batch);
  if (unpack_data) {
    const std::vector<W> v = read_elements<W>(lu);
    std::vector<W> l(static_cast<size_t>(batches * m * k));
    std::vector<W> u(static_cast<size_t>(batches * k * n));
    for (int64_t b = 0; b < batches; ++b) {
      const W* src = v.data() + b * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j)
          l[static_cast<size_t>((b * m + i) * k + j)] = i > j ? src[i * n + j] : (i == j ? W(1) : W(0));
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j) u[static_cast<size_t>((b * k + i) * n + j)] = j >= i ? src[i * n + j] : W(0);
    }
    write_elements(l.data(), l_out);
    write_elements(u.data(), u_out);
  }
  if (unpack_pivots) {
    const std::vector<int64_t> piv = read_elements<int64_t>(pivots);
    std::vector<W> p(static_cast<size_t>(batches * m * m), W(0));
    std::vector<int64_t> perm(static_cast<size_t>(m));
    for (int64_t b = 0; b < batches; ++b) {
      std::iota(perm.begin(), perm.end(), int64_t{0});
      const int64_t* row = piv.data() + b * k;
      for (int64_t i = 0; i < k; ++i) {
        if (row[i] < 1 || row[i] > m) return aoti::linalg::lu_pivot_range_error(row[i], m);
        std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(row[i] - 1)]);
      }
      // Row perm[j] of A is row j of L U: P has a one at (perm[j], j).
      for (int64_t j = 0; j < m; ++j) p[static_cast<size_t>((b * m + perm[static_cast<size_t>(j)]) * m + j)] = W(1);
    }
    write_elements(p.data(), p_out);
  }
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_lu_unpack(AtenTensorHandle LU_data, AtenTensorHandle LU_pivots,
                                                         int32_t unpack_data, int32_t unpack_pivots,
                                                         AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                                         AtenTensorHandle* ret2) {
  return aoti::guarded("aoti_torch_cpu_lu_unpack", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * lu, cpu_tensor_arg(LU_data, "LU_data"));
    KILN_ASSIGN_OR_RETURN(Tensor * pivots, cpu_tensor_arg(LU_pivots, "LU_pivots"));
    KILN_RETURN_IF_ERROR(aoti::linalg::lu_unpack_args(lu->sizes(), pivots->dtype(), pivots->sizes()));
    const int64_t m = lu->size(lu->dim() - 2);
    const int64_t n = lu->size(lu->dim() - 1);
    const int64_t k = std::min(m, n);
    const std::vector<int64_t> batch = batch_sizes(*lu);
    const DType dt = lu->dtype();
    const std::vector<int64_t> none{0};
    auto with = [&](int64_t r, int64_t c) {
      std::vector<int64_t> s = batch;
      s.push_back(r);
      s.push_back(c);
      return s;
    };
    KILN_ASSIGN_OR_RETURN(Tensor p, new_cpu_tensor(unpack_pivots ? with(m, m) : none, dt));
    KILN_ASSIGN_OR_RETURN(Tensor l, new_cpu_tensor(unpack_data ? with(m, k) : none, dt));
    KILN_ASSIGN_OR_RETURN(Tensor u, new_cpu_tensor(unpack_data ? with(k, n) : none, dt));
    KILN_RETURN_IF_ERROR(visit_kind(dt, [&](auto tag) -> Error {
      return unpack<decltype(tag)>(*lu, *pivots, unpack_data != 0, unpack_pivots != 0, p, l, u);
    }));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret2, "ret2"));
    KILN_RETURN_IF_ERROR(return_tensor(std::move(p), ret0, "ret0"));
    KILN_RETURN_IF_ERROR(return_tensor(std::move(l), ret1, "ret1"));
    return return_tensor(std::move(u), ret2, "ret2");
  });
}

}  // extern "C"
