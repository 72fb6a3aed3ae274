// aoti_torch_cpu_segment_reduce: reduces consecutive segments of `data` along
// `axis` (sum, mean, max, min or prod), the segments given by `lengths` or by
// `offsets` (lengths wins when both are given; `indices` is not supported, as
// in ATen). As ATen: data is floating; lengths/offsets are int32/int64 with
// axis as their last dimension and data's sizes before it; the result is
// contiguous with data's shape and axis resized to the number of segments.
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
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

enum class Seg { Sum, Mean, Max, Min, Prod };

Result<Seg> seg_arg(const char* reduce) {
  const std::string r = reduce == nullptr ? "" : reduce;
  if (r == "sum") return Seg::Sum;
  if (r == "mean") return Seg::Mean;
  if (r == "max") return Seg::Max;
  if (r == "min") return Seg::Min;
  if (r == "prod") return Seg::Prod;
  return aoti::invalid("argument 'reduce' is '" + r + "', expected sum, mean, max, min or prod");
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_segment_reduce(AtenTensorHandle data_h, const char* reduce,
                                                              AtenTensorHandle* lengths_h, AtenTensorHandle* indices_h,
                                                              AtenTensorHandle* offsets_h, int64_t axis,
                                                              int32_t unsafe, double* initial,
                                                              AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_segment_reduce", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * data, cpu_tensor_arg(data_h, "data"));
    KILN_ASSIGN_OR_RETURN(Seg r, seg_arg(reduce));
    KILN_ASSIGN_OR_RETURN(Tensor * lengths, optional_cpu_tensor_arg(lengths_h, "lengths"));
    KILN_ASSIGN_OR_RETURN(Tensor * indices, optional_cpu_tensor_arg(indices_h, "indices"));
    KILN_ASSIGN_OR_RETURN(Tensor * offsets, optional_cpu_tensor_arg(offsets_h, "offsets"));
    if (!is_floating(data->dtype()))
      return aoti::invalid(std::string("argument 'data' has dtype ") + dtype_name(data->dtype()) +
                           ", expected a floating dtype");
    if (lengths == nullptr && offsets == nullptr) {
      if (indices != nullptr) return aoti::invalid("argument 'indices': indices based reduction is not supported");
      return aoti::invalid("either 'lengths' or 'offsets' must be given");
    }
    const Tensor& seg = lengths ? *lengths : *offsets;
    const char* seg_name = lengths ? "lengths" : "offsets";
    KILN_RETURN_IF_ERROR(index_dtype_check(seg, seg_name));
    if (data->dim() == 0) return aoti::invalid("argument 'data' is 0-d, expected at least one dimension");
    KILN_ASSIGN_OR_RETURN(int64_t ax, wrap_dim(axis, data->dim(), "axis"));
    if (seg.dim() != ax + 1)
      return aoti::invalid(std::string("argument 'axis' is ") + std::to_string(axis) + ", expected the last dimension of '" +
                           seg_name + "' (shape " + aoti::shape_string(seg.sizes()) + ")");
    for (int64_t j = 0; j < ax; ++j)
      if (seg.size(j) != data->size(j))
        return aoti::invalid(std::string("argument '") + seg_name + "' has shape " + aoti::shape_string(seg.sizes()) +
                             ", expected data's sizes " + aoti::shape_string(data->sizes()) + " before axis " +
                             std::to_string(ax));
    const int64_t segments = lengths ? seg.size(ax) : seg.size(ax) - 1;
    if (segments < 0) return aoti::invalid("argument 'offsets' is empty along axis, expected at least one offset");
    const int64_t outer = DimSplit::of(data->sizes(), ax).outer;
    const int64_t width = data->size(ax);
    const std::vector<int64_t> sv = read_elements<int64_t>(seg);
    // starts[o * (segments + 1) + s]: segment s of row o spans [starts[s], starts[s + 1]).
    std::vector<int64_t> starts(static_cast<size_t>(outer * (segments + 1)));
    for (int64_t o = 0; o < outer; ++o) {
      int64_t* st = &starts[static_cast<size_t>(o * (segments + 1))];
      if (lengths) {
        st[0] = 0;
        for (int64_t s = 0; s < segments; ++s) {
          const int64_t len = sv[static_cast<size_t>(o * segments + s)];
          if (len < 0) return aoti::invalid("argument 'lengths' contains a negative value " + std::to_string(len));
          if (len > width - st[s])
            return aoti::invalid("argument 'lengths' sums past data.size(" + std::to_string(ax) + ") = " +
                                 std::to_string(width));
          st[s + 1] = st[s] + len;
        }
      } else {
        for (int64_t s = 0; s <= segments; ++s) {
          st[s] = sv[static_cast<size_t>(o * (segments + 1) + s)];
          if (st[s] < 0 || st[s] > width || (s > 0 && st[s] < st[s - 1]))
            return aoti::invalid("argument 'offsets' has value " + std::to_string(st[s]) +
                                 ", expected non-decreasing offsets in [0, " + std::to_string(width) + "]");
        }
      }
      if (!unsafe && (st[0] != 0 || st[segments] != width))
        return aoti::invalid(std::string("argument '") + seg_name + "': segments must cover data.size(" +
                             std::to_string(ax) + ") = " + std::to_string(width) + " exactly unless unsafe");
    }
    std::vector<int64_t> out_sizes = data->sizes();
    out_sizes[static_cast<size_t>(ax)] = segments;
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(out_sizes, data->dtype()));
    const DimSplit in = DimSplit::of(data->sizes(), ax), os = DimSplit::of(out_sizes, ax);
    const std::vector<double> x = read_elements<double>(*data);
    std::vector<double> y(static_cast<size_t>(out.numel()));
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (int64_t o = 0; o < in.outer; ++o) {
      const int64_t* st = &starts[static_cast<size_t>(o * (segments + 1))];
      for (int64_t s = 0; s < segments; ++s)
        for (int64_t j = 0; j < in.inner; ++j) {
          double acc = 0.0;
          switch (r) {
            case Seg::Sum:
            case Seg::Mean: acc = initial ? *initial : 0.0; break;
            case Seg::Prod: acc = initial ? *initial : 1.0; break;
            case Seg::Max: acc = initial ? *initial : -inf; break;
            case Seg::Min: acc = initial ? *initial : inf; break;
          }
          for (int64_t i = st[s]; i < st[s + 1]; ++i) {
            const double v = x[static_cast<size_t>((o * in.size + i) * in.inner + j)];
            switch (r) {
              case Seg::Sum:
              case Seg::Mean: acc += v; break;
              case Seg::Prod: acc *= v; break;
              case Seg::Max: acc = std::isnan(acc) || std::isnan(v) ? nan : std::max(acc, v); break;
              case Seg::Min: acc = std::isnan(acc) || std::isnan(v) ? nan : std::min(acc, v); break;
            }
          }
          const int64_t len = st[s + 1] - st[s];
          if (r == Seg::Mean) acc = len > 0 ? acc / static_cast<double>(len) : (initial ? *initial : nan);
          y[static_cast<size_t>((o * os.size + s) * os.inner + j)] = acc;
        }
    }
    write_elements(y.data(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
