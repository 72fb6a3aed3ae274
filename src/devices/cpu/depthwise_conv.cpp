// Depthwise convolution kernels (see depthwise_conv.h).
#include "devices/cpu/depthwise_conv.h"

#include <algorithm>
#include <vector>

#include "devices/cpu/parallel_for.h"

namespace kiln::cpu::conv {
namespace {

// Output columns [begin, end) whose window tap at input offset `offset`
// (kw * dilation - padding) lands inside a row of `in_w` elements.
void valid_columns(int64_t offset, int64_t stride, int64_t in_w, int64_t out_w, int64_t& begin,
                   int64_t& end) {
  begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  end = in_w - 1 - offset < 0 ? 0 : std::min(out_w, (in_w - 1 - offset) / stride + 1);
  begin = std::min(begin, end);
}

}  // namespace

// Depthwise convolution (one input and one output channel per group) with
// channels innermost in the input and the output (NHWC): each output pixel
// sums its taps over all channels at once, a dense vector of channels per tap.
Error depthwise_channels_last(const Strided5& x, const Strided5& w, const float* bias, const ConvShape& s,
                              const OutputLayout& y) {
  const int64_t C = s.cout, K = s.k_plane();
  std::vector<float> taps(static_cast<size_t>(K * C));  // taps[t * C + c]: channel-contiguous weights
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < K; ++t) {
      const int64_t kd = t / (s.k[1] * s.k[2]), kh = (t / s.k[2]) % s.k[1], kw = t % s.k[2];
      taps[static_cast<size_t>(t * C + c)] =
          w.data[c * w.stride[0] + kd * w.stride[2] + kh * w.stride[3] + kw * w.stride[4]];
    }
  const int64_t rows = s.n * s.out[0] * s.out[1];
  return parallel_for(
      rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(s.out[2] * C * K, 1)),
      [&](int64_t begin, int64_t end) -> Error {
        thread_local std::vector<float> sums;
        if (sums.size() < static_cast<size_t>(C)) sums.resize(static_cast<size_t>(C));
        float* acc = sums.data();
        for (int64_t r = begin; r < end; ++r) {
          const int64_t n = r / (s.out[0] * s.out[1]), od = (r / s.out[1]) % s.out[0], oh = r % s.out[1];
          for (int64_t ow = 0; ow < s.out[2]; ++ow) {
            if (bias) {
              std::copy(bias, bias + C, acc);
            } else {
              std::fill(acc, acc + C, 0.0f);
            }
            for (int64_t kd = 0; kd < s.k[0]; ++kd) {
              const int64_t id = s.input_at(0, od, kd);
              if (!s.inside_input(0, id)) continue;
              for (int64_t kh = 0; kh < s.k[1]; ++kh) {
                const int64_t ih = s.input_at(1, oh, kh);
                if (!s.inside_input(1, ih)) continue;
                for (int64_t kw = 0; kw < s.k[2]; ++kw) {
                  const int64_t iw = s.input_at(2, ow, kw);
                  if (!s.inside_input(2, iw)) continue;
                  const float* xp =
                      x.data + n * x.stride[0] + id * x.stride[2] + ih * x.stride[3] + iw * x.stride[4];
                  const float* wt = taps.data() + ((kd * s.k[1] + kh) * s.k[2] + kw) * C;
                  for (int64_t c = 0; c < C; ++c) acc[c] += wt[c] * xp[c];
                }
              }
            }
            std::copy(acc, acc + C,
                      y.data + n * y.image_stride + ((od * s.out[1] + oh) * s.out[2] + ow) * y.pixel_stride);
          }
        }
        return Error::Ok;
      });
}

// One input channel per group, a few output channels each (co reads input
// channel co / (Cout/g)). Each output row is accumulated in a buffer, one
// weight tap at a time over the columns it reaches, so the inner loop has no
// bounds checks and reads with unit stride: input rows that are strided, or
// read with a convolution stride S, are first split into S contiguous phases
// (phase r holds elements r, r + S, r + 2S, ...).
Error depthwise_rows(const Strided5& x, const Strided5& w, const float* bias, const ConvShape& s,
                     const OutputLayout& y) {
  const int64_t cout_g = s.cout / s.groups, out_w = s.out[2], in_w = s.in[2];
  const int64_t xw = x.stride[4], sw = s.stride[2];
  const bool direct_rows = sw == 1 && xw == 1;
  const int64_t phase_len = (in_w + sw - 1) / sw;
  return parallel_for(
      s.n * s.cout, std::max<int64_t>(1, 16384 / std::max<int64_t>(s.out_plane() * s.k_plane(), 1)),
      [&](int64_t begin, int64_t end) -> Error {
        thread_local std::vector<float> scratch;
        const size_t need = static_cast<size_t>(out_w + (direct_rows ? 0 : sw * phase_len));
        if (scratch.size() < need) scratch.resize(need);
        float* acc = scratch.data();
        float* phases = acc + out_w;
        for (int64_t item = begin; item < end; ++item) {
          const int64_t n = item / s.cout, co = item % s.cout;
          const float* xc = x.data + n * x.stride[0] + (co / cout_g) * x.stride[1];
          const float* wc = w.data + co * w.stride[0];
          float* yc = y.data + n * y.image_stride + co * y.channel_stride;
          const float b = bias ? bias[co] : 0.0f;
          for (int64_t od = 0; od < s.out[0]; ++od)
            for (int64_t oh = 0; oh < s.out[1]; ++oh) {
              std::fill(acc, acc + out_w, b);
              for (int64_t kd = 0; kd < s.k[0]; ++kd) {
                const int64_t id = s.input_at(0, od, kd);
                if (!s.inside_input(0, id)) continue;
                for (int64_t kh = 0; kh < s.k[1]; ++kh) {
                  const int64_t ih = s.input_at(1, oh, kh);
                  if (!s.inside_input(1, ih)) continue;
                  const float* xr = xc + id * x.stride[2] + ih * x.stride[3];
                  if (!direct_rows)
                    for (int64_t i = 0; i < in_w; ++i) phases[(i % sw) * phase_len + i / sw] = xr[i * xw];
                  for (int64_t kw = 0; kw < s.k[2]; ++kw) {
                    const float wv = wc[kd * w.stride[2] + kh * w.stride[3] + kw * w.stride[4]];
                    const int64_t offset = kw * s.dil[2] - s.pad[2];
                    int64_t lo = 0, hi = 0;
                    valid_columns(offset, sw, in_w, out_w, lo, hi);
                    // Input element ow * sw + offset: phase r = offset mod sw, index ow + (offset - r) / sw.
                    const int64_t r = ((offset % sw) + sw) % sw;
                    const float* src = direct_rows ? xr + offset : phases + r * phase_len + (offset - r) / sw;
                    for (int64_t ow = lo; ow < hi; ++ow) acc[ow] += wv * src[ow];
                  }
                }
              }
              float* yr = yc + (od * s.out[1] + oh) * out_w * y.pixel_stride;
              if (y.pixel_stride == 1) {
                std::copy(acc, acc + out_w, yr);
              } else {
                for (int64_t ow = 0; ow < out_w; ++ow) yr[ow * y.pixel_stride] = acc[ow];
              }
            }
        }
        return Error::Ok;
      });
}

}  // namespace kiln::cpu::conv
