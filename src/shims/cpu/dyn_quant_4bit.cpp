// aoti_torch_cpu__dyn_quant_pack_4bit_weight, aoti_torch_cpu__dyn_quant_matmul_4bit:
// linear layers with 4-bit weights and activations quantized to int8 per row
// at run time (torchao's Int8DynamicActivationIntxWeight on the CPU).
//
// The packed weight is ATen's x86 format, bit for bit: a model exported with
// ATen already holds the packed tensor as a constant (the pack op runs when
// the model is quantized, not in the compiled graph), so the matmul must read
// ATen's layout. That layout is a 1-D float32 tensor: the weight bytes
// ([N, K/2] uint8, two 4-bit values per byte, low nibble first, value - 8),
// then the scales ([N, K/block_size], or [N] when block_size == K), then the
// bias [N] if one was given, each element stored as a float. (ATen built with
// KleidiAI on Arm packs into an opaque uint8 layout instead; Kiln refuses
// such a tensor with a message saying so.)
//
// The matmul follows ATen's reference kernel exactly: each input row is
// quantized to int8 with an asymmetric scale and zero point from its min/max
// (always including 0), products are accumulated in int32 per block, scaled by
// the block's weight scale into a float32 sum, multiplied by the row's scale,
// and the bias added.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

Error check_block_size(int64_t block_size, int64_t in_features, int64_t out_features) {
  if (in_features < 0 || out_features < 0)
    return aoti::invalid("in_features (" + std::to_string(in_features) + ") and out_features (" +
                         std::to_string(out_features) + ") must be non-negative");
  if (block_size <= 0 || !(block_size == in_features || (block_size % 32 == 0 && in_features % block_size == 0)))
    return aoti::invalid("block_size (group size) should be in_features (" + std::to_string(in_features) +
                         ") or a multiple of 32 dividing it; got " + std::to_string(block_size));
  return Error::Ok;
}

// One input row quantized: q[k] = clamp(round(x[k] * scale) + zero_point),
// with `recip` = 1 / scale and `offset` = -zero_point.
struct QuantizedRow {
  std::vector<int8_t> q;
  float recip = 0.0f;
  int32_t offset = 0;
};

void quantize_row(const float* x, int64_t k, bool channelwise, QuantizedRow& row) {
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (int64_t i = 0; i < k; ++i) {
    hi = std::max(x[i], hi);
    lo = std::min(x[i], lo);
  }
  constexpr float qmin = -128.0f, qmax = 127.0f;
  const float rmin = std::min(0.0f, lo);
  const float rmax = std::max(0.0f, hi);
  const float scale = rmin == rmax ? 1.0f : (qmax - qmin) / (rmax - rmin);
  row.recip = scale != 0.0f ? 1.0f / scale : 0.0f;
  const float descaled_min = rmin * scale;
  const float descaled_max = rmax * scale;
  // ATen's two reference kernels group this sum differently; kept as each does.
  const bool from_min = channelwise ? (qmin + descaled_min) + (qmax + descaled_max) > 0.0f
                                    : qmin + descaled_min + qmax + descaled_max > 0.0f;
  float zero_point = from_min ? qmin - descaled_min : qmax - descaled_max;
  zero_point = std::min(std::max(zero_point, qmin), qmax);
  const auto nudged = static_cast<int32_t>(std::lrint(zero_point));
  row.offset = -nudged;
  row.q.resize(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    int32_t v = static_cast<int32_t>(std::round(x[i] * scale)) + nudged;
    v = std::min(std::max(v, int32_t{-128}), int32_t{127});
    row.q[static_cast<size_t>(i)] = static_cast<int8_t>(v);
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__dyn_quant_pack_4bit_weight(AtenTensorHandle weights,
                                                                           AtenTensorHandle scales_zeros,
                                                                           AtenTensorHandle* bias, int64_t block_size,
                                                                           int64_t in_features, int64_t out_features,
                                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__dyn_quant_pack_4bit_weight", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * w, cpu_tensor_arg(weights, "weights"));
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(scales_zeros, "scales_zeros"));
    KILN_ASSIGN_OR_RETURN(Tensor * b, optional_cpu_tensor_arg(bias, "bias"));
    if (w->dtype() != DType::UInt8)
      return aoti::invalid(std::string("argument 'weights' has dtype ") + dtype_name(w->dtype()) +
                           ", expected uint8 (two 4-bit values per byte)");
    KILN_RETURN_IF_ERROR(check_block_size(block_size, in_features, out_features));
    for (const Tensor* t : {s, b}) {
      if (t != nullptr && element_kind(t->dtype()) == ElementKind::Unsupported)
        return aoti::invalid(std::string("argument '") + (t == s ? "scales_zeros" : "bias") + "' has dtype " +
                             dtype_name(t->dtype()) + ", which cannot be converted to float32");
    }
    const int64_t total = w->numel() + s->numel() + (b ? b->numel() : 0);
    const int64_t sizes[1] = {total};
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(sizes, DType::Float32));
    float* dst = out.data<float>();
    for (const Tensor* t : {w, s, b}) {
      if (t == nullptr) continue;
      // Each element rounded to float32, as ATen's .to(kFloat) then cat.
      for (double v : read_elements<double>(*t)) *dst++ = static_cast<float>(v);
    }
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__dyn_quant_matmul_4bit(AtenTensorHandle inp,
                                                                      AtenTensorHandle packed_weights,
                                                                      int64_t block_size, int64_t in_features,
                                                                      int64_t out_features, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__dyn_quant_matmul_4bit", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(inp, "inp"));
    KILN_ASSIGN_OR_RETURN(Tensor * packed, cpu_tensor_arg(packed_weights, "packed_weights"));
    KILN_RETURN_IF_ERROR(check_block_size(block_size, in_features, out_features));
    const int64_t k = in_features, n = out_features;
    if (k % 2 != 0)
      return aoti::invalid("in_features (" + std::to_string(k) + ") must be even: weights pack two 4-bit values per byte");
    if (x->dtype() != DType::Float32)
      return aoti::invalid(std::string("argument 'inp' has dtype ") + dtype_name(x->dtype()) + ", expected float32");
    // ATen reads inp as M contiguous rows of in_features; anything else is refused.
    if (x->dim() != 2 || x->size(1) != k)
      return aoti::invalid("argument 'inp' has shape " + aoti::shape_string(x->sizes()) + ", expected [M, " +
                           std::to_string(k) + "] (in_features)");
    if (packed->dtype() == DType::UInt8)
      return aoti::invalid(
          "argument 'packed_weights' is uint8: that is the layout ATen's KleidiAI kernels (Arm) pack, which Kiln "
          "does not read; pack the weight with ATen on x86 or with Kiln (a float32 tensor)");
    if (packed->dim() != 1 || element_kind(packed->dtype()) != ElementKind::Floating)
      return aoti::invalid(std::string("argument 'packed_weights' must be the 1-D float tensor "
                                       "_dyn_quant_pack_4bit_weight returns, got dtype ") +
                           dtype_name(packed->dtype()) + " shape " + aoti::shape_string(packed->sizes()));
    const int64_t weight_bytes = n * k / 2;
    const int64_t blocks = k / block_size;
    const int64_t scales = n * blocks;
    if (packed->numel() < weight_bytes + scales)
      return aoti::invalid("Invalid packed weight tensor size: 'packed_weights' has " +
                           std::to_string(packed->numel()) + " elements, expected at least " +
                           std::to_string(weight_bytes + scales));
    const int64_t bias_len = packed->numel() - weight_bytes - scales;
    if (bias_len != 0 && bias_len != n)
      return aoti::invalid("Expected bias length to match output dimension: 'packed_weights' holds " +
                           std::to_string(bias_len) + " elements after the weights and scales, expected 0 or " +
                           std::to_string(n));
    const int64_t m = x->size(0);
    const int64_t sizes[2] = {m, n};
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(sizes, DType::Float32));
    if (m == 0 || n == 0) return return_tensor(std::move(out), ret0, "ret0");

    const std::vector<double> p = read_elements<double>(*packed);
    std::vector<uint8_t> wbytes(static_cast<size_t>(weight_bytes));
    for (int64_t i = 0; i < weight_bytes; ++i) {
      // ATen's .to(kByte): the stored byte values are whole numbers in [0, 255].
      const double v = p[static_cast<size_t>(i)];
      wbytes[static_cast<size_t>(i)] = static_cast<uint8_t>(std::isnan(v) ? 0.0 : std::min(std::max(v, 0.0), 255.0));
    }
    std::vector<float> wscale(static_cast<size_t>(scales));
    for (int64_t i = 0; i < scales; ++i) wscale[static_cast<size_t>(i)] = static_cast<float>(p[static_cast<size_t>(weight_bytes + i)]);
    std::vector<float> bias(static_cast<size_t>(bias_len));
    for (int64_t i = 0; i < bias_len; ++i)
      bias[static_cast<size_t>(i)] = static_cast<float>(p[static_cast<size_t>(weight_bytes + scales + i)]);

    std::vector<double> xd = read_elements<double>(*x);
    std::vector<float> xf(xd.begin(), xd.end());
    const bool channelwise = block_size == k;
    const int64_t row_bytes = k / 2;
    float* dst = out.data<float>();
    QuantizedRow row;
    for (int64_t r = 0; r < m; ++r) {
      quantize_row(xf.data() + r * k, k, channelwise, row);
      for (int64_t c = 0; c < n; ++c) {
        const uint8_t* wrow = wbytes.data() + c * row_bytes;
        float acc = 0.0f;
        for (int64_t blk = 0; blk < blocks; ++blk) {
          int32_t iacc = 0;
          for (int64_t i = blk * block_size; i < (blk + 1) * block_size; ++i) {
            const uint8_t byte = wrow[i / 2];
            const int32_t wv = static_cast<int32_t>(i % 2 == 0 ? (byte & 0x0f) : (byte >> 4)) - 8;
            iacc += (static_cast<int32_t>(row.q[static_cast<size_t>(i)]) + row.offset) * wv;
          }
          acc += static_cast<float>(iacc) * wscale[static_cast<size_t>(c * blocks + blk)];
        }
        acc *= row.recip;
        if (bias_len != 0) acc += bias[static_cast<size_t>(c)];
        dst[r * n + c] = acc;
      }
    }
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
