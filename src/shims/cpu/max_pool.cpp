// aoti_torch_cpu_max_pool{2,3}d_with_indices, adaptive_max_pool{2,3}d and
// fractional_max_pool{2,3}d: window maxima over each (n, c) plane with the
// flat position of the maximum within its plane (int64), as ATen's CPU
// kernels: a NaN wins (the last NaN of a window), otherwise the first strict
// maximum; max_pool2d/3d and adaptive_max_pool2d give a channels-last input a
// channels-last result, the others are contiguous. Integer inputs are taken
// by max_pool only (as ATen).
#include <algorithm>
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

constexpr int64_t kPlaneGrain = 4;

// One window [lo, hi) with steps `step` in each dim of a plane of `in`.
template <typename T>
void window_max(const T* src, const Dims& in, const int64_t lo[3], const int64_t hi[3], const int64_t step[3], T& val,
                int64_t& index) {
  T best = lowest<T>();
  int64_t at = (lo[0] * in[1] + lo[1]) * in[2] + lo[2];
  for (int64_t t = lo[0]; t < hi[0]; t += step[0])
    for (int64_t h = lo[1]; h < hi[1]; h += step[1]) {
      const int64_t row = (t * in[1] + h) * in[2];
      for (int64_t w = lo[2]; w < hi[2]; w += step[2]) {
        const T v = src[row + w];
        if (v > best || is_nan(v)) {
          best = v;
          at = row + w;
        }
      }
    }
  val = best;
  index = at;
}

// Runs `window(plane, o, lo, hi, step)` (filling the window of output o of
// plane `plane`) over every output and writes values and indices.
template <typename T, typename WindowFn>
Error run_max(const T* x, const Planes& p, const Dims& out, const Tensor& values, const Tensor& indices,
              WindowFn&& window) {
  const int64_t in_plane = p.plane_size(), out_plane = out[0] * out[1] * out[2];
  std::vector<T> y(static_cast<size_t>(p.planes() * out_plane));
  std::vector<int64_t> idx(y.size());
  KILN_RETURN_IF_ERROR(parallel_for(p.planes(), kPlaneGrain, [&](int64_t b, int64_t e) -> Error {
    for (int64_t plane = b; plane < e; ++plane) {
      const T* src = x + plane * in_plane;
      for (int64_t ot = 0; ot < out[0]; ++ot)
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (int64_t ow = 0; ow < out[2]; ++ow) {
            int64_t lo[3], hi[3], step[3] = {1, 1, 1};
            const int64_t o[3] = {ot, oh, ow};
            KILN_RETURN_IF_ERROR(window(plane, o, lo, hi, step));
            const size_t k = static_cast<size_t>(plane * out_plane + (ot * out[1] + oh) * out[2] + ow);
            window_max(src, p.in, lo, hi, step, y[k], idx[k]);
          }
    }
    return Error::Ok;
  }));
  write_values(y.data(), values);
  write_elements(idx.data(), indices);
  return Error::Ok;
}

struct MaxResults {
  Tensor values;
  Tensor indices;
};

Result<MaxResults> new_results(const Tensor& self, const Planes& p, const Dims& out, int spatial, bool cl) {
  const std::vector<int64_t> sizes = result_sizes(p, out, spatial);
  KILN_ASSIGN_OR_RETURN(Tensor v, new_output(sizes, self.dtype(), cl));
  KILN_ASSIGN_OR_RETURN(Tensor i, new_output(sizes, DType::Int64, cl));
  return MaxResults{std::move(v), std::move(i)};
}

Error hand_out(MaxResults r, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
  KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
  KILN_RETURN_IF_ERROR(return_tensor(std::move(r.values), ret0, "ret0"));
  const Error e = return_tensor(std::move(r.indices), ret1, "ret1");
  if (e != Error::Ok) {
    aoti_torch_delete_tensor_object(*ret0);
    *ret0 = nullptr;
  }
  return e;
}

AOTITorchError max_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* kernel_size,
                        int64_t kernel_size_len, const int64_t* stride, int64_t stride_len, const int64_t* padding,
                        int64_t padding_len, const int64_t* dilation, int64_t dilation_len, int32_t ceil_mode,
                        AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_RETURN_IF_ERROR(pool_dtype(self->dtype(), true));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(*self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims k, dims_arg(kernel_size, kernel_size_len, spatial, "kernel_size", 1));
    KILN_RETURN_IF_ERROR(positive(k, "kernel_size"));
    KILN_ASSIGN_OR_RETURN(Dims s, dims_arg(stride, stride_len, spatial, "stride", 1, &k));
    KILN_RETURN_IF_ERROR(positive(s, "stride"));
    KILN_ASSIGN_OR_RETURN(Dims pad, dims_arg(padding, padding_len, spatial, "padding", 0));
    KILN_ASSIGN_OR_RETURN(Dims dil, dims_arg(dilation, dilation_len, spatial, "dilation", 1));
    KILN_RETURN_IF_ERROR(positive(dil, "dilation"));
    KILN_ASSIGN_OR_RETURN(Dims out, window_output(p, k, s, pad, dil, ceil_mode != 0));
    KILN_ASSIGN_OR_RETURN(MaxResults r, new_results(*self, p, out, spatial, channels_last_strides(*self)));
    KILN_RETURN_IF_ERROR(visit_input(*self, [&](const auto* x) -> Error {
      return run_max(x, p, out, r.values, r.indices,
                     [&](int64_t, const int64_t o[3], int64_t lo[3], int64_t hi[3], int64_t step[3]) -> Error {
                       for (int i = 0; i < 3; ++i) {
                         lo[i] = o[i] * s[i] - pad[i];
                         hi[i] = std::min(lo[i] + (k[i] - 1) * dil[i] + 1, p.in[i]);
                         while (lo[i] < 0) lo[i] += dil[i];
                         step[i] = dil[i];
                       }
                       return Error::Ok;
                     });
    }));
    return hand_out(std::move(r), ret0, ret1);
  });
}

AOTITorchError adaptive_max_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* output_size,
                                 int64_t output_size_len, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_RETURN_IF_ERROR(pool_dtype(self->dtype(), false));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(*self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims out, exact_dims_arg(output_size, output_size_len, spatial, "output_size"));
    const bool cl = spatial == 2 && channels_last_strides(*self);
    KILN_ASSIGN_OR_RETURN(MaxResults r, new_results(*self, p, out, spatial, cl));
    if (r.values.numel() > 0) {
      KILN_RETURN_IF_ERROR(visit_input(*self, [&](const auto* x) -> Error {
        return run_max(x, p, out, r.values, r.indices,
                       [&](int64_t, const int64_t o[3], int64_t lo[3], int64_t hi[3], int64_t*) -> Error {
                         for (int i = 0; i < 3; ++i) {
                           lo[i] = adaptive_start(o[i], p.in[i], out[i]);
                           hi[i] = adaptive_end(o[i], p.in[i], out[i]);
                         }
                         return Error::Ok;
                       });
      }));
    }
    return hand_out(std::move(r), ret0, ret1);
  });
}

// Rounds v to dtype's precision (ATen computes the fractional intervals in the
// input's own dtype).
double round_to(double v, DType dtype) {
  if (dtype == DType::Float64) return v;
  alignas(8) unsigned char cell[8];
  write_element<double>(cell, dtype, v);
  return read_element<double>(cell, dtype);
}

// Window starts along one dim for fractional pooling, from one sample in [0, 1).
Result<std::vector<int64_t>> intervals(double sample, int64_t in, int64_t out, int64_t pool, DType dtype) {
  std::vector<int64_t> seq(static_cast<size_t>(out));
  if (out > 1) {
    const double alpha = round_to(
        round_to(static_cast<double>(in - pool), dtype) / round_to(static_cast<double>(out - 1), dtype), dtype);
    const int64_t base = static_cast<int64_t>(round_to(sample * alpha, dtype));
    for (int64_t i = 0; i + 1 < out; ++i) {
      const double pos = round_to(round_to(round_to(static_cast<double>(i), dtype) + sample, dtype) * alpha, dtype);
      seq[static_cast<size_t>(i)] = static_cast<int64_t>(pos) - base;
    }
  }
  if (out > 0) seq[static_cast<size_t>(out - 1)] = in - pool;
  for (int64_t v : seq)
    if (v < 0 || v > in - pool)
      return aoti::invalid("argument 'random_samples' holds " + std::to_string(sample) +
                           ", which places a window outside the input (samples must be in [0, 1))");
  return seq;
}

AOTITorchError fractional_max_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* kernel_size,
                                   int64_t kernel_size_len, const int64_t* output_size, int64_t output_size_len,
                                   AtenTensorHandle samples_h, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * samples, cpu_tensor_arg(samples_h, "random_samples"));
    KILN_RETURN_IF_ERROR(pool_dtype(self->dtype(), false));
    KILN_RETURN_IF_ERROR(same_dtype(*samples, self->dtype(), "random_samples"));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(*self, spatial));
    KILN_ASSIGN_OR_RETURN(aoti::pool::Fractional f,
                          aoti::pool::fractional_args(p, spatial, kernel_size, kernel_size_len, output_size,
                                                      output_size_len, samples->sizes(), samples->describe()));
    const Dims& k = f.kernel;
    const Dims& out = f.out;
    KILN_ASSIGN_OR_RETURN(MaxResults r, new_results(*self, p, out, spatial, false));
    const std::vector<double> u = read_elements<double>(*samples);
    // Per plane, the window starts along each dim.
    const int64_t planes = p.planes();
    std::vector<std::vector<int64_t>> starts(static_cast<size_t>(planes * 3));
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t n = plane / p.channels, c = plane % p.channels;
      const double* su = u.data() + (n * samples->size(1) + c) * samples->size(2);
      for (int i = 0; i < 3; ++i) {
        std::vector<int64_t>& seq = starts[static_cast<size_t>(plane * 3 + i)];
        if (i < 3 - spatial) {
          seq.assign(1, 0);
          continue;
        }
        const double sample = su[aoti::pool::fractional_sample_column(spatial, i)];
        KILN_ASSIGN_OR_RETURN(seq, intervals(sample, p.in[i], out[i], k[i], self->dtype()));
      }
    }
    KILN_RETURN_IF_ERROR(visit_input(*self, [&](const auto* x) -> Error {
      return run_max(x, p, out, r.values, r.indices,
                     [&](int64_t plane, const int64_t o[3], int64_t lo[3], int64_t hi[3], int64_t*) -> Error {
                       for (int i = 0; i < 3; ++i) {
                         lo[i] = starts[static_cast<size_t>(plane * 3 + i)][static_cast<size_t>(o[i])];
                         hi[i] = lo[i] + k[i];
                       }
                       return Error::Ok;
                     });
    }));
    return hand_out(std::move(r), ret0, ret1);
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_max_pool2d_with_indices(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
    int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return max_pool("aoti_torch_cpu_max_pool2d_with_indices", 2, self, kernel_size, kernel_size_len_, stride, stride_len_,
                  padding, padding_len_, dilation, dilation_len_, ceil_mode, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_max_pool3d_with_indices(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
    int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return max_pool("aoti_torch_cpu_max_pool3d_with_indices", 3, self, kernel_size, kernel_size_len_, stride, stride_len_,
                  padding, padding_len_, dilation, dilation_len_, ceil_mode, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_adaptive_max_pool2d(AtenTensorHandle self, const int64_t* output_size,
                                                                   int64_t output_size_len_, AtenTensorHandle* ret0,
                                                                   AtenTensorHandle* ret1) {
  return adaptive_max_pool("aoti_torch_cpu_adaptive_max_pool2d", 2, self, output_size, output_size_len_, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_adaptive_max_pool3d(AtenTensorHandle self, const int64_t* output_size,
                                                                   int64_t output_size_len_, AtenTensorHandle* ret0,
                                                                   AtenTensorHandle* ret1) {
  return adaptive_max_pool("aoti_torch_cpu_adaptive_max_pool3d", 3, self, output_size, output_size_len_, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_fractional_max_pool2d(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* output_size,
    int64_t output_size_len_, AtenTensorHandle random_samples, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return fractional_max_pool("aoti_torch_cpu_fractional_max_pool2d", 2, self, kernel_size, kernel_size_len_,
                             output_size, output_size_len_, random_samples, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_fractional_max_pool3d(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* output_size,
    int64_t output_size_len_, AtenTensorHandle random_samples, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return fractional_max_pool("aoti_torch_cpu_fractional_max_pool3d", 3, self, kernel_size, kernel_size_len_,
                             output_size, output_size_len_, random_samples, ret0, ret1);
}

}  // extern "C"
