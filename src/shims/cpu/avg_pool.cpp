// aoti_torch_cpu_avg_pool{2,3}d and aoti_torch_cpu__adaptive_avg_pool{2,3}d:
// window means over each (n, c) plane. As ATen's CPU kernels: windows clipped
// to the input, divided by divisor_override, else by the window size with
// (count_include_pad) or without padding; integer inputs (avg_pool only) sum
// in int64 and divide truncating; 2-d results of a channels-last input are
// channels-last (3-d results always contiguous).
#include <algorithm>
#include <string>
#include <type_traits>
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

constexpr int64_t kPlaneGrain = 4;

AOTITorchError avg_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* kernel_size,
                        int64_t kernel_size_len, const int64_t* stride, int64_t stride_len, const int64_t* padding,
                        int64_t padding_len, int32_t ceil_mode, int32_t count_include_pad,
                        const int64_t* divisor_override, AtenTensorHandle* ret0) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_RETURN_IF_ERROR(pool_dtype(self->dtype(), true));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(*self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims k, dims_arg(kernel_size, kernel_size_len, spatial, "kernel_size", 1));
    KILN_RETURN_IF_ERROR(positive(k, "kernel_size"));
    KILN_ASSIGN_OR_RETURN(Dims s, dims_arg(stride, stride_len, spatial, "stride", 1, &k));
    KILN_RETURN_IF_ERROR(positive(s, "stride"));
    KILN_ASSIGN_OR_RETURN(Dims pad, dims_arg(padding, padding_len, spatial, "padding", 0));
    if (divisor_override && *divisor_override == 0) return aoti::invalid("argument 'divisor_override' is zero");
    KILN_ASSIGN_OR_RETURN(Dims out, window_output(p, k, s, pad, Dims{1, 1, 1}, ceil_mode != 0));
    const bool cl = spatial == 2 && channels_last_strides(*self);
    KILN_ASSIGN_OR_RETURN(Tensor result, new_output(result_sizes(p, out, spatial), self->dtype(), cl));
    const int64_t in_plane = p.plane_size(), out_plane = out[0] * out[1] * out[2];
    KILN_RETURN_IF_ERROR(visit_input(*self, [&](const auto* x) -> Error {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(x)>>;
      {
        std::vector<T> y(static_cast<size_t>(p.planes() * out_plane));
        KILN_RETURN_IF_ERROR(parallel_for(p.planes(), kPlaneGrain, [&](int64_t b, int64_t e) -> Error {
          for (int64_t plane = b; plane < e; ++plane) {
            const T* src = x + plane * in_plane;
            T* dst = y.data() + plane * out_plane;
            for (int64_t ot = 0; ot < out[0]; ++ot)
              for (int64_t oh = 0; oh < out[1]; ++oh)
                for (int64_t ow = 0; ow < out[2]; ++ow) {
                  int64_t lo[3], hi[3];
                  const int64_t o[3] = {ot, oh, ow};
                  int64_t padded = 1, inside = 1;
                  for (int i = 0; i < 3; ++i) {
                    lo[i] = o[i] * s[i] - pad[i];
                    hi[i] = std::min(lo[i] + k[i], p.in[i] + pad[i]);
                    padded *= hi[i] - lo[i];
                    lo[i] = std::max<int64_t>(lo[i], 0);
                    hi[i] = std::min(hi[i], p.in[i]);
                    inside *= std::max<int64_t>(hi[i] - lo[i], 0);
                  }
                  T& r = dst[(ot * out[1] + oh) * out[2] + ow];
                  if (inside == 0) {
                    r = T(0);
                    continue;
                  }
                  T sum = T(0);
                  for (int64_t t = lo[0]; t < hi[0]; ++t)
                    for (int64_t h = lo[1]; h < hi[1]; ++h) {
                      const T* row = src + (t * p.in[1] + h) * p.in[2];
                      for (int64_t w = lo[2]; w < hi[2]; ++w) sum += row[w];
                    }
                  const int64_t divisor = divisor_override ? *divisor_override : (count_include_pad ? padded : inside);
                  r = sum / static_cast<T>(divisor);
                }
          }
          return Error::Ok;
        }));
        write_values(y.data(), result);
        return Error::Ok;
      }
    }));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

AOTITorchError adaptive_avg_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* output_size,
                                 int64_t output_size_len, AtenTensorHandle* ret0) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_RETURN_IF_ERROR(pool_dtype(self->dtype(), false));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(*self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims out, exact_dims_arg(output_size, output_size_len, spatial, "output_size"));
    const bool cl = spatial == 2 && channels_last_strides(*self);
    KILN_ASSIGN_OR_RETURN(Tensor result, new_output(result_sizes(p, out, spatial), self->dtype(), cl));
    const int64_t in_plane = p.plane_size(), out_plane = out[0] * out[1] * out[2];
    if (result.numel() == 0) return return_tensor(std::move(result), ret0, "ret0");
    KILN_RETURN_IF_ERROR(visit_input(*self, [&](const auto* x) -> Error {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(x)>>;
      std::vector<T> y(static_cast<size_t>(p.planes() * out_plane));
      KILN_RETURN_IF_ERROR(parallel_for(p.planes(), kPlaneGrain, [&](int64_t b, int64_t e) -> Error {
        for (int64_t plane = b; plane < e; ++plane) {
          const T* src = x + plane * in_plane;
          T* dst = y.data() + plane * out_plane;
          for (int64_t ot = 0; ot < out[0]; ++ot) {
            const int64_t t0 = adaptive_start(ot, p.in[0], out[0]), t1 = adaptive_end(ot, p.in[0], out[0]);
            for (int64_t oh = 0; oh < out[1]; ++oh) {
              const int64_t h0 = adaptive_start(oh, p.in[1], out[1]), h1 = adaptive_end(oh, p.in[1], out[1]);
              for (int64_t ow = 0; ow < out[2]; ++ow) {
                const int64_t w0 = adaptive_start(ow, p.in[2], out[2]), w1 = adaptive_end(ow, p.in[2], out[2]);
                T sum = 0;
                for (int64_t t = t0; t < t1; ++t)
                  for (int64_t h = h0; h < h1; ++h) {
                    const T* row = src + (t * p.in[1] + h) * p.in[2];
                    for (int64_t w = w0; w < w1; ++w) sum += row[w];
                  }
                dst[(ot * out[1] + oh) * out[2] + ow] = sum / static_cast<T>((t1 - t0) * (h1 - h0) * (w1 - w0));
              }
            }
          }
        }
        return Error::Ok;
      }));
      write_values(y.data(), result);
      return Error::Ok;
    }));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_avg_pool2d(AtenTensorHandle self, const int64_t* kernel_size,
                                                          int64_t kernel_size_len_, const int64_t* stride,
                                                          int64_t stride_len_, const int64_t* padding,
                                                          int64_t padding_len_, int32_t ceil_mode,
                                                          int32_t count_include_pad, int64_t* divisor_override,
                                                          AtenTensorHandle* ret0) {
  return avg_pool("aoti_torch_cpu_avg_pool2d", 2, self, kernel_size, kernel_size_len_, stride, stride_len_, padding,
                  padding_len_, ceil_mode, count_include_pad, divisor_override, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_avg_pool3d(AtenTensorHandle self, const int64_t* kernel_size,
                                                          int64_t kernel_size_len_, const int64_t* stride,
                                                          int64_t stride_len_, const int64_t* padding,
                                                          int64_t padding_len_, int32_t ceil_mode,
                                                          int32_t count_include_pad, int64_t* divisor_override,
                                                          AtenTensorHandle* ret0) {
  return avg_pool("aoti_torch_cpu_avg_pool3d", 3, self, kernel_size, kernel_size_len_, stride, stride_len_, padding,
                  padding_len_, ceil_mode, count_include_pad, divisor_override, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__adaptive_avg_pool2d(AtenTensorHandle self, const int64_t* output_size,
                                                                    int64_t output_size_len_, AtenTensorHandle* ret0) {
  return adaptive_avg_pool("aoti_torch_cpu__adaptive_avg_pool2d", 2, self, output_size, output_size_len_, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__adaptive_avg_pool3d(AtenTensorHandle self, const int64_t* output_size,
                                                                    int64_t output_size_len_, AtenTensorHandle* ret0) {
  return adaptive_avg_pool("aoti_torch_cpu__adaptive_avg_pool3d", 3, self, output_size, output_size_len_, ret0);
}

}  // extern "C"
