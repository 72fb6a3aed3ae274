// aoti_torch_cuda_int4_linear: Kiln's op kiln::int4_linear
// (python/kiln/exporter/kiln_ops.py; argument rules shared with the CPU op in
// shims/common/int4_linear_args.h): x [..., K] @ W^T with W's 4-bit codes two
// a byte in qweight [N, K / 2] and a scale and zero point per group of K in
// scale_zero [N, K / group_size, 2], float32 sums rounded once to x's dtype.
//
// Up to kDirectRows rows of x (decode) the quantized GEMV kernel reads each
// packed byte once per four rows (kernels/quantized_gemv_kernel.h); more
// rows (prefill) dequantize the weight to x's dtype in column blocks for
// cuBLASLt (dequantized_product.h). Inputs the GEMV kernel does not take
// (group sizes that are not multiples of 32, unaligned rows) run a simple
// kernel, one thread per output element. x and qweight of any layout are
// read through a contiguous copy when their rows are not (matrix_rows.h).
#include <cstdint>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/quantized_gemv_kernel.h"
#include "shims/common/int4_linear_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/dequantized_product.h"
#include "shims/cuda/matrix_rows.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

constexpr int64_t kDirectRows = 16;

Error same_device(const TensorRef& t, const TensorRef& ref, const char* name) {
  if (t.device_index != ref.device_index)
    return aoti::invalid(std::string("int4_linear: argument '") + name + "' is on CUDA device " +
                         std::to_string(t.device_index) + " but x on " + std::to_string(ref.device_index));
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_int4_linear(AtenTensorHandle x_h, AtenTensorHandle qweight_h,
                                                            AtenTensorHandle scale_zero_h, int64_t group_size,
                                                            AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_int4_linear", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(x_h, "x"));
    KILN_ASSIGN_OR_RETURN(TensorRef w, read_tensor(qweight_h, "qweight"));
    KILN_ASSIGN_OR_RETURN(TensorRef sz, read_tensor(scale_zero_h, "scale_zero"));
    KILN_ASSIGN_OR_RETURN(aoti::Int4LinearPlan plan, aoti::int4_linear_plan(x.dtype, x.sizes, w.dtype, w.sizes,
                                                                            sz.dtype, sz.sizes, group_size));
    KILN_RETURN_IF_ERROR(same_device(w, x, "qweight"));
    KILN_RETURN_IF_ERROR(same_device(sz, x, "scale_zero"));
    const int dev = x.device_index;
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_contiguous(plan.out_sizes, x.dtype, dev));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(result.get(), "ret0"));
    ScopedDevice scoped(dev);  // the kernels launch on x's device whichever is current
    KILN_RETURN_IF_ERROR(scoped.status());
    cudaStream_t stream = current_stream(dev);
    const int64_t rows = plan.rows, k = plan.k, n = plan.n;
    if (rows == 0 || n == 0) return return_handle(result, ret0, "ret0");
    if (k == 0) {
      KILN_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(r.data, 0, static_cast<size_t>(rows * n) * r.element_bytes(), stream));
      return return_handle(result, ret0, "ret0");
    }

    DeviceBuffer x_copy, w_copy;
    KILN_ASSIGN_OR_RETURN(TensorRef x2, matrix_rows(x, x_copy, stream));
    KILN_ASSIGN_OR_RETURN(TensorRef w2, matrix_rows(w, w_copy, stream));  // a strided weight: one copy
    const void* x_data = x2.data;
    const int64_t x_rs = x2.strides[0];
    const void* w_data = w2.data;
    const int64_t w_rs = w2.strides[0];

    QuantizedGemvParams p;
    p.codes = WeightCodes::Int4Groups;
    p.x = x_data;
    p.x_rs = x_rs;
    p.dtype = x.dtype;
    p.w = w_data;
    p.w_rs = w_rs;
    p.scale = sz.data;
    p.scale_dtype = sz.dtype;
    p.s_n = sz.strides[0];
    p.s_g = sz.strides[1];
    p.s_pair = sz.strides[2];
    p.group_size = group_size;
    p.out = r.data;
    p.N = n;
    p.K = k;

    if (rows > kDirectRows) {
      TensorRef out2 = r;
      out2.sizes = {rows, n};
      out2.strides = {n, 1};
      auto block = [&](int64_t j0, int64_t cols, void* out, cudaStream_t s) {
        return launch_dequantize_int4_rows(p, j0, cols, out, s);
      };
      KILN_RETURN_IF_ERROR(dequantized_product(x2, n, 1, block, out2, stream));
      return return_handle(result, ret0, "ret0");
    }
    const int64_t elem = static_cast<int64_t>(x.element_bytes());
    for (int64_t r0 = 0; r0 < rows; r0 += kQuantizedGemvMaxRows) {
      QuantizedGemvParams part = p;
      part.M = rows - r0 < kQuantizedGemvMaxRows ? rows - r0 : kQuantizedGemvMaxRows;
      part.x = static_cast<const char*>(x_data) + r0 * x_rs * elem;
      part.out = static_cast<char*>(r.data) + r0 * n * elem;
      if (quantized_gemv_unsupported(part) == nullptr) {
        KILN_RETURN_IF_ERROR(launch_quantized_gemv(part, stream));
      } else {
        KILN_RETURN_IF_ERROR(launch_int4_linear_simple(part, stream));
      }
    }
    return return_handle(result, ret0, "ret0");
  });
}

}  // extern "C"
