// aoti_torch_cpu__cdist_forward and aoti_torch_cpu__pdist_forward: p-norm
// distances between rows. p = 0 counts differing coordinates, p = inf takes
// the largest difference. Checks, shapes and the choice of cdist's Euclidean
// path as shims/common/dist_args.h: the matrix-product path runs BLAS in the
// input's precision; otherwise every distance is summed directly in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/parallel_for.h"
#include "shims/common/dist_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// The p-norm of a - b over m coordinates.
double distance(const double* a, const double* b, int64_t m, double p) {
  double acc = 0;
  if (p == 0) {
    for (int64_t i = 0; i < m; ++i) acc += a[i] != b[i] ? 1.0 : 0.0;
    return acc;
  }
  if (std::isinf(p)) {
    for (int64_t i = 0; i < m; ++i) acc = std::max(acc, std::abs(a[i] - b[i]));
    return acc;
  }
  if (p == 1) {
    for (int64_t i = 0; i < m; ++i) acc += std::abs(a[i] - b[i]);
    return acc;
  }
  if (p == 2) {
    for (int64_t i = 0; i < m; ++i) acc += (a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(acc);
  }
  for (int64_t i = 0; i < m; ++i) acc += std::pow(std::abs(a[i] - b[i]), p);
  return std::pow(acc, 1.0 / p);
}

// The elements of `t` row-major as T (float32 via float_io, float64 via element_buffer).
template <typename T>
std::vector<T> load(const Tensor& t) {
  if constexpr (std::is_same_v<T, float>)
    return to_floats(t);
  else
    return read_elements<double>(t);
}

// Euclidean distances of `batches` pairs of (rows1, m) and (rows2, m) row
// blocks through one product per batch, in T, written to `result`.
template <typename T>
Error euclidean_by_product(const Tensor& e1, const Tensor& e2, int64_t batches, int64_t rows1, int64_t rows2, int64_t m,
                           const Tensor& result) {
  const std::vector<T> a = load<T>(e1), b = load<T>(e2);
  std::vector<T> c(static_cast<size_t>(batches * rows1 * rows2));
  std::vector<T> n1(static_cast<size_t>(rows1)), n2(static_cast<size_t>(rows2));
  for (int64_t bt = 0; bt < batches; ++bt) {
    const T* pa = a.data() + bt * rows1 * m;
    const T* pb = b.data() + bt * rows2 * m;
    T* pc = c.data() + bt * rows1 * rows2;
    for (int64_t i = 0; i < rows1; ++i) {
      T s = 0;
      for (int64_t q = 0; q < m; ++q) s += pa[i * m + q] * pa[i * m + q];
      n1[i] = s;
    }
    for (int64_t j = 0; j < rows2; ++j) {
      T s = 0;
      for (int64_t q = 0; q < m; ++q) s += pb[j * m + q] * pb[j * m + q];
      n2[j] = s;
    }
    const MatrixView<const T> mb{pb, rows2, m, m, 1};
    KILN_RETURN_IF_ERROR(gemm<T>({pa, rows1, m, m, 1}, mb.transposed(), {pc, rows1, rows2, rows2, 1}, T(-2), T(0)));
    for (int64_t i = 0; i < rows1; ++i)
      for (int64_t j = 0; j < rows2; ++j) {
        T& d = pc[i * rows2 + j];
        d = std::sqrt(std::max(d + n1[i] + n2[j], T(0)));
      }
  }
  if constexpr (std::is_same_v<T, float>)
    store_floats(c.data(), result);
  else
    write_elements(c.data(), result);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__cdist_forward(AtenTensorHandle x1, AtenTensorHandle x2, double p,
                                                              int64_t* compute_mode, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__cdist_forward", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(x1, "x1"));
    KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(x2, "x2"));
    KILN_ASSIGN_OR_RETURN(aoti::CdistPlan plan,
                          aoti::cdist_plan(a->sizes(), a->dtype(), b->sizes(), b->dtype(), p, compute_mode));
    const int64_t m = plan.cols, rows1 = plan.rows1, rows2 = plan.rows2, batches = plan.batches;
    const std::vector<int64_t>& s1 = plan.x1_sizes;
    const std::vector<int64_t>& s2 = plan.x2_sizes;
    const std::vector<int64_t>& so = plan.out_sizes;
    KILN_ASSIGN_OR_RETURN(Tensor e1, broadcast_view(*a, s1, "x1"));
    KILN_ASSIGN_OR_RETURN(Tensor e2, broadcast_view(*b, s2, "x2"));
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(so, a->dtype()));
    if (result.numel() == 0) return return_tensor(std::move(result), ret0, "ret0");
    if (plan.by_product) {
      KILN_RETURN_IF_ERROR(a->dtype() == DType::Float32
                               ? euclidean_by_product<float>(e1, e2, batches, rows1, rows2, m, result)
                               : euclidean_by_product<double>(e1, e2, batches, rows1, rows2, m, result));
      return return_tensor(std::move(result), ret0, "ret0");
    }
    const std::vector<double> v1 = read_elements<double>(e1), v2 = read_elements<double>(e2);
    std::vector<double> out(static_cast<size_t>(result.numel()), 0.0);
    KILN_RETURN_IF_ERROR(parallel_for(batches * rows1, 8, [&](int64_t begin, int64_t end) -> Error {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t bt = r / rows1;
        const double* pa = v1.data() + r * m;
        for (int64_t j = 0; j < rows2; ++j)
          out[static_cast<size_t>(r * rows2 + j)] = distance(pa, v2.data() + (bt * rows2 + j) * m, m, p);
      }
      return Error::Ok;
    }));
    write_elements(out.data(), result);
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__pdist_forward(AtenTensorHandle self, double p, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__pdist_forward", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(const int64_t pairs, aoti::pdist_pairs(a->sizes(), a->dtype(), p));
    const int64_t n = a->size(0), m = a->size(1);
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(std::vector<int64_t>{pairs}, a->dtype()));
    const std::vector<double> v = read_elements<double>(*a);
    std::vector<double> out(static_cast<size_t>(pairs));
    KILN_RETURN_IF_ERROR(parallel_for(n, 8, [&](int64_t begin, int64_t end) -> Error {
      for (int64_t i = begin; i < end; ++i) {
        // Pairs (i, j > i) start after the n-1 + n-2 + ... + n-i earlier ones.
        int64_t k = i * n - i * (i + 1) / 2;
        for (int64_t j = i + 1; j < n; ++j, ++k)
          out[static_cast<size_t>(k)] = distance(v.data() + i * m, v.data() + j * m, m, p);
      }
      return Error::Ok;
    }));
    write_elements(out.data(), result);
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
