#include "devices/cuda/kernels/dist_kernel.h"

#include <cmath>
#include <string>

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

enum class Norm { Zero, One, Two, Inf, General };

Norm norm_of(double p) {
  if (p == 0) return Norm::Zero;
  if (p == 1) return Norm::One;
  if (p == 2) return Norm::Two;
  if (std::isinf(p)) return Norm::Inf;
  return Norm::General;
}

// The p-norm of the difference of two rows of `cols` elements, the first at
// a (elements sa apart), the second at b (sb apart), summed in T.
template <typename T>
__device__ T row_distance(const T* a, int64_t sa, const T* b, int64_t sb, int64_t cols, Norm norm, T p) {
  T acc = 0;
  switch (norm) {
    case Norm::Zero:
      for (int64_t k = 0; k < cols; ++k) acc += a[k * sa] != b[k * sb] ? T(1) : T(0);
      return acc;
    case Norm::One:
      for (int64_t k = 0; k < cols; ++k) acc += fabs(a[k * sa] - b[k * sb]);
      return acc;
    case Norm::Two:
      for (int64_t k = 0; k < cols; ++k) {
        const T d = a[k * sa] - b[k * sb];
        acc += d * d;
      }
      return sqrt(acc);
    case Norm::Inf:
      // fmax drops a NaN difference where ATen's max keeps it; compare so a NaN wins.
      for (int64_t k = 0; k < cols; ++k) {
        const T d = fabs(a[k * sa] - b[k * sb]);
        if (!(d <= acc)) acc = d;
      }
      return acc;
    default:
      for (int64_t k = 0; k < cols; ++k) acc += pow(fabs(a[k * sa] - b[k * sb]), p);
      return pow(acc, T(1) / p);
  }
}

// ATen's _euclidean_dist: sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)).
template <typename T>
__device__ T row_distance_by_product(const T* a, int64_t sa, const T* b, int64_t sb, int64_t cols) {
  T dot = 0, na = 0, nb = 0;
  for (int64_t k = 0; k < cols; ++k) {
    const T x = a[k * sa], y = b[k * sb];
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  const T d = T(-2) * dot + na + nb;
  return sqrt(d > T(0) ? d : T(0));
}

template <typename T>
__global__ void cdist_kernel(CdistArgs a, Norm norm) {
  const T* x1 = static_cast<const T*>(a.x1);
  const T* x2 = static_cast<const T*>(a.x2);
  T* out = static_cast<T*>(a.out);
  const int64_t total = a.batches * a.rows1 * a.rows2;
  const int64_t s1 = a.x1_index.strides[a.x1_index.ndim - 1];
  const int64_t s2 = a.x2_index.strides[a.x2_index.ndim - 1];
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = t % a.rows2;
    const int64_t bi = t / a.rows2;  // batch * rows1 + i
    const int64_t b = bi / a.rows1;
    // Row starts: column 0 of the row in the broadcast views (none without
    // columns: the indexer would divide by the empty dimension).
    const int64_t r1 = a.cols == 0 ? 0 : a.x1_index.offset(bi * a.cols);
    const int64_t r2 = a.cols == 0 ? 0 : a.x2_index.offset((b * a.rows2 + j) * a.cols);
    out[t] = a.by_product ? row_distance_by_product(x1 + r1, s1, x2 + r2, s2, a.cols)
                          : row_distance(x1 + r1, s1, x2 + r2, s2, a.cols, norm, static_cast<T>(a.p));
  }
}

// Row i's pairs (i, j > i) start at k = i n - i (i + 1) / 2.
__device__ int64_t pair_start(int64_t i, int64_t n) { return i * n - i * (i + 1) / 2; }

template <typename T>
__global__ void pdist_kernel(PdistArgs a, Norm norm) {
  const T* x = static_cast<const T*>(a.x);
  T* out = static_cast<T*>(a.out);
  const int64_t n = a.n;
  const int64_t total = n * (n - 1) / 2;
  const int64_t sr = a.x_index.strides[0], sc = a.x_index.strides[1];
  const double nh = static_cast<double>(n) - 0.5;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // The row whose pairs hold k, from the inverse of pair_start, then
    // corrected where rounding put it one off.
    int64_t i = static_cast<int64_t>(floor(nh - sqrt(nh * nh - 2.0 * static_cast<double>(k))));
    if (i < 0) i = 0;
    if (i > n - 2) i = n - 2;
    while (i > 0 && pair_start(i, n) > k) --i;
    while (i < n - 2 && pair_start(i + 1, n) <= k) ++i;
    const int64_t j = i + 1 + (k - pair_start(i, n));
    out[k] = row_distance(x + i * sr, sc, x + j * sr, sc, a.cols, norm, static_cast<T>(a.p));
  }
}

unsigned blocks_for(int64_t total) {
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

}  // namespace

Error launch_cdist(const CdistArgs& a, cudaStream_t stream) {
  const int64_t total = a.batches * a.rows1 * a.rows2;
  if (total == 0) return Error::Ok;
  const Norm norm = norm_of(a.p);
  if (a.dtype == DType::Float32)
    cdist_kernel<float><<<blocks_for(total), kThreads, 0, stream>>>(a, norm);
  else if (a.dtype == DType::Float64)
    cdist_kernel<double><<<blocks_for(total), kThreads, 0, stream>>>(a, norm);
  else
    return set_error(Error::NotSupported, std::string("cdist of dtype ") + dtype_name(a.dtype) +
                                              " is not supported on CUDA");
  return cuda_status(cudaGetLastError(), "launching the cdist kernel");
}

Error launch_pdist(const PdistArgs& a, cudaStream_t stream) {
  const int64_t total = a.n < 2 ? 0 : a.n * (a.n - 1) / 2;
  if (total == 0) return Error::Ok;
  const Norm norm = norm_of(a.p);
  if (a.dtype == DType::Float32)
    pdist_kernel<float><<<blocks_for(total), kThreads, 0, stream>>>(a, norm);
  else if (a.dtype == DType::Float64)
    pdist_kernel<double><<<blocks_for(total), kThreads, 0, stream>>>(a, norm);
  else
    return set_error(Error::NotSupported, std::string("pdist of dtype ") + dtype_name(a.dtype) +
                                              " is not supported on CUDA");
  return cuda_status(cudaGetLastError(), "launching the pdist kernel");
}

}  // namespace kiln::cudadev
