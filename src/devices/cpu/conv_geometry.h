// The geometry of one CPU convolution call, shared by its kernels
// (convolution.cpp, depthwise_conv.cpp): the problem's shape normalised to
// three spatial dims, float32 operands read through their own strides, and
// the dense output they write.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::cpu::conv {

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
  // The input position along spatial dim d that output position o meets through kernel tap t.
  int64_t input_at(int d, int64_t o, int64_t t) const { return o * stride[d] - pad[d] + t * dil[d]; }
  bool inside_input(int d, int64_t i) const { return i >= 0 && i < in[d]; }
};

// A float32 tensor read through its strides, with its dims normalised to 5:
// [n (or out channels), channels, depth, height, width]; missing leading
// spatial dims have size 1.
struct Strided5 {
  const float* data = nullptr;
  std::array<int64_t, 5> size{1, 1, 1, 1, 1}, stride{0, 0, 0, 0, 0};
};

inline Strided5 strided5(const float* data, const std::vector<int64_t>& sizes,
                         const std::vector<int64_t>& strides) {
  Strided5 v;
  v.data = data;
  const size_t lead = 5 - sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    const size_t to = d < 2 ? d : d + lead;
    v.size[to] = sizes[d];
    v.stride[to] = strides[d];
  }
  return v;
}

// The output as written: dense, pixels flattened with one stride.
struct OutputLayout {
  float* data;
  int64_t image_stride, channel_stride, pixel_stride;
};

}  // namespace kiln::cpu::conv
