// aoti_torch_cuda_scatter_src_out, aoti_torch_cuda_scatter_value_out,
// aoti_torch_cuda_scatter_reduce_two_out: out = self with, for every element
// of `index` at coordinates c, out[c with c[dim] = index[c]] set to (or
// folded with) src[c] or `value`, one thread per index element
// (kernels/scatter_kernel.cu). The arguments are checked as on the CPU
// (shims/common/scatter_args.h); the dtypes are those ATen's CUDA kernels
// dispatch on: scatter.src any, scatter.value all but uint16/32/64 (and
// float8, which ATen takes but Kiln cannot convert a Scalar to yet), sum
// bool, integers, floating and complex, prod/mean/amax/amin integers and
// floating. `out` (any strides) may be self itself; else self is copied into
// it first. Reductions are atomic, so a floating sum's rounding depends on
// the order the threads land in, as ATen's does; where an index repeats,
// plain scatter keeps one of the writes (ATen leaves it unspecified too).
// Every index value is checked before anything is written: outside a CUDA
// graph capture an out-of-range one is an error naming it (one
// synchronisation); under capture nothing is read back and such elements are
// skipped.
#include <string>
#include <vector>

#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/scatter_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

AOTITorchError scatter_impl(const char* fn, AtenTensorHandle out_h, AtenTensorHandle self_h, int64_t dim,
                            AtenTensorHandle index_h, AtenTensorHandle src_h, const double* value,
                            const char* reduce, bool include_self) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef out, read_tensor(out_h, "out"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef index, read_tensor(index_h, "index"));
    TensorRef src;
    if (value == nullptr) {
      KILN_ASSIGN_OR_RETURN(src, read_tensor(src_h, "src"));
    }
    const aoti::ScatterOperand src_arg{src.dtype, src.sizes};
    KILN_ASSIGN_OR_RETURN(aoti::ScatterArgs a,
                          aoti::scatter_args({out.dtype, out.sizes}, {self.dtype, self.sizes}, dim,
                                             {index.dtype, index.sizes}, value == nullptr ? &src_arg : nullptr,
                                             reduce));
    if (value != nullptr) KILN_RETURN_IF_ERROR(aoti::scatter_value_check(*value, self.dtype));
    KILN_RETURN_IF_ERROR(same_device(out, self, "out"));
    KILN_RETURN_IF_ERROR(same_device(index, self, "index"));
    if (value == nullptr) KILN_RETURN_IF_ERROR(same_device(src, self, "src"));
    const cudaStream_t stream = current_stream(self.device_index);
    if (a.empty_index) return copy_self_to_out(out, self, stream);

    const DType dt = self.dtype;
    if (a.reduce != aoti::Reduction::Replace) {
      KILN_RETURN_IF_ERROR(cuda_reduction_dtype_check(a.reduce, dt, "scatter_reduce"));
    } else if (value != nullptr && (dt == DType::UInt16 || dt == DType::UInt32 || dt == DType::UInt64 ||
                                    dt == DType::Float8_e4m3fn || dt == DType::Float8_e5m2)) {
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(dt) +
                           ", which scatter with a scalar value does not support on CUDA");
    }

    const std::vector<int64_t> is = aoti::nonempty_sizes(index.sizes), os = aoti::nonempty_sizes(out.sizes);
    ScatterPlan p;
    KILN_RETURN_IF_ERROR(plan_dims(p, is));
    p.dim = static_cast<int>(a.dim);
    p.dim_size = os[static_cast<size_t>(a.dim)];
    const std::vector<int64_t> ist = nonempty_strides(index), ost = nonempty_strides(out);
    const std::vector<int64_t> cst = contiguous_strides(os);
    const std::vector<int64_t> sst = value == nullptr ? nonempty_strides(src) : std::vector<int64_t>(is.size(), 0);
    for (size_t d = 0; d < is.size(); ++d) {
      p.index_strides[d] = ist[d];
      p.out_strides[d] = ost[d];
      p.src_strides[d] = sst[d];
      p.count_strides[d] = cst[d];
    }
    p.index = index.data;
    p.index_dtype = index.dtype;
    p.out = out.data;
    p.dtype = dt;
    p.src = value == nullptr ? src.data : nullptr;
    p.value = value == nullptr ? 0.0 : *value;

    KILN_RETURN_IF_ERROR(check_scatter_indices(p, a.dim, self.device_index, stream));
    KILN_RETURN_IF_ERROR(copy_self_to_out(out, self, stream));
    if (a.reduce == aoti::Reduction::Replace) return launch_scatter(p, ScatterOp::Assign, stream);
    return run_scatter_reduction(p, a.reduce, include_self, out, self.device_index, stream);
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                int64_t dim, AtenTensorHandle index,
                                                                AtenTensorHandle src) {
  return scatter_impl("aoti_torch_cuda_scatter_src_out", out, self, dim, index, src, nullptr, nullptr, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                  int64_t dim, AtenTensorHandle index, double value) {
  return scatter_impl("aoti_torch_cuda_scatter_value_out", out, self, dim, index, nullptr, &value, nullptr, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                       int64_t dim, AtenTensorHandle index,
                                                                       AtenTensorHandle src, const char* reduce,
                                                                       int32_t include_self) {
  if (reduce == nullptr) reduce = "";
  return scatter_impl("aoti_torch_cuda_scatter_reduce_two_out", out, self, dim, index, src, nullptr, reduce,
                      include_self != 0);
}

}  // extern "C"
