// aoti_torch_cuda__trilinear: the contraction behind nn.Bilinear. i1, i2 and
// i3 are unsqueezed at the dims in expand1/2/3 to one common rank, broadcast,
// multiplied, and summed over sumdim (those dims are dropped), with the CPU
// op's checks and messages (shims/common/trilinear_args.h); unroll_dim must
// be a dim of the common rank but only orders ATen's loops. One kernel on the
// current stream (kernels/trilinear_kernel.cu) reads the operands in place,
// any strides. ATen composes the op from products and batched matrix
// products in the operands' dtype; here each result element is one sum
// accumulated in float32 (float16/bfloat16/float32), float64, complex, or
// wrapping integers, so float16/bfloat16 results can differ from ATen's by
// its intermediate roundings. One dtype for all three (as ATen); the result
// is a new contiguous tensor the caller owns.
#include <array>
#include <span>
#include <string>
#include <vector>

#include "devices/cuda/kernels/trilinear_kernel.h"
#include "shims/common/trilinear_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;
namespace tri = kiln::aoti::trilinear;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__trilinear(AtenTensorHandle i1, AtenTensorHandle i2,
                                                           AtenTensorHandle i3, const int64_t* expand1,
                                                           int64_t expand1_len_, const int64_t* expand2,
                                                           int64_t expand2_len_, const int64_t* expand3,
                                                           int64_t expand3_len_, const int64_t* sumdim,
                                                           int64_t sumdim_len_, int64_t unroll_dim,
                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__trilinear", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    const char* names[3] = {"i1", "i2", "i3"};
    const AtenTensorHandle handles[3] = {i1, i2, i3};
    const int64_t* const expands[3] = {expand1, expand2, expand3};
    const int64_t expand_lens[3] = {expand1_len_, expand2_len_, expand3_len_};
    std::array<TensorRef, 3> t;
    for (int i = 0; i < 3; ++i) {
      KILN_ASSIGN_OR_RETURN(t[static_cast<size_t>(i)], read_tensor(handles[i], names[i]));
    }
    KILN_RETURN_IF_ERROR(same_dtype_and_device(t[1], t[0], "i2", "i1"));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(t[2], t[0], "i3", "i1"));
    const DType dt = t[0].dtype;
    if (!trilinear_dtype(dt))
      return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(dt) + " is not supported");
    KILN_ASSIGN_OR_RETURN(tri::Plan plan, tri::plan({t[0].sizes, t[1].sizes, t[2].sizes}, expands, expand_lens,
                                                    sumdim, sumdim_len_, unroll_dim));
    TrilinearGeometry g;
    if (plan.out_dims.size() > static_cast<size_t>(TrilinearGeometry::kMaxDims) ||
        plan.sum_dims.size() > static_cast<size_t>(TrilinearGeometry::kMaxDims))
      return set_error(Error::NotSupported, "more than " + std::to_string(TrilinearGeometry::kMaxDims) +
                                                " kept or summed dimensions are not supported by this CUDA op");
    std::vector<int64_t> strides[3];
    for (int i = 0; i < 3; ++i) {
      const TensorRef& x = t[static_cast<size_t>(i)];
      strides[i] = tri::common_strides(plan, i, x.sizes, x.strides);
    }
    g.out_ndim = static_cast<int>(plan.out_dims.size());
    g.sum_ndim = static_cast<int>(plan.sum_dims.size());
    g.outputs = 1;
    for (int k = 0; k < g.out_ndim; ++k) {
      const auto d = static_cast<size_t>(plan.out_dims[static_cast<size_t>(k)]);
      g.out_sizes[k] = plan.common[d];
      g.outputs *= plan.common[d];
      for (int i = 0; i < 3; ++i) g.out_strides[i][k] = strides[i][d];
    }
    for (int k = 0; k < g.sum_ndim; ++k) {
      const auto d = static_cast<size_t>(plan.sum_dims[static_cast<size_t>(k)]);
      g.sum_sizes[k] = plan.common[d];
      g.terms *= plan.common[d];
      for (int i = 0; i < 3; ++i) g.sum_strides[i][k] = strides[i][d];
    }
    const int device = t[0].device_index;
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(plan.out_sizes, dt, device));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(launch_trilinear(t[0].data, t[1].data, t[2].data, o.data, dt, g, current_stream(device)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
