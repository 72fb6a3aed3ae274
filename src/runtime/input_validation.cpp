#include "runtime/input_validation.h"

#include <string>

namespace kiln {
namespace {
std::string input_label(const MethodInfo& method, size_t index) {
  std::string label = "method '" + method.name + "' input " + std::to_string(index);
  if (index < method.inputs.size() && !method.inputs[index].name.empty())
    label += " ('" + method.inputs[index].name + "')";
  return label;
}

std::string expected_shape(const TensorSpec& spec) {
  std::string out = "[";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    if (i) out += ", ";
    const DimSpec& d = spec.dims[i];
    if (!d.dynamic) {
      out += std::to_string(d.size);
    } else {
      out += (d.name.empty() ? std::string("dyn") : d.name) + ":" + std::to_string(d.min) + ".." +
             (d.max < 0 ? std::string("inf") : std::to_string(d.max));
    }
  }
  return out + "]";
}
}  // namespace

Error validate_inputs(const MethodInfo& method, std::span<const Tensor> inputs) {
  if (inputs.size() != method.inputs.size())
    return set_error(Error::InvalidArgument, "method '" + method.name + "' takes " +
                                                 std::to_string(method.inputs.size()) + " inputs, got " +
                                                 std::to_string(inputs.size()));
  const auto expected_device = parse_device(method.device);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const TensorSpec& spec = method.inputs[i];
    if (!t.defined()) return set_error(Error::InvalidArgument, input_label(method, i) + " is an undefined tensor");
    if (t.dtype() != spec.dtype)
      return set_error(Error::InvalidArgument, input_label(method, i) + " must be " + dtype_name(spec.dtype) +
                                                   ", got " + dtype_name(t.dtype()));
    if (t.dim() != static_cast<int64_t>(spec.dims.size()))
      return set_error(Error::InvalidArgument, input_label(method, i) + " must have rank " +
                                                   std::to_string(spec.dims.size()) + " " + expected_shape(spec) +
                                                   ", got " + t.describe());
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      const DimSpec& dim = spec.dims[d];
      const int64_t size = t.size(static_cast<int64_t>(d));
      const bool fits = dim.dynamic ? (size >= dim.min && (dim.max < 0 || size <= dim.max)) : size == dim.size;
      if (!fits)
        return set_error(Error::InvalidArgument, input_label(method, i) + " dim " + std::to_string(d) +
                                                     " is " + std::to_string(size) + " but must be " +
                                                     (dim.dynamic ? "in " : "") + expected_shape(spec) +
                                                     " (got " + t.describe() + ")");
    }
    // CPU inputs are accepted for device methods (copied in by the backend);
    // device inputs must be on the method's device type.
    if (expected_device && !t.device().is_cpu() && t.device().type != expected_device->type)
      return set_error(Error::InvalidArgument, input_label(method, i) + " is on " + device_string(t.device()) +
                                                   " but the method runs on " + method.device);
    KILN_ASSIGN_OR_RETURN(int64_t extent, strided_extent_bytes(t.sizes(), t.strides(), t.dtype()));
    // The offset comes from the caller too: a negative one, or one whose byte
    // position overflows, would point the kernel outside the storage.
    int64_t start = 0, end = 0;
    if (extent > 0 &&
        (t.storage_offset() < 0 ||
         __builtin_mul_overflow(t.storage_offset(), static_cast<int64_t>(element_size(t.dtype())), &start) ||
         __builtin_add_overflow(start, extent, &end) || static_cast<uint64_t>(end) > t.storage()->nbytes()))
      return set_error(Error::InvalidArgument, input_label(method, i) + " (storage offset " +
                                                   std::to_string(t.storage_offset()) + ", " + std::to_string(extent) +
                                                   " bytes) reaches outside its storage of " +
                                                   std::to_string(t.storage()->nbytes()) + " bytes");
  }
  return Error::Ok;
}

}  // namespace kiln
