// aoti_torch_cpu_histc, aoti_torch_cpu_histogram_bin_ct,
// aoti_torch_cpu__histogramdd_from_bin_cts: counts (or summed weights) of
// elements in equal-width bins. As ATen's CPU kernel:
// - the outer edges come from the arguments, else from the data's min and max
//   (0 and 1 for no data); equal edges are widened, by 1 for histc and by 0.5
//   for histogram / histogramdd; edges that are not finite are refused;
// - the bin edges are linspace(lo, hi, bins + 1) in the input's dtype, and an
//   element's bin is found in that dtype as ATen finds it: (x - lo) * bins /
//   (hi - lo) truncated, then (histogram, histogramdd) corrected against the
//   neighbouring edges; x == hi goes to the last bin; elements outside the
//   edges, and NaNs, are not counted;
// - counts accumulate in the input's dtype; density divides by the total and
//   by each bin's width;
// - histc takes float32/float64/float16/bfloat16, the others float32/float64;
//   weight must have the input's dtype. Results are new contiguous tensors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shims/common/histc_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

using aoti::hist::bins_in_range;
using aoti::hist::num;

struct Axis {
  int64_t bins = 1;
  std::vector<double> edges;  // bins + 1 of them, in the input's dtype
};

// ATen's linspace in dtype `dt`: the first half counted up from `start`, the
// second half down from `end`, each step rounded as dt rounds it.
std::vector<double> linspace_in(double start, double end, int64_t steps, DType dt) {
  const double s = round_to_dtype(start, dt), e = round_to_dtype(end, dt);
  std::vector<double> out(static_cast<size_t>(steps));
  if (steps == 1) {
    out[0] = s;
    return out;
  }
  const double step = round_to_dtype(round_to_dtype(e - s, dt) / static_cast<double>(steps - 1), dt);
  const int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i) {
    const double v = i < halfway ? s + round_to_dtype(step * static_cast<double>(i), dt)
                                 : e - round_to_dtype(step * static_cast<double>(steps - i - 1), dt);
    out[static_cast<size_t>(i)] = round_to_dtype(v, dt);
  }
  return out;
}

// The bin of `x` (already known to lie within the outer edges).
int64_t bin_of(double x, const Axis& a, bool local_search, DType dt) {
  const double lo = a.edges.front(), hi = a.edges.back();
  double f = round_to_dtype(round_to_dtype(round_to_dtype(x - lo, dt) * round_to_dtype(static_cast<double>(a.bins), dt), dt) /
                                round_to_dtype(hi - lo, dt),
                            dt);
  // Degenerate edges (hi == lo after rounding) give inf or NaN here.
  if (!(f >= 0)) f = 0;
  if (f > static_cast<double>(a.bins)) f = static_cast<double>(a.bins);
  int64_t pos = static_cast<int64_t>(f);
  if (local_search) {
    const int64_t pos_min = std::max<int64_t>(0, pos - 1);
    const int64_t pos_max = std::min<int64_t>(pos + 2, a.bins + 1);
    const auto first = a.edges.begin();
    pos = (std::upper_bound(first + pos_min, first + pos_max, x) - first) - 1;
  }
  if (pos == a.bins) pos -= 1;
  return std::clamp<int64_t>(pos, 0, a.bins - 1);
}

// Histogram of `n` points of `axes.size()` coordinates each (row-major in
// `data`), with optional per-point weights; row-major over the axes' bins.
std::vector<double> count(const std::vector<double>& data, int64_t n, const std::vector<Axis>& axes,
                          const std::vector<double>* weight, bool local_search, DType dt) {
  int64_t total = 1;
  for (const Axis& a : axes) total *= a.bins;
  std::vector<double> hist(static_cast<size_t>(total), 0.0);
  const size_t dims = axes.size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = 0;
    bool inside = true;
    for (size_t d = 0; d < dims && inside; ++d) {
      const double x = data[static_cast<size_t>(i) * dims + d];
      const Axis& a = axes[d];
      if (!(x >= a.edges.front() && x <= a.edges.back())) {
        inside = false;
        break;
      }
      at = at * a.bins + bin_of(x, a, local_search, dt);
    }
    if (!inside) continue;
    const double w = weight ? (*weight)[static_cast<size_t>(i)] : 1.0;
    double& h = hist[static_cast<size_t>(at)];
    h = round_to_dtype(h + w, dt);
  }
  return hist;
}

void apply_density(std::vector<double>& hist, const std::vector<Axis>& axes, DType dt) {
  double sum = 0;
  for (double h : hist) sum += h;
  sum = round_to_dtype(sum, dt);
  for (double& h : hist) h = round_to_dtype(h / sum, dt);
  // Divide by each axis' bin width, hist being row-major over the axes.
  int64_t inner = static_cast<int64_t>(hist.size());
  for (const Axis& a : axes) {
    inner /= a.bins;
    for (size_t i = 0; i < hist.size(); ++i) {
      const int64_t b = (static_cast<int64_t>(i) / inner) % a.bins;
      const double width = round_to_dtype(a.edges[static_cast<size_t>(b + 1)] - a.edges[static_cast<size_t>(b)], dt);
      hist[i] = round_to_dtype(hist[i] / width, dt);
    }
  }
}

// histogram / histogramdd: the outer edges of each of the `dims` coordinates.
Result<std::vector<Axis>> histogramdd_axes(const std::vector<double>& data, int64_t n, std::span<const int64_t> bins,
                                           const double* range, DType dt) {
  const size_t dims = bins.size();
  std::vector<Axis> axes(dims);
  for (size_t d = 0; d < dims; ++d) {
    KILN_RETURN_IF_ERROR(bins_in_range(bins[d], " for dimension " + std::to_string(d)));
    double lo = 0, hi = 1;
    if (range != nullptr) {
      lo = range[2 * d];
      hi = range[2 * d + 1];
    } else if (n > 0) {
      lo = hi = data[d];
      for (int64_t i = 0; i < n; ++i) {
        const double x = data[static_cast<size_t>(i) * dims + d];
        if (std::isnan(x) || std::isnan(lo)) {
          lo = hi = x + lo;  // NaN
          continue;
        }
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
    if (!std::isfinite(lo) || !std::isfinite(hi))
      return aoti::invalid("dimension " + std::to_string(d) + "'s range [" + num(lo) + ", " + num(hi) +
                           "] is not finite");
    if (lo > hi)
      return aoti::invalid("argument 'range' has min " + num(lo) + " above max " + num(hi) + " for dimension " +
                           std::to_string(d));
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
    axes[d].bins = bins[d];
    axes[d].edges = linspace_in(lo, hi, bins[d] + 1, dt);
  }
  return axes;
}

Result<const double*> range_arg(const double** range, int64_t range_len, int64_t expected) {
  if (range == nullptr || *range == nullptr) return static_cast<const double*>(nullptr);
  if (range_len != expected)
    return aoti::invalid("argument 'range' has " + std::to_string(range_len) + " elements, expected " +
                         std::to_string(expected));
  return *range;
}

Result<std::vector<double>> weight_arg(AtenTensorHandle* weight_h, const Tensor& self,
                                       std::span<const int64_t> expected_shape) {
  KILN_ASSIGN_OR_RETURN(Tensor * weight, optional_cpu_tensor_arg(weight_h, "weight"));
  if (weight == nullptr) return std::vector<double>{};
  KILN_RETURN_IF_ERROR(same_dtype(*weight, self.dtype(), "weight"));
  KILN_RETURN_IF_ERROR(expect_shape(*weight, expected_shape, "weight"));
  return read_elements<double>(*weight);
}

bool weight_arg_absent(const AtenTensorHandle* weight) { return weight == nullptr || *weight == nullptr; }

Result<Tensor> tensor_of(const std::vector<double>& values, std::span<const int64_t> sizes, DType dt) {
  KILN_ASSIGN_OR_RETURN(Tensor t, new_cpu_tensor(sizes, dt));
  write_elements(values.data(), t);
  return t;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_histc(AtenTensorHandle self_h, int64_t bins, double min, double max,
                                                     AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_histc", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_RETURN_IF_ERROR(aoti::hist::histc_args(self->dtype(), bins, min, max));
    const std::vector<double> data = read_elements<double>(*self);
    double lo = min, hi = max;
    if (lo == hi && !data.empty()) {
      lo = hi = data[0];
      for (double x : data) {
        if (std::isnan(x) || std::isnan(lo)) {
          lo = hi = std::nan("");
          break;
        }
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
    if (lo == hi) {
      lo -= 1;
      hi += 1;
    }
    if (!std::isfinite(lo) || !std::isfinite(hi)) return aoti::hist::range_not_finite(lo, hi);
    const DType dt = self->dtype();
    const std::vector<Axis> axes{Axis{bins, linspace_in(lo, hi, bins + 1, dt)}};
    const std::vector<double> hist = count(data, self->numel(), axes, nullptr, false, dt);
    KILN_ASSIGN_OR_RETURN(Tensor out, tensor_of(hist, std::vector<int64_t>{bins}, dt));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_histogram_bin_ct(AtenTensorHandle self_h, int64_t bins,
                                                                const double** range, int64_t range_len_,
                                                                AtenTensorHandle* weight, int32_t density,
                                                                AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cpu_histogram_bin_ct", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    const DType dt = self->dtype();
    if (dt != DType::Float32 && dt != DType::Float64)
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(dt) +
                           ", which histogram does not support (float32 and float64 only)");
    KILN_ASSIGN_OR_RETURN(const double* r, range_arg(range, range_len_, 2));
    KILN_ASSIGN_OR_RETURN(std::vector<double> w, weight_arg(weight, *self, self->sizes()));
    const std::vector<double> data = read_elements<double>(*self);
    const int64_t bin_list[1] = {bins};
    KILN_ASSIGN_OR_RETURN(std::vector<Axis> axes, histogramdd_axes(data, self->numel(), bin_list, r, dt));
    std::vector<double> hist = count(data, self->numel(), axes, weight_arg_absent(weight) ? nullptr : &w, true, dt);
    if (density != 0) apply_density(hist, axes, dt);
    KILN_ASSIGN_OR_RETURN(Tensor h, tensor_of(hist, std::vector<int64_t>{bins}, dt));
    KILN_ASSIGN_OR_RETURN(Tensor e, tensor_of(axes[0].edges, std::vector<int64_t>{bins + 1}, dt));
    KILN_RETURN_IF_ERROR(return_tensor(std::move(h), ret0, "ret0"));
    return return_tensor(std::move(e), ret1, "ret1");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__histogramdd_from_bin_cts(AtenTensorHandle self_h, const int64_t* bins,
                                                                         int64_t bins_len_, const double** range,
                                                                         int64_t range_len_, AtenTensorHandle* weight,
                                                                         int32_t density, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__histogramdd_from_bin_cts", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    const DType dt = self->dtype();
    if (dt != DType::Float32 && dt != DType::Float64)
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(dt) +
                           ", which histogramdd does not support (float32 and float64 only)");
    if (self->dim() < 2)
      return aoti::invalid("argument 'self' has " + std::to_string(self->dim()) +
                           " dimensions; histogramdd needs at least 2 (points by coordinates)");
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> bin_list, aoti::int_array_arg(bins, bins_len_, "bins"));
    const int64_t dims = self->size(self->dim() - 1);
    if (bins_len_ != dims)
      return aoti::invalid("argument 'bins' has " + std::to_string(bins_len_) + " entries, expected " +
                           std::to_string(dims) + " (the size of self's last dimension)");
    int64_t total = 1;
    for (int64_t b : bin_list) {
      KILN_RETURN_IF_ERROR(bins_in_range(b, ""));
      if (__builtin_mul_overflow(total, b, &total))
        return aoti::invalid("argument 'bins' asks for more bins than memory can hold");
    }
    KILN_ASSIGN_OR_RETURN(const double* r, range_arg(range, range_len_, 2 * dims));
    const std::vector<int64_t> point_shape(self->sizes().begin(), self->sizes().end() - 1);
    KILN_ASSIGN_OR_RETURN(std::vector<double> w, weight_arg(weight, *self, point_shape));
    const std::vector<double> data = read_elements<double>(*self);
    const int64_t n = dims == 0 ? 0 : self->numel() / dims;
    KILN_ASSIGN_OR_RETURN(std::vector<Axis> axes, histogramdd_axes(data, n, bin_list, r, dt));
    std::vector<double> hist = count(data, n, axes, weight_arg_absent(weight) ? nullptr : &w, true, dt);
    if (density != 0) apply_density(hist, axes, dt);
    KILN_ASSIGN_OR_RETURN(Tensor h, tensor_of(hist, bin_list, dt));
    return return_tensor(std::move(h), ret0, "ret0");
  });
}

}  // extern "C"
