#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/search_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

// `x` rounded to floating dtype `dt`, so both sides of a comparison (and the
// histogram edges) hold exactly the values ATen's kernels see in that dtype.
__host__ __device__ double round_to(double x, DType dt) {
  switch (dt) {
    case DType::Float32: return static_cast<double>(static_cast<float>(x));
    case DType::Float16: return static_cast<double>(__half2float(__double2half(x)));
    case DType::BFloat16: return static_cast<double>(__bfloat162float(__double2bfloat16(x)));
    default: return x;
  }
}

template <typename T>
__device__ T load_common(const void* p, DType dtype, int64_t off, DType common);
template <>
__device__ int64_t load_common<int64_t>(const void* p, DType dtype, int64_t off, DType) {
  return load_int(p, dtype, off);
}
template <>
__device__ double load_common<double>(const void* p, DType dtype, int64_t off, DType common) {
  return round_to(load_double(p, dtype, off), common);
}

// The bisection tests "not (boundary >= value)" ("not (boundary > value)" for
// right), which puts NaN boundaries and values where ATen's kernel puts them.
template <typename T>
__global__ void search_kernel(SearchArgs a, T scalar) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T v = a.values != nullptr ? load_common<T>(a.values, a.values_dtype, a.values_index.offset(i), a.common)
                                    : scalar;
    const int64_t first = (i / a.per_line) * a.n;
    int64_t lo = 0, hi = a.n;
    bool bad_sorter = false;
    while (lo < hi) {
      const int64_t mid = lo + ((hi - lo) >> 1);
      int64_t at = mid;
      if (a.sorter != nullptr) {
        at = a.sorter[a.sorter_index.offset(first + mid)];
        if (at < 0 || at >= a.n) {
          bad_sorter = true;
          break;
        }
      }
      const T b = load_common<T>(a.boundaries, a.boundaries_dtype, a.boundaries_index.offset(first + at), a.common);
      const bool go_right = a.right ? !(b > v) : !(b >= v);
      if (go_right) lo = mid + 1;
      else hi = mid;
    }
    store_int(a.out, a.out_dtype, i, bad_sorter ? -1 : lo);
  }
}

unsigned grid_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

// Min and max of the data (NaN if any element is NaN), as the edges: equal
// ones widened by 1 in the input's dtype, non-finite ones stored as NaN so
// that no element is counted. One block: the op is off the hot path.
__global__ void data_range_kernel(const void* in, DType dtype, StridedIndexer idx, int64_t numel, double* range) {
  __shared__ double lo_s[kThreads];
  __shared__ double hi_s[kThreads];
  __shared__ int nan_s;
  if (threadIdx.x == 0) nan_s = 0;
  __syncthreads();
  double lo = INFINITY, hi = -INFINITY;
  bool nan = false;
  for (int64_t i = threadIdx.x; i < numel; i += blockDim.x) {
    const double x = load_double(in, dtype, idx.offset(i));
    if (x != x) nan = true;
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  if (nan) atomicOr(&nan_s, 1);
  lo_s[threadIdx.x] = lo;
  hi_s[threadIdx.x] = hi;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) {
      lo_s[threadIdx.x] = fmin(lo_s[threadIdx.x], lo_s[threadIdx.x + s]);
      hi_s[threadIdx.x] = fmax(hi_s[threadIdx.x], hi_s[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    double l = lo_s[0], h = hi_s[0];
    if (l == h) {
      l = round_to(l - 1, dtype);
      h = round_to(h + 1, dtype);
    }
    const bool usable = nan_s == 0 && isfinite(l) && isfinite(h) && l < h;
    range[0] = usable ? l : NAN;
    range[1] = usable ? h : NAN;
  }
}

template <typename T>
__device__ void add_one(void* out, int64_t bin) {
  atomicAdd(static_cast<T*>(out) + bin, T(1));
}
template <>
__device__ void add_one<__half>(void* out, int64_t bin) {
  atomicAdd(static_cast<__half*>(out) + bin, __float2half(1.0f));
}
template <>
__device__ void add_one<__nv_bfloat16>(void* out, int64_t bin) {
  atomicAdd(static_cast<__nv_bfloat16*>(out) + bin, __float2bfloat16(1.0f));
}

// An element's bin is found in the accumulate type (float32, float64 for
// float64) as ATen's CUDA kernel finds it: (x - lo) * bins / (hi - lo)
// truncated, with x == hi in the last bin; NaNs and elements outside [lo, hi]
// are not counted. Counts accumulate in the output's dtype.
template <typename T, typename Acc>
__global__ void histc_kernel(const void* in, DType dtype, StridedIndexer idx, int64_t numel, void* out,
                             int64_t bins, const double* range, double lo_arg, double hi_arg) {
  const Acc lo = static_cast<Acc>(range != nullptr ? range[0] : lo_arg);
  const Acc hi = static_cast<Acc>(range != nullptr ? range[1] : hi_arg);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Acc x = static_cast<Acc>(load_double(in, dtype, idx.offset(i)));
    if (!(x >= lo && x <= hi)) continue;
    const Acc f = (x - lo) * static_cast<Acc>(bins) / (hi - lo);
    int64_t bin = f >= Acc(0) ? static_cast<int64_t>(f) : 0;
    if (bin >= bins) bin = bins - 1;
    add_one<T>(out, bin);
  }
}

template <typename T, typename Acc>
Error launch_histc_typed(const void* in, DType dtype, const StridedIndexer& idx, int64_t numel, void* out,
                         int64_t bins, bool data_range, double lo, double hi, double* range, cudaStream_t stream) {
  if (data_range) {
    data_range_kernel<<<1, kThreads, 0, stream>>>(in, dtype, idx, numel, range);
    KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the histc range kernel"));
  }
  histc_kernel<T, Acc><<<grid_for(numel), kThreads, 0, stream>>>(in, dtype, idx, numel, out, bins,
                                                                data_range ? range : nullptr, lo, hi);
  return cuda_status(cudaGetLastError(), "launching the histc kernel");
}

}  // namespace

double round_to_floating(double x, DType dtype) { return round_to(x, dtype); }

Error launch_search(const SearchArgs& args, cudaStream_t stream) {
  if (args.count == 0) return Error::Ok;
  if (is_floating_dtype(args.common)) {
    const double scalar = round_to(args.scalar, args.common);
    search_kernel<double><<<grid_for(args.count), kThreads, 0, stream>>>(args, scalar);
  } else {
    search_kernel<int64_t><<<grid_for(args.count), kThreads, 0, stream>>>(args, int64_t{0});
  }
  return cuda_status(cudaGetLastError(), "launching the search kernel");
}

Error launch_histc(const void* in, DType dtype, const StridedIndexer& in_index, int64_t numel, void* out,
                   int64_t bins, bool data_range, double lo, double hi, double* range, cudaStream_t stream) {
  KILN_RETURN_IF_ERROR(
      cuda_status(cudaMemsetAsync(out, 0, static_cast<size_t>(bins) * element_size(dtype), stream),
                  "clearing the histc bins"));
  if (numel == 0) return Error::Ok;
  switch (dtype) {
    case DType::Float32:
      return launch_histc_typed<float, float>(in, dtype, in_index, numel, out, bins, data_range, lo, hi, range, stream);
    case DType::Float64:
      return launch_histc_typed<double, double>(in, dtype, in_index, numel, out, bins, data_range, lo, hi, range,
                                                stream);
    case DType::Float16:
      return launch_histc_typed<__half, float>(in, dtype, in_index, numel, out, bins, data_range, lo, hi, range,
                                               stream);
    case DType::BFloat16:
      return launch_histc_typed<__nv_bfloat16, float>(in, dtype, in_index, numel, out, bins, data_range, lo, hi,
                                                      range, stream);
    default:
      return set_error(Error::NotSupported, std::string("histc of dtype ") + dtype_name(dtype) +
                                                " is not supported on CUDA");
  }
}

}  // namespace kiln::cudadev
