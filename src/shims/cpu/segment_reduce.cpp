// aoti_torch_cpu_segment_reduce: reduces consecutive segments of `data` along
// `axis` (sum, mean, max, min or prod), the segments given by `lengths` or by
// `offsets` (offsets win when both are given; `indices` is not supported, as
// in ATen); the checks are shared with the CUDA op
// (shims/common/segment_reduce_args.h). As ATen: data is floating;
// lengths/offsets are int32/int64 with axis as their last dimension and
// data's sizes before it; the result is contiguous with data's shape and
// axis resized to the number of segments.
// `initial` joins every segment's reduction (mean divides by the length
// only); an empty segment gives `initial`, else 0 (sum), 1 (prod), -inf
// (max), inf (min) or NaN (mean). max/min propagate NaN. Unless `unsafe`, the
// segments must cover axis exactly; with unsafe they may cover a prefix.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/common/segment_reduce_args.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace seg = kiln::aoti::segment;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_segment_reduce(AtenTensorHandle data_h, const char* reduce,
                                                              AtenTensorHandle* lengths_h, AtenTensorHandle* indices_h,
                                                              AtenTensorHandle* offsets_h, int64_t axis,
                                                              int32_t unsafe, double* initial,
                                                              AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_segment_reduce", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * data, cpu_tensor_arg(data_h, "data"));
    KILN_ASSIGN_OR_RETURN(Tensor * lengths, optional_cpu_tensor_arg(lengths_h, "lengths"));
    KILN_ASSIGN_OR_RETURN(Tensor * indices, optional_cpu_tensor_arg(indices_h, "indices"));
    KILN_ASSIGN_OR_RETURN(Tensor * offsets, optional_cpu_tensor_arg(offsets_h, "offsets"));
    const auto shape_of = [](const Tensor* t) {
      return t ? seg::TensorShape{true, t->dtype(), t->sizes()} : seg::TensorShape{};
    };
    KILN_ASSIGN_OR_RETURN(seg::Plan plan, seg::plan(data->dtype(), data->sizes(), reduce, shape_of(lengths),
                                                    indices != nullptr, shape_of(offsets), axis));
    KILN_RETURN_IF_ERROR(seg::initial_fits(initial, data->dtype()));
    const seg::Reduce r = plan.reduce;
    const int64_t segments = plan.segments;
    const std::vector<int64_t> sv = read_elements<int64_t>(plan.by_lengths ? *lengths : *offsets);
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts, seg::segment_starts(plan, sv, unsafe != 0));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(plan.out_sizes, data->dtype()));
    const DimSplit in = DimSplit::of(data->sizes(), plan.axis), os = DimSplit::of(plan.out_sizes, plan.axis);
    const std::vector<double> x = read_elements<double>(*data);
    std::vector<double> y(static_cast<size_t>(out.numel()));
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (int64_t o = 0; o < in.outer; ++o) {
      const int64_t* st = &starts[static_cast<size_t>(o * (segments + 1))];
      for (int64_t s = 0; s < segments; ++s)
        for (int64_t j = 0; j < in.inner; ++j) {
          double acc = 0.0;
          switch (r) {
            case seg::Reduce::Sum:
            case seg::Reduce::Mean: acc = initial ? *initial : 0.0; break;
            case seg::Reduce::Prod: acc = initial ? *initial : 1.0; break;
            case seg::Reduce::Max: acc = initial ? *initial : -inf; break;
            case seg::Reduce::Min: acc = initial ? *initial : inf; break;
          }
          for (int64_t i = st[s]; i < st[s + 1]; ++i) {
            const double v = x[static_cast<size_t>((o * in.size + i) * in.inner + j)];
            switch (r) {
              case seg::Reduce::Sum:
              case seg::Reduce::Mean: acc += v; break;
              case seg::Reduce::Prod: acc *= v; break;
              case seg::Reduce::Max: acc = std::isnan(acc) || std::isnan(v) ? nan : std::max(acc, v); break;
              case seg::Reduce::Min: acc = std::isnan(acc) || std::isnan(v) ? nan : std::min(acc, v); break;
            }
          }
          const int64_t len = st[s + 1] - st[s];
          if (r == seg::Reduce::Mean) acc = len > 0 ? acc / static_cast<double>(len) : (initial ? *initial : nan);
          y[static_cast<size_t>((o * os.size + s) * os.inner + j)] = acc;
        }
    }
    write_elements(y.data(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
