// aoti_torch_cuda_baddbmm_out and aoti_torch_cuda_addbmm: batched products
// added to a scaled self, on matmul.cpp's products (cuBLASLt, or the GEMV
// kernel for few rows). As ATen's CUDA kernels: one dtype throughout
// (float16, bfloat16, float32, float64, complex64, complex128), self
// broadcasts to the result, with beta == 0 self is checked but never read
// (its NaNs do not propagate), and an empty inner dimension leaves beta *
// self. baddbmm_out writes `out`, which the caller owns and sizes; addbmm
// returns a new contiguous tensor the caller owns. addbmm sums the batch's
// products as one product of (n, B*k) by (B*k, p).
#include <string>
#include <utility>
#include <vector>

#include "devices/cuda/device/strided_copy.h"
#include "shims/common/product_args.h"
#include "shims/common/shim_util.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/matmul.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

aoti::product::Factor factor(const TensorRef& t) {
  return {t.dtype, t.sizes, Device{DeviceType::CUDA, t.device_index}};
}

Error check_batches(const TensorRef& b1, const TensorRef& b2) {
  return aoti::product::batches(factor(b1), factor(b2));
}

// The stride of dimensions (outer, inner) of sizes (outer_size, inner_size)
// read as one dimension of outer_size * inner_size elements, if one stride
// walks them in order.
bool merged_stride(int64_t outer_size, int64_t outer_stride, int64_t inner_size, int64_t inner_stride,
                   int64_t* stride) {
  if (outer_size == 1 || outer_size * inner_size == 0) *stride = inner_stride;
  else if (inner_size == 1) *stride = outer_stride;
  else if (outer_stride == inner_size * inner_stride) *stride = inner_stride;
  else return false;
  return true;
}

// A 2-D view of the 3-D `t` whose rows are dimension `row_dim` and whose
// columns are the other two dimensions in order (outer, inner) merged; when
// no stride walks those, `t` is first copied into `holder`, laid out so that
// one does (dimension order: row_dim outermost, then outer, inner).
Result<TensorRef> matrix_view(const TensorRef& t, int row_dim, int outer, int inner, DeviceBuffer& holder,
                              cudaStream_t stream) {
  TensorRef m = t;
  std::vector<int64_t> strides = t.strides;
  int64_t col_stride = 0;
  if (!merged_stride(t.sizes[outer], strides[outer], t.sizes[inner], strides[inner], &col_stride)) {
    const int order[3] = {row_dim, outer, inner};
    strides = dense_strides_in_order(t.sizes, order);
    KILN_ASSIGN_OR_RETURN(holder, copy_to_layout(t, strides, stream));
    m.data = holder.get();
    if (!merged_stride(t.sizes[outer], strides[outer], t.sizes[inner], strides[inner], &col_stride))
      return set_error(Error::Internal, "a dense copy of " + t.describe() + " still cannot be viewed as a matrix");
  }
  m.handle = nullptr;
  m.sizes = {t.sizes[row_dim], t.sizes[outer] * t.sizes[inner]};
  m.strides = {strides[row_dim], col_stride};
  return m;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                            AtenTensorHandle batch1, AtenTensorHandle batch2,
                                                            double beta, double alpha) {
  return aoti::guarded("aoti_torch_cuda_baddbmm_out", [&]() -> Error {
    {
      // The batches' shape rule first, so a bad batch gets the message every
      // device gives; read_product then checks out against them.
      KILN_RETURN_IF_ERROR(read_tensor(out, "out").error());
      KILN_ASSIGN_OR_RETURN(const TensorRef b1, read_tensor(batch1, "batch1"));
      KILN_ASSIGN_OR_RETURN(const TensorRef b2, read_tensor(batch2, "batch2"));
      KILN_RETURN_IF_ERROR(check_batches(b1, b2));
    }
    TensorRef o, a, b;
    KILN_RETURN_IF_ERROR(read_product(out, batch1, batch2, "batch1", "batch2", 3, o, a, b));
    KILN_ASSIGN_OR_RETURN(const TensorRef s, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(check_same(o, s, "self"));
    KILN_RETURN_IF_ERROR(aoti::product::broadcasts_to(s.sizes, o.sizes, "self"));
    KILN_ASSIGN_OR_RETURN(const std::vector<int64_t> self_strides, broadcast_strides(s, o.sizes, "self"));
    // The addend goes into out first (unless out is self), where the product adds to it through beta.
    const bool same = s.data == o.data && s.sizes == o.sizes && s.strides == o.strides;
    if (beta != 0.0 && !same && o.numel() > 0) {
      ScopedDevice scoped(o.device_index);
      KILN_RETURN_IF_ERROR(scoped.status());
      KILN_RETURN_IF_ERROR(launch_strided_copy(o.data, o.strides.data(), s.data, self_strides.data(),
                                               o.sizes.data(), o.dim(), o.element_bytes(),
                                               current_stream(o.device_index)));
    }
    return matmul_into(o, a, b, alpha, beta);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addbmm(AtenTensorHandle self, AtenTensorHandle batch1,
                                                       AtenTensorHandle batch2, double beta, double alpha,
                                                       AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_addbmm", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(const TensorRef s, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(const TensorRef b1, read_tensor(batch1, "batch1"));
    KILN_ASSIGN_OR_RETURN(const TensorRef b2, read_tensor(batch2, "batch2"));
    KILN_RETURN_IF_ERROR(check_batches(b1, b2));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(b1, s, "batch1", "self"));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(b2, s, "batch2", "self"));
    KILN_RETURN_IF_ERROR(check_product_dtype(s.dtype));
    const std::vector<int64_t> sizes{b1.sizes[1], b2.sizes[2]};
    KILN_RETURN_IF_ERROR(aoti::product::broadcasts_to(s.sizes, sizes, "self"));
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_contiguous(sizes, s.dtype, s.device_index));
    KILN_ASSIGN_OR_RETURN(const TensorRef o, read_tensor(result.get(), "ret0"));

    ScopedDevice scoped(s.device_index);
    KILN_RETURN_IF_ERROR(scoped.status());
    cudaStream_t stream = current_stream(s.device_index);
    // sum_i batch1[i] @ batch2[i] is one product whose inner dimension runs
    // over (i, k): batch1 read as (n, B*k), batch2 as (B*k, p). Each is used
    // in place when one stride walks its merged dimension, else copied so
    // that one does (batch1 stored as (n, B, k), batch2 as (p, B, k)).
    DeviceBuffer hold_a, hold_b;
    KILN_ASSIGN_OR_RETURN(const TensorRef a, matrix_view(b1, 1, 0, 2, hold_a, stream));
    // matrix_view gives batch2 as (p, B*k); the product takes its transpose.
    KILN_ASSIGN_OR_RETURN(TensorRef b, matrix_view(b2, 2, 0, 1, hold_b, stream));
    std::swap(b.sizes[0], b.sizes[1]);
    std::swap(b.strides[0], b.strides[1]);
    KILN_RETURN_IF_ERROR(addmm_into(o, self, a, b, beta, alpha));
    return return_handle(result, ret0, "ret0");
  });
}

}  // extern "C"
