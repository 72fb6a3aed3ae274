#include "shims/common/convolution_args.h"

#include <algorithm>
#include <string>

#include "shims/common/shim_util.h"

namespace kiln::aoti {
namespace {

// One value per spatial dim from an int list that has one value (for all),
// one per dim, or none (`fill`).
Result<std::vector<int64_t>> expand(const int64_t* p, int64_t len, const char* name, int spatial, int64_t fill) {
  KILN_ASSIGN_OR_RETURN(auto v, int_array_arg(p, len, name));
  if (v.empty()) return std::vector<int64_t>(static_cast<size_t>(spatial), fill);
  if (v.size() == 1) return std::vector<int64_t>(static_cast<size_t>(spatial), v[0]);
  if (v.size() != static_cast<size_t>(spatial))
    return invalid(std::string(name) + " has " + std::to_string(v.size()) + " values for " + std::to_string(spatial) +
                   " spatial dims");
  return std::vector<int64_t>(v.begin(), v.end());
}

}  // namespace

Result<ConvolutionArgs> convolution_args(std::span<const int64_t> input, std::span<const int64_t> weight,
                                         std::optional<std::span<const int64_t>> bias, const int64_t* stride,
                                         int64_t stride_len, const int64_t* padding, int64_t padding_len,
                                         const int64_t* dilation, int64_t dilation_len, bool transposed,
                                         const int64_t* output_padding, int64_t output_padding_len,
                                         int64_t groups) {
  if (input.size() < 3 || input.size() > 5)
    return invalid("input must be 3-d, 4-d or 5-d (batched), got " + shape_string(input));
  if (weight.size() != input.size())
    return invalid("weight " + shape_string(weight) + " does not match input " + shape_string(input));
  if (groups < 1) return invalid("groups must be positive, got " + std::to_string(groups));
  ConvolutionArgs a;
  a.spatial = static_cast<int>(input.size() - 2);
  a.transposed = transposed;
  a.groups = groups;
  a.batch = input[0];
  a.in_channels = input[1];
  KILN_ASSIGN_OR_RETURN(a.stride, expand(stride, stride_len, "stride", a.spatial, 1));
  KILN_ASSIGN_OR_RETURN(a.padding, expand(padding, padding_len, "padding", a.spatial, 0));
  KILN_ASSIGN_OR_RETURN(a.dilation, expand(dilation, dilation_len, "dilation", a.spatial, 1));
  a.output_padding.assign(static_cast<size_t>(a.spatial), 0);
  if (transposed) {
    KILN_ASSIGN_OR_RETURN(a.output_padding,
                          expand(output_padding, output_padding_len, "output_padding", a.spatial, 0));
  }
  for (int i = 0; i < a.spatial; ++i) {
    if (a.stride[i] < 1) return invalid("stride must be positive, got " + std::to_string(a.stride[i]));
    if (a.dilation[i] < 1) return invalid("dilation must be positive, got " + std::to_string(a.dilation[i]));
    if (a.padding[i] < 0) return invalid("padding must be non-negative, got " + std::to_string(a.padding[i]));
    const int64_t opad = a.output_padding[i];
    if (opad < 0 || (opad > 0 && opad >= std::max(a.stride[i], a.dilation[i])))
      return invalid("output_padding " + std::to_string(opad) + " must be smaller than stride or dilation");
  }
  if (a.in_channels % groups != 0)
    return invalid("groups " + std::to_string(groups) + " does not divide input channels " +
                   std::to_string(a.in_channels));
  if (!transposed) {
    if (weight[1] * groups != a.in_channels)
      return invalid("weight " + shape_string(weight) + " does not match input " + shape_string(input) +
                     ": it expects " + std::to_string(weight[1] * groups) + " input channels with groups " +
                     std::to_string(groups));
    a.out_channels = weight[0];
    if (a.out_channels % groups != 0)
      return invalid("groups " + std::to_string(groups) + " does not divide output channels " +
                     std::to_string(a.out_channels));
  } else {
    if (weight[0] != a.in_channels)
      return invalid("transposed weight " + shape_string(weight) + " does not match input " + shape_string(input) +
                     ": it expects " + std::to_string(weight[0]) + " input channels");
    a.out_channels = weight[1] * groups;
  }
  a.output_sizes = {a.batch, a.out_channels};
  for (int i = 0; i < a.spatial; ++i) {
    const int64_t in = input[2 + i], span = a.dilation[i] * (weight[2 + i] - 1) + 1;
    if (!transposed && in + 2 * a.padding[i] < span)
      return invalid("kernel extent " + std::to_string(span) + " exceeds padded input size " +
                     std::to_string(in + 2 * a.padding[i]));
    const int64_t out = transposed ? (in - 1) * a.stride[i] - 2 * a.padding[i] + span + a.output_padding[i]
                                   : (in + 2 * a.padding[i] - span) / a.stride[i] + 1;
    if (out <= 0) return invalid("computed output size " + std::to_string(out) + " is not positive");
    a.output_sizes.push_back(out);
  }
  if (bias && (bias->size() != 1 || (*bias)[0] != a.out_channels))
    return invalid("bias " + shape_string(*bias) + " does not match " + std::to_string(a.out_channels) +
                   " output channels");
  return a;
}

}  // namespace kiln::aoti
