// aoti_torch_cpu_convolution: aten::convolution for 1-3 spatial dimensions,
// regular and transposed, with stride, padding, dilation, groups and optional
// bias. Shapes are normalised to 3 spatial dims (1-d and 2-d problems get
// leading size-1 dims).
//  - regular, float32: read through the input's and weight's own strides, so
//    the channels-last tensors Inductor's CPU layout optimisation produces are
//    not copied. Per (image, group, block of output pixels) one GEMM
//    Y[pixels, Cout/g] = patches[pixels, Cin/g * K] @ W^T: the patch rows are
//    gathered in the weight's element order (channel-major for OIHW weights,
//    tap-major for channels-last OHWI ones) so W is read in place, and 1x1
//    stride-1 convolutions use the input itself as the patch matrix. The
//    blocks are spread over the model call's OpenMP team (parallel_for.h),
//    each gathering into a scratch buffer its thread keeps. Depthwise
//    convolutions (one input channel per group, few output channels) are
//    direct loops instead (depthwise_conv.h).
//    A program's weights (constant storages) are packed once, on first use,
//    into packed_gemm's panels and kept with the weights: OpenBLAS would pack
//    them again in every block of every call. That path needs AVX-512 and
//    channels-last output; others go through gemm.h.
//  - other dtypes are converted to contiguous float32 at the edges.
//  - transposed: one GEMM W^T @ x per (image, group), then col2im scatter-add.
// The output's memory format follows ATen (channels-last when the input or
// weight is channels-last), since the compiled model indexes it with the
// strides it saw at export.
#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "shims/common/convolution_args.h"
#include "devices/cpu/conv_geometry.h"
#include "devices/cpu/depthwise_conv.h"
#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/packed_gemm.h"
#include "devices/cpu/packed_weights.h"
#include "shims/cpu/op_args.h"
#include "devices/cpu/parallel_for.h"
#include "kiln/storage.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

using namespace kiln::cpu::conv;

// Expands a per-dimension parameter: one value for all dims, or one per dim.
// Whether ATen would call `t`'s memory format channels-last (NHWC / NDHWC),
// which decides the output's format. ATen infers it from the strides alone:
// walking channels, then the spatial dims innermost first, then the batch,
// each stride must be at least the extent of the dims before it; ties that
// a contiguous tensor produces (size-1 dims) count as contiguous.
bool is_channels_last(const Tensor& t) {
  if (t.dim() != 4 && t.dim() != 5) return false;
  const auto& size = t.sizes();
  const auto& stride = t.strides();
  if (stride[1] == 0) return false;
  std::vector<size_t> order{1};
  for (size_t d = size.size() - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  int64_t extent = 0;
  for (size_t d : order) {
    if (size[d] == 0 || stride[d] < extent) return false;
    if (d == 0 && extent == stride[1]) return false;  // N111-like: contiguous
    extent = stride[d] * (size[d] > 1 ? size[d] : 1);
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
                              int64_t stride_len, const int64_t* padding, int64_t padding_len,
                              const int64_t* dilation, int64_t dilation_len, bool transposed,
                              const int64_t* output_padding, int64_t output_padding_len, int64_t groups) {
  std::optional<std::span<const int64_t>> bias_sizes;
  if (bias) bias_sizes = bias->sizes();
  KILN_ASSIGN_OR_RETURN(ConvolutionArgs a,
                        convolution_args(x.sizes(), w.sizes(), bias_sizes, stride, stride_len, padding, padding_len,
                                         dilation, dilation_len, transposed, output_padding, output_padding_len,
                                         groups));
  ConvShape s;
  s.spatial = a.spatial;
  s.transposed = a.transposed;
  s.groups = a.groups;
  s.n = a.batch;
  s.cin = a.in_channels;
  s.cout = a.out_channels;
  const int lead = kMaxSpatial - s.spatial;
  for (int i = 0; i < s.spatial; ++i) {
    s.in[lead + i] = x.size(2 + i);
    s.k[lead + i] = w.size(2 + i);
    s.stride[lead + i] = a.stride[i];
    s.pad[lead + i] = a.padding[i];
    s.dil[lead + i] = a.dilation[i];
    s.opad[lead + i] = a.output_padding[i];
    s.out[lead + i] = a.output_sizes[2 + i];
  }
  return s;
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

// Whether dims `order` (innermost first) of `v` are dense one inside the next,
// starting from the stride of the first that is not of size 1 (size-1 dims
// may have any stride); sets `unit` to that stride.
bool dense_in_order(const Strided5& v, std::initializer_list<int> order, int64_t& unit) {
  unit = 1;
  for (int d : order)
    if (v.size[d] != 1) {
      unit = v.stride[d];
      break;
    }
  int64_t expected = unit;
  for (int d : order) {
    if (v.size[d] != 1 && v.stride[d] != expected) return false;
    expected *= v.size[d];
  }
  return true;
}

// How the Cin/g * K elements of one output channel's weights are ordered, so
// the patch rows can be gathered in the same order and W read in place.
enum class TapOrder { ChannelMajor, TapMajor };

struct WeightMatrix {
  TapOrder order = TapOrder::ChannelMajor;
  int64_t element_stride = 1;  // between consecutive (channel, tap) elements
};

// W [Cout, Cin/g, kd, kh, kw] as a matrix over its flattened (channel, tap)
// elements, if one stride walks them: channel-major (OIHW dense) or tap-major
// (channels-last, OHWI dense).
bool weight_as_matrix(const Strided5& w, WeightMatrix& m) {
  if (dense_in_order(w, {4, 3, 2, 1}, m.element_stride)) {
    m.order = TapOrder::ChannelMajor;
    return true;
  }
  if (dense_in_order(w, {1, 4, 3, 2}, m.element_stride)) {
    m.order = TapOrder::TapMajor;
    return true;
  }
  return false;
}

// Patch rows [row0, row0 + rows) of images n0, n0 + 1, ... (row r is output
// pixel r % P of image n0 + r / P), channels [c0, c0 + cin_g): each holds the
// input values that output pixel meets, in the weight's element order, zeros
// where the window hangs over the padding.
void gather_patches(const Strided5& x, int64_t n0, int64_t c0, int64_t cin_g, const ConvShape& s,
                    TapOrder order, int64_t row0, int64_t rows, float* col) {
  const int64_t K = s.k_plane(), width = cin_g * K, P = s.out_plane();
  const int64_t channel_step = order == TapOrder::ChannelMajor ? K : 1;
  const int64_t sc = x.stride[1];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = n0 + (row0 + r) / P, p = (row0 + r) % P;
    const float* base = x.data + n * x.stride[0] + c0 * sc;
    const int64_t od = p / (s.out[1] * s.out[2]), oh = (p / s.out[2]) % s.out[1], ow = p % s.out[2];
    float* row = col + r * width;
    int64_t tap = 0;
    for (int64_t kd = 0; kd < s.k[0]; ++kd) {
      const int64_t id = s.input_at(0, od, kd);
      for (int64_t kh = 0; kh < s.k[1]; ++kh) {
        const int64_t ih = s.input_at(1, oh, kh);
        for (int64_t kw = 0; kw < s.k[2]; ++kw, ++tap) {
          const int64_t iw = s.input_at(2, ow, kw);
          float* dst = row + (order == TapOrder::ChannelMajor ? tap : tap * cin_g);
          if (!s.inside_input(0, id) || !s.inside_input(1, ih) || !s.inside_input(2, iw)) {
            for (int64_t c = 0; c < cin_g; ++c) dst[c * channel_step] = 0.0f;
            continue;
          }
          const float* src = base + id * x.stride[2] + ih * x.stride[3] + iw * x.stride[4];
          if (channel_step == 1 && sc == 1) {
            std::copy(src, src + cin_g, dst);
          } else {
            for (int64_t c = 0; c < cin_g; ++c) dst[c * channel_step] = src[c * sc];
          }
        }
      }
    }
  }
}

// Patch scratch a thread keeps between calls (2 MiB); taller blocks borrow
// memory for the call only.
constexpr int64_t kKeptPatchFloats = int64_t{512} << 10;

// How forward_conv cuts its output into GEMMs: blocks of `rows` output
// pixels by `cols` output channels of one group.
struct Blocking {
  int64_t rows, row_blocks, cols, col_blocks;
};

// Each GEMM packs all of its weight columns, so blocks are tall: the whole
// row range when the input is the patch matrix itself, else what the kept
// scratch holds but at least 256 rows. Only when that leaves a thread of the
// team without a block is the output cut further, along its longer side: rows
// when there are more pixels than channels (each block repacks the weights),
// else channels (each block gathers and packs its patches again), so a deep
// layer at batch 1 (49 pixels, 512 channels) does not pack its 9 MB of
// weights once per thread.
Blocking plan_blocks(int64_t range_rows, int64_t ranges, int64_t cout_g, int64_t width, bool in_place) {
  Blocking b{range_rows, 1, cout_g, 1};
  if (!in_place)
    b.rows = std::min(range_rows, std::max<int64_t>(kKeptPatchFloats / std::max<int64_t>(width, 1), 256));
  b.row_blocks = (range_rows + b.rows - 1) / b.rows;
  const int64_t threads = parallel_threads();
  if (ranges * b.row_blocks >= threads) return b;
  const int64_t per_range = (threads + ranges - 1) / ranges;
  if (range_rows >= cout_g) {
    b.rows = std::clamp<int64_t>((range_rows + per_range - 1) / per_range, std::min<int64_t>(range_rows, 32),
                                 range_rows);
    b.row_blocks = (range_rows + b.rows - 1) / b.rows;
  } else {
    // Whole packed_gemm panels (two SIMD vectors), so a block starts on a panel.
    const int64_t cols = ((cout_g + per_range - 1) / per_range + kPackedPanelCols - 1) / kPackedPanelCols *
                         kPackedPanelCols;
    b.cols = std::clamp<int64_t>(cols, std::min<int64_t>(cout_g, kPackedPanelCols), cout_g);
    b.col_blocks = (cout_g + b.cols - 1) / b.cols;
  }
  return b;
}

// `weight_storage`: the float32 weight's storage, whose packing is kept when
// it is constant (packed_weights.h); null for other dtypes.
Error forward_conv(const ConvShape& s, const Strided5& x, const Strided5& w, const Storage* weight_storage,
                   const float* bias, const OutputLayout& y) {
  const int64_t cin_g = s.cin / s.groups, cout_g = s.cout / s.groups, K = s.k_plane(), P = s.out_plane();
  const bool pointwise =
      K == 1 && s.stride == std::array<int64_t, 3>{1, 1, 1} && s.pad == std::array<int64_t, 3>{0, 0, 0};
  if (cin_g == 1 && !pointwise) {
    if (cout_g == 1 && x.stride[1] == 1 && y.channel_stride == 1)
      return depthwise_channels_last(x, w, bias, s, y);
    // With several output channels per input channel (the first layer of a
    // network over one-channel input, say), one GEMM over the taps does better.
    if (cout_g < 4) return depthwise_rows(x, w, bias, s, y);
  }

  WeightMatrix wm;
  std::vector<float> packed;  // only for weights no single stride walks (not seen from Inductor)
  Strided5 wv = w;
  if (!weight_as_matrix(w, wm)) {
    packed.resize(static_cast<size_t>(s.cout * cin_g * K));
    for (int64_t o = 0; o < s.cout; ++o)
      for (int64_t c = 0; c < cin_g; ++c)
        for (int64_t t = 0; t < K; ++t) {
          const int64_t kd = t / (s.k[1] * s.k[2]), kh = (t / s.k[2]) % s.k[1], kw = t % s.k[2];
          packed[static_cast<size_t>((o * cin_g + c) * K + t)] =
              w.data[o * w.stride[0] + c * w.stride[1] + kd * w.stride[2] + kh * w.stride[3] +
                     kw * w.stride[4]];
        }
    wv = strided5(packed.data(), {s.cout, cin_g, s.k[0], s.k[1], s.k[2]},
                  {cin_g * K, K, s.k[1] * s.k[2], s.k[2], 1});
    wm = {TapOrder::ChannelMajor, 1};
  }
  // GEMM rows are output pixels. When images follow one another pixel by
  // pixel in the output (channels-last), all images' pixels form one row
  // range, so small late layers still get tall GEMMs; else each image is one.
  const bool merge_images = s.n > 1 && y.image_stride == P * y.pixel_stride;
  const int64_t range_rows = merge_images ? s.n * P : P;
  const int64_t ranges = merge_images ? s.groups : s.n * s.groups;
  // Pointwise over an input whose pixels (and images, if merged) one stride
  // walks: the input is the patch matrix.
  int64_t pixel_stride = 0;
  const bool in_place = pointwise && dense_in_order(x, {4, 3, 2}, pixel_stride) &&
                        (!merge_images || x.stride[0] == P * pixel_stride);
  const int64_t width = cin_g * K;
  const Blocking plan = plan_blocks(range_rows, ranges, cout_g, width, in_place);
  // packed_gemm reads unit-stride rows of patches (the input's own pixels when in place) and writes
  // unit-stride output rows (channels-last). Its right operand per group g is W_g^T: element (l, j)
  // of the (Cin/g * K) x Cout/g matrix is weight element l of output channel j.
  std::shared_ptr<const PackedWeight> packing;
  if (weight_storage && packed.empty() && y.channel_stride == 1 && (!in_place || x.stride[1] == 1))
    packing = packed_weight(*weight_storage, wv.data, s.groups, cout_g * wv.stride[0], width, cout_g,
                            wm.element_stride, wv.stride[0]);
  const int64_t blocks = plan.row_blocks * plan.col_blocks;
  return parallel_for(ranges * blocks, 1, [&](int64_t begin, int64_t end) -> Error {
    thread_local std::vector<float> kept;  // no page faults per call for blocks that fit
    std::unique_ptr<float[]> borrowed;     // taller blocks: uninitialised, freed with the call
    float* patches = nullptr;
    if (!in_place) {
      const auto need = static_cast<size_t>(plan.rows * width);
      if (need <= static_cast<size_t>(kKeptPatchFloats)) {
        if (kept.size() < need) kept.resize(need);
        patches = kept.data();
      } else {
        borrowed.reset(new float[need]);
        patches = borrowed.get();
      }
    }
    int64_t gathered = -1;  // the row block whose patches are in `patches` (column blocks share them)
    for (int64_t item = begin; item < end; ++item) {
      const int64_t col_block = item % plan.col_blocks, row_block = item / plan.col_blocks;
      const int64_t block = row_block % plan.row_blocks, g = (row_block / plan.row_blocks) % s.groups;
      const int64_t n =
          merge_images ? 0 : row_block / (plan.row_blocks * s.groups);  // first image of the range
      const int64_t r0 = block * plan.rows, count = std::min(plan.rows, range_rows - r0);
      const int64_t c0 = g * cout_g + col_block * plan.cols,
                    ccount = std::min(plan.cols, (g + 1) * cout_g - c0);
      MatrixView<const float> a{};
      if (in_place) {
        a = {x.data + n * x.stride[0] + g * cin_g * x.stride[1] + r0 * pixel_stride, count, cin_g,
             pixel_stride, x.stride[1]};
      } else {
        if (gathered != row_block) gather_patches(x, n, g * cin_g, cin_g, s, wm.order, r0, count, patches);
        gathered = row_block;
        a = {patches, count, width, width, 1};
      }
      const MatrixView<const float> b{wv.data + c0 * wv.stride[0], width, ccount, wm.element_stride,
                                      wv.stride[0]};
      const MatrixView<float> c{y.data + n * y.image_stride + c0 * y.channel_stride + r0 * y.pixel_stride,
                                count, ccount, y.pixel_stride, y.channel_stride};
      if (packing) {
        // Block columns start on a panel (plan_blocks): panel (c0 - g * cout_g) / 32 of group g.
        packed_gemm(count, ccount, width, a.data, a.row_stride, packing->panels(g, c0 - g * cout_g, width),
                    bias ? bias + c0 : nullptr, c.data, c.row_stride);
        continue;
      }
      KILN_RETURN_IF_ERROR(gemm<float>(a, b, c, 1.0f, 0.0f));
      if (bias) {
        // In memory order: the output block is pixel-major (channels-last) or channel-major.
        const float* bc = bias + c0;
        if (c.row_stride <= c.col_stride) {
          for (int64_t o = 0; o < ccount; ++o)
            for (int64_t r = 0; r < count; ++r) c.data[r * c.row_stride + o * c.col_stride] += bc[o];
        } else {
          for (int64_t r = 0; r < count; ++r)
            for (int64_t o = 0; o < ccount; ++o) c.data[r * c.row_stride + o * c.col_stride] += bc[o];
        }
      }
    }
    return Error::Ok;
  });
}

// Transposed convolution on contiguous float32 buffers.
Error transposed_conv(const ConvShape& s, const float* x, const float* w, const float* bias, float* y) {
  const int64_t cin_g = s.cin / s.groups, cout_g = s.cout / s.groups;
  const int64_t K = s.k_plane();
  std::vector<float> col;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const float* xg = x + (n * s.cin + g * cin_g) * s.in_plane();
      float* yg = y + (n * s.cout + g * cout_g) * s.out_plane();
      // Weight rows for this group: [cin_g, cout_g * K]; col = W_g^T @ x_g.
      const float* wg = w + g * cin_g * cout_g * K;
      const int64_t rows = cout_g * K, P = s.in_plane();
      col.resize(static_cast<size_t>(rows * P));
      KILN_RETURN_IF_ERROR(gemm<float>({wg, rows, cin_g, 1, rows}, {xg, cin_g, P, P, 1},
                                       {col.data(), rows, P, P, 1}, 1.0f, 0.0f));
      std::fill(yg, yg + cout_g * s.out_plane(), 0.0f);
      col2im(col.data(), cout_g, s, yg);
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
      return set_error(Error::NotSupported,
                       std::string("dtype ") + dtype_name(x->dtype()) + " is not supported");
    KILN_RETURN_IF_ERROR(same_dtype(*w, x->dtype(), "weight"));
    KILN_ASSIGN_OR_RETURN(ConvShape s, check_shape(*x, *w, b, stride, stride_len_, padding, padding_len_,
                                                   dilation, dilation_len_, transposed != 0, output_padding,
                                                   output_padding_len_, groups));
    std::vector<int64_t> out_sizes{s.n, s.cout};
    for (int i = kMaxSpatial - s.spatial; i < kMaxSpatial; ++i) out_sizes.push_back(s.out[i]);
    const bool cl = is_channels_last(*x) || is_channels_last(*w);
    const auto out_strides = cl ? channels_last_strides(out_sizes) : contiguous_strides(out_sizes);
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(out_sizes, out_strides, x->dtype(), Device{}));

    if (out.numel() > 0) {
      // float32 operands are read through their strides; others are converted to contiguous float32.
      std::vector<float> xs, ws, bs, ys;
      const bool direct = out.dtype() == DType::Float32;
      const float* bf = b ? contiguous_floats(*b, bs) : nullptr;
      if (transposed) {
        const float* xf = contiguous_floats(*x, xs);
        const float* wf = contiguous_floats(*w, ws);
        const bool in_place = direct && out.is_contiguous();
        if (!in_place) ys.resize(static_cast<size_t>(out.numel()));
        KILN_RETURN_IF_ERROR(transposed_conv(s, xf, wf, bf, in_place ? out.data<float>() : ys.data()));
        if (!in_place) store_floats(ys.data(), out);
      } else {
        auto as_strided = [](const Tensor& t, std::vector<float>& scratch) {
          if (t.dtype() == DType::Float32) return strided5(t.data<const float>(), t.sizes(), t.strides());
          scratch = to_floats(t);
          return strided5(scratch.data(), t.sizes(), contiguous_strides(t.sizes()));
        };
        const Strided5 xv = as_strided(*x, xs), wv = as_strided(*w, ws);
        if (!direct) ys.resize(static_cast<size_t>(out.numel()));
        // The output is dense (contiguous or channels-last): image, channel and pixel strides describe it.
        const std::vector<int64_t> st = direct ? out.strides() : contiguous_strides(out_sizes);
        const OutputLayout y{direct ? out.data<float>() : ys.data(), st[0], st[1], st.back()};
        const Storage* weight_storage = w->dtype() == DType::Float32 ? w->storage().get() : nullptr;
        KILN_RETURN_IF_ERROR(forward_conv(s, xv, wv, weight_storage, bf, y));
        if (!direct) store_floats(ys.data(), out);
      }
    }
    AtenTensorHandle h = new_handle(std::move(out));
    if (h == nullptr) return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
    *ret0 = h;
    return Error::Ok;
  });
}

}  // extern "C"
