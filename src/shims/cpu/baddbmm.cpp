// aoti_torch_cpu_baddbmm_out and aoti_torch_cpu_addbmm: batched products added
// to a scaled self, through kiln::cpu::matmul (BLAS for float dtypes). As
// ATen: self broadcasts to the result, every operand has one dtype, and with
// beta == 0 self is not read (its NaNs do not propagate). addbmm sums the
// batch's products as one product of (n, B*m) by (B*m, p).
#include <string>
#include <vector>

#include "shims/common/product_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/matmul.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

aoti::product::Factor factor(const Tensor& t) { return {t.dtype(), t.sizes(), t.device()}; }

Error check_batches(const Tensor& b1, const Tensor& b2, DType dtype) {
  KILN_RETURN_IF_ERROR(aoti::product::batches(factor(b1), factor(b2)));
  KILN_RETURN_IF_ERROR(same_dtype(b1, dtype, "batch1"));
  return same_dtype(b2, dtype, "batch2");
}

// A contiguous copy of `src` laid out in memory as `order` permutes its dims
// (the copy's dim order[i] is stored i-th), viewed back in src's dim order.
Result<Tensor> permuted_copy(const Tensor& src, std::vector<int64_t> order) {
  std::vector<int64_t> stored(order.size());
  for (size_t i = 0; i < order.size(); ++i) stored[i] = src.size(order[i]);
  KILN_ASSIGN_OR_RETURN(Tensor buf, new_cpu_tensor(stored, src.dtype()));
  const std::vector<int64_t> cs = contiguous_strides(stored);
  std::vector<int64_t> strides(order.size());
  for (size_t i = 0; i < order.size(); ++i) strides[order[i]] = cs[i];
  Tensor view(buf.storage(), src.dtype(), src.sizes(), strides, 0);
  KILN_RETURN_IF_ERROR(copy_tensor(view, src));
  return view;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                           AtenTensorHandle batch1, AtenTensorHandle batch2,
                                                           double beta, double alpha) {
  return aoti::guarded("aoti_torch_cpu_baddbmm_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * o, cpu_tensor_arg(out, "out"));
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * b1, cpu_tensor_arg(batch1, "batch1"));
    KILN_ASSIGN_OR_RETURN(Tensor * b2, cpu_tensor_arg(batch2, "batch2"));
    KILN_RETURN_IF_ERROR(check_batches(*b1, *b2, s->dtype()));
    KILN_RETURN_IF_ERROR(same_dtype(*o, s->dtype(), "out"));
    const std::vector<int64_t> sizes{b1->size(0), b1->size(1), b2->size(2)};
    KILN_RETURN_IF_ERROR(expect_shape(*o, sizes, "out"));
    KILN_RETURN_IF_ERROR(aoti::product::broadcasts_to(s->sizes(), sizes, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor init, broadcast_view(*s, sizes, "self"));
    return matmul(*o, &init, *b1, *b2, beta, alpha, 1);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addbmm(AtenTensorHandle self, AtenTensorHandle batch1,
                                                      AtenTensorHandle batch2, double beta, double alpha,
                                                      AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_addbmm", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * b1, cpu_tensor_arg(batch1, "batch1"));
    KILN_ASSIGN_OR_RETURN(Tensor * b2, cpu_tensor_arg(batch2, "batch2"));
    KILN_RETURN_IF_ERROR(check_batches(*b1, *b2, s->dtype()));
    const int64_t batches = b1->size(0), n = b1->size(1), m = b1->size(2), p = b2->size(2);
    const std::vector<int64_t> sizes{n, p};
    KILN_RETURN_IF_ERROR(aoti::product::broadcasts_to(s->sizes(), sizes, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor init, broadcast_view(*s, sizes, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(sizes, s->dtype()));
    // batch1 stored as (n, B, m) and batch2 as (B, m, p) make the sum over the batch one inner dimension.
    KILN_ASSIGN_OR_RETURN(Tensor a3, permuted_copy(*b1, {1, 0, 2}));
    KILN_ASSIGN_OR_RETURN(Tensor b3, permuted_copy(*b2, {0, 1, 2}));
    const Tensor a(a3.storage(), a3.dtype(), {n, batches * m}, {batches * m, 1}, 0);
    const Tensor b(b3.storage(), b3.dtype(), {batches * m, p}, {p, 1}, 0);
    KILN_RETURN_IF_ERROR(matmul(result, &init, a, b, beta, alpha, 0));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
