// aoti_torch_cpu_max_unpool{2,3}d: scatters each pooled value to its flat
// position (indices, int64, within its plane of output_size) in a zero
// result, the inverse of max_pool's indices. As ATen: a later element wins a
// position written twice; an index outside the plane is an error; the 2-d
// result of a channels-last input is channels-last. stride and padding of the
// 3-d op are checked only (ATen uses them for shape checks).
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/parallel_for.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/pooling.h"

using namespace kiln;
using namespace kiln::cpu;
using namespace kiln::cpu::pool;

namespace {

AOTITorchError max_unpool(const char* fn, int spatial, AtenTensorHandle self_h, AtenTensorHandle indices_h,
                          const int64_t* output_size, int64_t output_size_len, const int64_t* stride,
                          int64_t stride_len, const int64_t* padding, int64_t padding_len, AtenTensorHandle* ret0) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * indices, cpu_tensor_arg(indices_h, "indices"));
    KILN_RETURN_IF_ERROR(pool_dtype(self->dtype(), true));
    KILN_RETURN_IF_ERROR(aoti::pool::unpool_indices_dtype(indices->dtype()));
    KILN_RETURN_IF_ERROR(aoti::pool::unpool_indices_shape(indices->sizes(), self->sizes()));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(*self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims out, exact_dims_arg(output_size, output_size_len, spatial, "output_size"));
    KILN_RETURN_IF_ERROR(
        aoti::pool::unpool_stride_padding(spatial, stride, stride_len, padding, padding_len));
    const bool cl = spatial == 2 && channels_last_strides(*self);
    KILN_ASSIGN_OR_RETURN(Tensor result, new_output(result_sizes(p, out, spatial), self->dtype(), cl));
    const int64_t in_plane = p.plane_size(), out_plane = out[0] * out[1] * out[2];
    const std::vector<int64_t> idx = read_elements<int64_t>(*indices);
    KILN_RETURN_IF_ERROR(visit_kind(self->dtype(), [&](auto tag) -> Error {
      using T = decltype(tag);
      const std::vector<T> x = read_elements<T>(*self);
      std::vector<T> y(static_cast<size_t>(p.planes() * out_plane), T(0));
      KILN_RETURN_IF_ERROR(parallel_for(p.planes(), 4, [&](int64_t b, int64_t e) -> Error {
        for (int64_t plane = b; plane < e; ++plane) {
          T* dst = y.data() + plane * out_plane;
          for (int64_t i = plane * in_plane; i < (plane + 1) * in_plane; ++i) {
            const int64_t at = idx[static_cast<size_t>(i)];
            if (at < 0 || at >= out_plane) return aoti::pool::unpool_index_outside(at, out_plane);
            dst[at] = x[static_cast<size_t>(i)];
          }
        }
        return Error::Ok;
      }));
      write_elements(y.data(), result);
      return Error::Ok;
    }));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_max_unpool2d(AtenTensorHandle self, AtenTensorHandle indices,
                                                            const int64_t* output_size, int64_t output_size_len_,
                                                            AtenTensorHandle* ret0) {
  return max_unpool("aoti_torch_cpu_max_unpool2d", 2, self, indices, output_size, output_size_len_, nullptr, 0, nullptr,
                    0, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_max_unpool3d(AtenTensorHandle self, AtenTensorHandle indices,
                                                            const int64_t* output_size, int64_t output_size_len_,
                                                            const int64_t* stride, int64_t stride_len_,
                                                            const int64_t* padding, int64_t padding_len_,
                                                            AtenTensorHandle* ret0) {
  return max_unpool("aoti_torch_cpu_max_unpool3d", 3, self, indices, output_size, output_size_len_, stride, stride_len_,
                    padding, padding_len_, ret0);
}

}  // extern "C"
