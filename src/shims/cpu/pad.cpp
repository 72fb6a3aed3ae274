// aoti_torch_cpu_pad: pads (or, with negative amounts, crops) the last
// pad.size()/2 dimensions; pad[0], pad[1] are the last dimension's before and
// after amounts, pad[2], pad[3] the one before it, and so on. Modes as ATen:
//   constant  - `value` (0 when absent) outside the input, any rank/dtype;
//   reflect   - mirror without repeating the edge (amounts < the size);
//   replicate - repeat the edge element;
//   circular  - wrap around (after cropping by negative amounts); an amount
//               larger than what the crop leaves is refused (ATen's kernel
//               fails or reads uninitialised memory there).
// The non-constant modes take 2, 4 or 6 amounts on a tensor of one or two
// more dimensions (unbatched or batched), and no value. Every mode works on
// any dtype by copying elements. Layout: channels-last for a channels-last
// 4-D/5-D input in the constant, reflect and replicate modes; a constant
// crop (no positive amount) keeps the input's dimension order; contiguous
// otherwise.
#include <algorithm>
#include <cstring>

#include "devices/cpu/element_buffer.h"
#include "shims/common/pad_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/elementwise.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// ATen's is_channels_last_strides_2d / _3d: dimension order N, spatial..., C
// from the outside in.
bool strides_like_channels_last(const Tensor& t) {
  std::vector<int64_t> order;
  if (t.dim() == 4)
    order = {1, 3, 2, 0};
  else if (t.dim() == 5)
    order = {1, 4, 3, 2, 0};
  else
    return false;
  if (t.stride(1) == 0) return false;
  int64_t min = 0;
  for (int64_t d : order) {
    if (t.size(d) == 0 || t.stride(d) < min) return false;
    if (d == 0 && min == t.stride(1)) return false;
    min = t.stride(d);
    if (t.size(d) > 1) min *= t.size(d);
  }
  return true;
}

std::vector<int64_t> channels_last_strides(std::span<const int64_t> sizes) {
  std::vector<int64_t> order =
      sizes.size() == 4 ? std::vector<int64_t>{1, 3, 2, 0} : std::vector<int64_t>{1, 4, 3, 2, 0};
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (int64_t d : order) {
    strides[static_cast<size_t>(d)] = s;
    s *= std::max<int64_t>(sizes[static_cast<size_t>(d)], 1);
  }
  return strides;
}

// For each output index along a dimension of input size n padded by
// (before, after): the input index it copies, or -1 for the constant value.
std::vector<int64_t> index_map(aoti::PadMode mode, int64_t n, int64_t before, int64_t after) {
  const int64_t out = n + before + after;
  std::vector<int64_t> map(static_cast<size_t>(std::max<int64_t>(out, 0)));
  const int64_t crop_lo = std::max<int64_t>(-before, 0);
  const int64_t kept = n - crop_lo - std::max<int64_t>(-after, 0);
  for (int64_t i = 0; i < out; ++i) {
    int64_t j = i - before;
    switch (mode) {
      case aoti::PadMode::Constant:
        j = j < 0 || j >= n ? -1 : j;
        break;
      case aoti::PadMode::Reflect:
        if (j < 0) j = -j;
        if (j >= n) j = 2 * (n - 1) - j;
        break;
      case aoti::PadMode::Replicate:
        j = std::clamp<int64_t>(j, 0, n - 1);
        break;
      case aoti::PadMode::Circular: {
        const int64_t c = i - std::max<int64_t>(before, 0);
        j = ((c % kept) + kept) % kept + crop_lo;
        break;
      }
    }
    map[static_cast<size_t>(i)] = j;
  }
  return map;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pad(AtenTensorHandle self, const int64_t* pad,
                                                   int64_t pad_len_, const char* mode, double* value,
                                                   AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_pad", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> amounts, aoti::int_array_arg(pad, pad_len_, "pad"));
    KILN_ASSIGN_OR_RETURN(aoti::PadArgs args, aoti::pad_args(t->sizes(), amounts, mode, value));
    const aoti::PadMode md = args.mode;
    const int64_t nd = t->dim();
    const std::vector<int64_t>& out_sizes = args.out_sizes;
    std::vector<std::vector<int64_t>> maps(static_cast<size_t>(nd));
    for (int64_t d = 0; d < nd; ++d) {
      const aoti::PadDimension& pd = args.dims[static_cast<size_t>(d)];
      if (pd.before != 0 || pd.after != 0) maps[static_cast<size_t>(d)] = index_map(md, pd.size, pd.before, pd.after);
    }
    std::vector<int64_t> strides;
    if (md != aoti::PadMode::Circular && strides_like_channels_last(*t))
      strides = channels_last_strides(out_sizes);
    else if (md == aoti::PadMode::Constant && args.crop_only)
      strides = elementwise_strides(out_sizes, {*t});
    else
      strides = contiguous_strides(out_sizes);
    KILN_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::empty_strided(out_sizes, strides, t->dtype(), Device{DeviceType::CPU, 0}));
    const auto elem = static_cast<int64_t>(element_size(t->dtype()));
    char fill[16] = {};
    if (md == aoti::PadMode::Constant && value != nullptr) {
      if (element_kind(t->dtype()) == ElementKind::Unsupported && *value != 0.0)
        return aoti::invalid(std::string("a non-zero pad value cannot be written to dtype ") +
                             dtype_name(t->dtype()));
      write_element<double>(fill, t->dtype(), *value);
    }
    if (out.numel() == 0) return return_tensor(std::move(out), ret0, "ret0");
    const char* src = static_cast<const char*>(t->data_ptr());
    char* dst = static_cast<char*>(out.data_ptr());
    std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
    const int64_t total = out.numel();
    for (int64_t k = 0; k < total; ++k) {
      int64_t src_off = 0, dst_off = 0;
      bool inside = true;
      for (int64_t d = 0; d < nd; ++d) {
        const size_t ud = static_cast<size_t>(d);
        const int64_t j = maps[ud].empty() ? idx[ud] : maps[ud][static_cast<size_t>(idx[ud])];
        if (j < 0) inside = false;
        src_off += j * t->stride(d);
        dst_off += idx[ud] * strides[ud];
      }
      std::memcpy(dst + dst_off * elem, inside ? src + src_off * elem : fill, static_cast<size_t>(elem));
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (++idx[static_cast<size_t>(d)] < out_sizes[static_cast<size_t>(d)]) break;
        idx[static_cast<size_t>(d)] = 0;
      }
    }
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
