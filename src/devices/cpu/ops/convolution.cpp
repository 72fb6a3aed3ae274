// aoti_torch_cpu_convolution: aten::convolution for 1-3 spatial dimensions,
// regular and transposed, with stride, padding, dilation, groups and optional
// bias. Every case is computed on contiguous float32 buffers with 3 spatial
// dims (1-d and 2-d problems get leading size-1 dims):
//  - regular: im2col per (image, group) and one GEMM [Cout/g, K] @ [K, P];
//    1x1/stride-1/no-padding convolutions skip im2col; one input channel per
//    group (depthwise) uses a direct loop instead of a thin GEMM.
//  - transposed: one GEMM W^T @ x per (image, group), then col2im scatter-add.
// The output's memory format follows ATen (channels-last when the input or
// weight is channels-last), since the compiled model indexes it with the
// strides it saw at export.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "devices/cpu/ops/float_io.h"
#include "devices/cpu/ops/gemm.h"
#include "devices/cpu/ops/op_args.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

constexpr int kMaxSpatial = 3;

struct ConvShape {
  int64_t n = 0, cin = 0, cout = 0, groups = 1;
  int spatial = 0;  // 1..3, as given
  // Normalised to 3 spatial dims: index 0 = depth, 1 = height, 2 = width.
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1}, opad{0, 0, 0};
  bool transposed = false;

  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t k_plane() const { return k[0] * k[1] * k[2]; }
};

// Expands a per-dimension parameter: one value for all dims, or one per dim.
Error expand_param(const int64_t* p, int64_t len, const char* name, int spatial, int64_t fill,
                   std::array<int64_t, 3>& dst) {
  KILN_ASSIGN_OR_RETURN(auto v, int_array_arg(p, len, name));
  const int lead = kMaxSpatial - spatial;
  for (int i = 0; i < spatial; ++i) {
    if (v.size() == 1) {
      dst[lead + i] = v[0];
    } else if (v.size() == static_cast<size_t>(spatial)) {
      dst[lead + i] = v[i];
    } else if (v.empty()) {
      dst[lead + i] = fill;
    } else {
      return invalid(std::string(name) + " has " + std::to_string(v.size()) + " values for " +
                     std::to_string(spatial) + " spatial dims");
    }
  }
  return Error::Ok;
}

// Channels-last (NHWC / NDHWC) dense strides, other than plain contiguous.
bool is_channels_last(const Tensor& t) {
  if (t.dim() != 4 && t.dim() != 5) return false;
  if (t.is_contiguous()) return false;
  std::vector<size_t> order{1};
  for (size_t d = t.sizes().size() - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  int64_t expected = 1;
  for (size_t d : order) {
    if (t.sizes()[d] != 1 && t.strides()[d] != expected) return false;
    expected *= t.sizes()[d];
  }
  return true;
}

std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t acc = 1;
  s[1] = acc;
  acc *= sizes[1];
  for (size_t d = sizes.size() - 1; d >= 2; --d) {
    s[d] = acc;
    acc *= sizes[d];
  }
  s[0] = acc;
  return s;
}

Result<ConvShape> check_shape(const Tensor& x, const Tensor& w, const Tensor* bias, const int64_t* stride,
                              int64_t stride_len, const int64_t* padding, int64_t padding_len, const int64_t* dilation,
                              int64_t dilation_len, bool transposed, const int64_t* output_padding,
                              int64_t output_padding_len, int64_t groups) {
  ConvShape s;
  if (x.dim() < 3 || x.dim() > 5)
    return invalid("input must be 3-d, 4-d or 5-d (batched), got " + x.describe());
  if (w.dim() != x.dim()) return invalid("weight " + w.describe() + " does not match input " + x.describe());
  if (groups < 1) return invalid("groups must be positive, got " + std::to_string(groups));
  s.spatial = static_cast<int>(x.dim() - 2);
  s.transposed = transposed;
  s.groups = groups;
  s.n = x.size(0);
  s.cin = x.size(1);
  const int lead = kMaxSpatial - s.spatial;
  for (int i = 0; i < s.spatial; ++i) {
    s.in[lead + i] = x.size(2 + i);
    s.k[lead + i] = w.size(2 + i);
  }
  KILN_RETURN_IF_ERROR(expand_param(stride, stride_len, "stride", s.spatial, 1, s.stride));
  KILN_RETURN_IF_ERROR(expand_param(padding, padding_len, "padding", s.spatial, 0, s.pad));
  KILN_RETURN_IF_ERROR(expand_param(dilation, dilation_len, "dilation", s.spatial, 1, s.dil));
  if (transposed)
    KILN_RETURN_IF_ERROR(expand_param(output_padding, output_padding_len, "output_padding", s.spatial, 0, s.opad));
  for (int i = lead; i < kMaxSpatial; ++i) {
    if (s.stride[i] < 1) return invalid("stride must be positive, got " + std::to_string(s.stride[i]));
    if (s.dil[i] < 1) return invalid("dilation must be positive, got " + std::to_string(s.dil[i]));
    if (s.pad[i] < 0) return invalid("padding must be non-negative, got " + std::to_string(s.pad[i]));
    if (s.opad[i] < 0 || (s.opad[i] > 0 && s.opad[i] >= std::max(s.stride[i], s.dil[i])))
      return invalid("output_padding " + std::to_string(s.opad[i]) + " must be smaller than stride or dilation");
  }
  if (s.cin % groups != 0)
    return invalid("groups " + std::to_string(groups) + " does not divide input channels " + std::to_string(s.cin));
  if (!transposed) {
    if (w.size(1) * groups != s.cin)
      return invalid("weight " + shape_string(w.sizes()) + " expects " + std::to_string(w.size(1) * groups) +
                     " input channels with groups " + std::to_string(groups) + ", input has " +
                     std::to_string(s.cin));
    s.cout = w.size(0);
    if (s.cout % groups != 0)
      return invalid("groups " + std::to_string(groups) + " does not divide output channels " +
                     std::to_string(s.cout));
  } else {
    if (w.size(0) != s.cin)
      return invalid("transposed weight " + shape_string(w.sizes()) + " expects " + std::to_string(w.size(0)) +
                     " input channels, input has " + std::to_string(s.cin));
    s.cout = w.size(1) * groups;
  }
  for (int i = lead; i < kMaxSpatial; ++i) {
    const int64_t span = s.dil[i] * (s.k[i] - 1) + 1;
    s.out[i] = transposed ? (s.in[i] - 1) * s.stride[i] - 2 * s.pad[i] + span + s.opad[i]
                          : (s.in[i] + 2 * s.pad[i] - span) / s.stride[i] + 1;
    if (!transposed && s.in[i] + 2 * s.pad[i] < span)
      return invalid("kernel extent " + std::to_string(span) + " exceeds padded input size " +
                     std::to_string(s.in[i] + 2 * s.pad[i]));
    if (s.out[i] <= 0) return invalid("computed output size " + std::to_string(s.out[i]) + " is not positive");
  }
  if (bias && (bias->dim() != 1 || bias->size(0) != s.cout))
    return invalid("bias " + bias->describe() + " does not match " + std::to_string(s.cout) + " output channels");
  return s;
}

// col[(c*K + kk), p] for one group's input planes x[c] (c < channels).
void im2col(const float* x, int64_t channels, const ConvShape& s, float* col) {
  const int64_t P = s.out_plane();
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * s.in_plane();
    for (int64_t kd = 0; kd < s.k[0]; ++kd)
      for (int64_t kh = 0; kh < s.k[1]; ++kh)
        for (int64_t kw = 0; kw < s.k[2]; ++kw) {
          float* row = col + (((c * s.k[0] + kd) * s.k[1] + kh) * s.k[2] + kw) * P;
          for (int64_t od = 0; od < s.out[0]; ++od) {
            const int64_t id = od * s.stride[0] - s.pad[0] + kd * s.dil[0];
            for (int64_t oh = 0; oh < s.out[1]; ++oh) {
              const int64_t ih = oh * s.stride[1] - s.pad[1] + kh * s.dil[1];
              float* dst = row + (od * s.out[1] + oh) * s.out[2];
              if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1]) {
                std::fill(dst, dst + s.out[2], 0.0f);
                continue;
              }
              const float* src = xc + (id * s.in[1] + ih) * s.in[2];
              for (int64_t ow = 0; ow < s.out[2]; ++ow) {
                const int64_t iw = ow * s.stride[2] - s.pad[2] + kw * s.dil[2];
                dst[ow] = (iw >= 0 && iw < s.in[2]) ? src[iw] : 0.0f;
              }
            }
          }
        }
  }
}

// y[c] += scatter of col rows, the adjoint of im2col with in/out roles swapped:
// transposed convolution maps input position i to output i*stride - pad + k*dil.
void col2im(const float* col, int64_t channels, const ConvShape& s, float* y) {
  const int64_t P = s.in_plane();
  for (int64_t c = 0; c < channels; ++c) {
    float* yc = y + c * s.out_plane();
    for (int64_t kd = 0; kd < s.k[0]; ++kd)
      for (int64_t kh = 0; kh < s.k[1]; ++kh)
        for (int64_t kw = 0; kw < s.k[2]; ++kw) {
          const float* row = col + (((c * s.k[0] + kd) * s.k[1] + kh) * s.k[2] + kw) * P;
          for (int64_t id = 0; id < s.in[0]; ++id) {
            const int64_t od = id * s.stride[0] - s.pad[0] + kd * s.dil[0];
            if (od < 0 || od >= s.out[0]) continue;
            for (int64_t ih = 0; ih < s.in[1]; ++ih) {
              const int64_t oh = ih * s.stride[1] - s.pad[1] + kh * s.dil[1];
              if (oh < 0 || oh >= s.out[1]) continue;
              const float* src = row + (id * s.in[1] + ih) * s.in[2];
              float* dst = yc + (od * s.out[1] + oh) * s.out[2];
              for (int64_t iw = 0; iw < s.in[2]; ++iw) {
                const int64_t ow = iw * s.stride[2] - s.pad[2] + kw * s.dil[2];
                if (ow >= 0 && ow < s.out[2]) dst[ow] += src[iw];
              }
            }
          }
        }
  }
}

// One input channel per group: each output channel reads one input plane.
void depthwise(const float* x, const float* w, int64_t cout_per_group, const ConvShape& s, float* y) {
  for (int64_t m = 0; m < cout_per_group; ++m) {
    const float* wk = w + m * s.k_plane();
    float* ym = y + m * s.out_plane();
    for (int64_t od = 0; od < s.out[0]; ++od)
      for (int64_t oh = 0; oh < s.out[1]; ++oh)
        for (int64_t ow = 0; ow < s.out[2]; ++ow) {
          float acc = 0.0f;
          for (int64_t kd = 0; kd < s.k[0]; ++kd) {
            const int64_t id = od * s.stride[0] - s.pad[0] + kd * s.dil[0];
            if (id < 0 || id >= s.in[0]) continue;
            for (int64_t kh = 0; kh < s.k[1]; ++kh) {
              const int64_t ih = oh * s.stride[1] - s.pad[1] + kh * s.dil[1];
              if (ih < 0 || ih >= s.in[1]) continue;
              for (int64_t kw = 0; kw < s.k[2]; ++kw) {
                const int64_t iw = ow * s.stride[2] - s.pad[2] + kw * s.dil[2];
                if (iw < 0 || iw >= s.in[2]) continue;
                acc += wk[(kd * s.k[1] + kh) * s.k[2] + kw] * x[(id * s.in[1] + ih) * s.in[2] + iw];
              }
            }
          }
          ym[(od * s.out[1] + oh) * s.out[2] + ow] = acc;
        }
  }
}

Error run_conv(const ConvShape& s, const float* x, const float* w, const float* bias, float* y) {
  const int64_t cin_g = s.cin / s.groups, cout_g = s.cout / s.groups;
  const int64_t K = s.k_plane();
  std::vector<float> col;
  const bool pointwise = K == 1 && s.stride == std::array<int64_t, 3>{1, 1, 1} &&
                         s.pad == std::array<int64_t, 3>{0, 0, 0};
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const float* xg = x + (n * s.cin + g * cin_g) * s.in_plane();
      float* yg = y + (n * s.cout + g * cout_g) * s.out_plane();
      if (!s.transposed) {
        const float* wg = w + g * cout_g * cin_g * K;
        if (cin_g == 1 && !pointwise) {
          depthwise(xg, wg, cout_g, s, yg);
          continue;
        }
        const int64_t rows = cin_g * K, P = s.out_plane();
        const float* cols = xg;
        if (!pointwise) {
          col.resize(static_cast<size_t>(rows * P));
          im2col(xg, cin_g, s, col.data());
          cols = col.data();
        }
        KILN_RETURN_IF_ERROR(gemm<float>({wg, cout_g, rows, rows, 1}, {cols, rows, P, P, 1}, {yg, cout_g, P, P, 1},
                                         1.0f, 0.0f));
      } else {
        // Weight rows for this group: [cin_g, cout_g * K]; col = W_g^T @ x_g.
        const float* wg = w + g * cin_g * cout_g * K;
        const int64_t rows = cout_g * K, P = s.in_plane();
        col.resize(static_cast<size_t>(rows * P));
        KILN_RETURN_IF_ERROR(gemm<float>({wg, rows, cin_g, 1, rows}, {xg, cin_g, P, P, 1},
                                         {col.data(), rows, P, P, 1}, 1.0f, 0.0f));
        std::fill(yg, yg + cout_g * s.out_plane(), 0.0f);
        col2im(col.data(), cout_g, s, yg);
      }
    }
    if (bias) {
      for (int64_t c = 0; c < s.cout; ++c) {
        float* yc = y + (n * s.cout + c) * s.out_plane();
        for (int64_t p = 0; p < s.out_plane(); ++p) yc[p] += bias[c];
      }
    }
  }
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_,
    int64_t groups, AtenTensorHandle* ret0) {
  return guarded("aoti_torch_cpu_convolution", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(input, "input"));
    KILN_ASSIGN_OR_RETURN(Tensor * w, cpu_tensor_arg(weight, "weight"));
    Tensor* b = nullptr;
    if (bias != nullptr && *bias != nullptr) {
      KILN_ASSIGN_OR_RETURN(b, cpu_tensor_arg(*bias, "bias"));
      KILN_RETURN_IF_ERROR(same_dtype(*b, x->dtype(), "bias"));
    }
    if (!is_float_dtype(x->dtype()))
      return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(x->dtype()) + " is not supported");
    KILN_RETURN_IF_ERROR(same_dtype(*w, x->dtype(), "weight"));
    KILN_ASSIGN_OR_RETURN(ConvShape s, check_shape(*x, *w, b, stride, stride_len_, padding, padding_len_, dilation,
                                                   dilation_len_, transposed != 0, output_padding,
                                                   output_padding_len_, groups));
    std::vector<int64_t> out_sizes{s.n, s.cout};
    for (int i = kMaxSpatial - s.spatial; i < kMaxSpatial; ++i) out_sizes.push_back(s.out[i]);
    const bool cl = is_channels_last(*x) || is_channels_last(*w);
    const auto out_strides = cl ? channels_last_strides(out_sizes) : contiguous_strides(out_sizes);
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(out_sizes, out_strides, x->dtype(), Device{}));

    std::vector<float> xs, ws, bs, ys;
    const float* xf = contiguous_floats(*x, xs);
    const float* wf = contiguous_floats(*w, ws);
    const float* bf = b ? contiguous_floats(*b, bs) : nullptr;
    const bool direct = out.dtype() == DType::Float32 && out.is_contiguous();
    if (!direct) ys.resize(static_cast<size_t>(out.numel()));
    float* yf = direct ? out.data<float>() : ys.data();
    if (out.numel() > 0) KILN_RETURN_IF_ERROR(run_conv(s, xf, wf, bf, yf));
    if (!direct) store_floats(ys.data(), out);
    AtenTensorHandle h = new_handle(std::move(out));
    if (h == nullptr) return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
    *ret0 = h;
    return Error::Ok;
  });
}

}  // extern "C"
