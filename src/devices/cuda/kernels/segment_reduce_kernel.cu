#include "devices/cuda/kernels/segment_reduce_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cub/block/block_scan.cuh>
#include <cstdint>
#include <string>
#include <type_traits>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_convert.cuh"

namespace kiln::cudadev {
namespace {

constexpr int kScanThreads = 256;
constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int64_t kMaxBlocks = 65535;

unsigned blocks_for(int64_t n, int per_block) {
  const int64_t b = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

// One block per row (grid-stride over rows). Lengths go through a block-wide
// inclusive scan, 256 at a time, with the running total carried between
// chunks; a negative length counts as 0 and one past the axis as width + 1
// (both already wrong), and the carry is capped at width + 1, so nothing
// overflows and every bound written is clamped into [0, width].
__global__ void segment_starts_kernel(const void* seg, SegmentGeometry g, bool unsafe, int64_t* starts, int* bad) {
  using Scan = cub::BlockScan<int64_t, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  const int64_t segs = g.segments, width = g.width;
  const int64_t along = g.by_lengths ? segs : segs + 1;
  for (int64_t o = blockIdx.x; o < g.outer; o += gridDim.x) {
    int64_t* st = starts + o * (segs + 1);
    bool wrong = false;
    if (g.by_lengths) {
      if (threadIdx.x == 0) st[0] = 0;
      int64_t carry = 0;
      for (int64_t base = 0; base < segs; base += kScanThreads) {
        const int64_t s = base + threadIdx.x;
        int64_t len = 0;
        if (s < segs) {
          len = load_int(seg, g.seg_dtype, g.seg.offset(o * along + s));
          if (len < 0) {
            wrong = true;
            len = 0;
          } else if (len > width) {
            wrong = true;
            len = width + 1;
          }
        }
        int64_t prefix = 0, chunk = 0;
        Scan(temp).InclusiveSum(len, prefix, chunk);
        __syncthreads();  // temp is reused by the next chunk's scan
        if (s < segs) {
          const int64_t end = carry + prefix;
          if (end > width) wrong = true;
          st[s + 1] = end > width ? width : end;
        }
        carry += chunk;
        if (carry > width) carry = width + 1;
      }
      if (threadIdx.x == 0 && !unsafe && carry != width) wrong = true;
    } else {
      for (int64_t s = threadIdx.x; s <= segs; s += blockDim.x) {
        const int64_t v = load_int(seg, g.seg_dtype, g.seg.offset(o * along + s));
        if (v < 0 || v > width) wrong = true;
        if (s > 0 && v < load_int(seg, g.seg_dtype, g.seg.offset(o * along + s - 1))) wrong = true;
        if (!unsafe && ((s == 0 && v != 0) || (s == segs && v != width))) wrong = true;
        st[s] = v < 0 ? 0 : (v > width ? width : v);
      }
    }
    if (wrong && bad != nullptr) *bad = 1;
  }
}

// acc combined with v as ATen's kernel does it in the element type: sums and
// products rounded to T at every step; max/min take a NaN v and keep a NaN
// acc (std::max/std::min with acc first).
template <typename T>
__device__ inline T combine(SegmentReduce op, T acc, T v) {
  using A = compute_t<T>;
  const A a = widen(acc), x = widen(v);
  switch (op) {
    case SegmentReduce::Sum:
    case SegmentReduce::Mean: return narrow<T>(a + x);
    case SegmentReduce::Prod: return narrow<T>(a * x);
    case SegmentReduce::Max: return x != x ? v : (a < x ? v : acc);
    case SegmentReduce::Min: return x != x ? v : (x < a ? v : acc);
  }
  return acc;
}

// acc / len in T: float16/bfloat16 divide by the length rounded to T (ATen's
// Half / int64_t), float32 and float64 by the length converted to them.
template <typename T>
__device__ inline T mean_of(T acc, int64_t len) {
  if constexpr (std::is_same_v<T, double>) {
    return acc / static_cast<double>(len);
  } else if constexpr (std::is_same_v<T, float>) {
    return acc / static_cast<float>(len);
  } else {
    return narrow<T>(widen(acc) / widen(narrow<T>(static_cast<float>(len))));
  }
}

template <typename T>
__device__ inline T start_value(SegmentReduce op, bool has_initial, double initial) {
  using A = compute_t<T>;
  if (has_initial) return narrow<T>(static_cast<A>(initial));
  switch (op) {
    case SegmentReduce::Prod: return narrow<T>(A(1));
    case SegmentReduce::Max: return narrow<T>(static_cast<A>(-INFINITY));
    case SegmentReduce::Min: return narrow<T>(static_cast<A>(INFINITY));
    default: return narrow<T>(A(0));
  }
}

// A segment's reduction `acc` over `len` elements finished: mean divides a
// non-NaN sum by the length, and is NaN for an empty segment without an
// initial value.
template <typename T>
__device__ inline T finish(SegmentReduce op, T acc, int64_t len, bool has_initial) {
  using A = compute_t<T>;
  if (op != SegmentReduce::Mean) return acc;
  if (len == 0 && !has_initial) return narrow<T>(static_cast<A>(NAN));
  if (len > 0 && !(widen(acc) != widen(acc))) return mean_of(acc, len);
  return acc;
}

// One thread per result element k = (o * segments + s) * inner + j (the
// contiguous result's layout), walking its segment along the axis.
template <typename T>
__global__ void segment_reduce_kernel(const T* data, SegmentGeometry g, const int64_t* starts, SegmentReduce op,
                                      bool has_initial, double initial, T* out, int64_t total) {
  const T init = start_value<T>(op, has_initial, initial);
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = k % g.inner, row = k / g.inner;
    const int64_t s = row % g.segments, o = row / g.segments;
    const int64_t* st = starts + o * (g.segments + 1) + s;
    const int64_t lo = st[0], hi = st[1];
    T acc = init;
    if (hi > lo) {
      const T* p = data + g.data.offset((o * g.width + lo) * g.inner + j);
      for (int64_t i = lo; i < hi; ++i, p += g.axis_stride) acc = combine(op, acc, *p);
    }
    out[k] = finish(op, acc, hi > lo ? hi - lo : 0, has_initial);
  }
}

// inner == 1 with long segments (a 1-d data tensor, as ATen's CUB path): a
// warp per segment, each lane folding every 32nd element from the
// reduction's identity, the lanes' partials combined by shuffles (in the
// compute type, which holds T exactly) and the initial value joined last.
// The order differs from the sequential kernel's, as ATen's CUB reduction
// differs from its multi-dim kernel; NaN still wins max/min.
template <typename T>
__global__ void segment_reduce_warp_kernel(const T* data, SegmentGeometry g, const int64_t* starts,
                                           SegmentReduce op, bool has_initial, double initial, T* out,
                                           int64_t total) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warp = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kWarp;
  const T init = start_value<T>(op, has_initial, initial);
  const T identity = start_value<T>(op, false, 0.0);
  // The loop bound is uniform within a warp, so every lane reaches every shuffle.
  for (int64_t k = warp; k < total; k += warps) {
    const int64_t s = k % g.segments, o = k / g.segments;
    const int64_t* st = starts + o * (g.segments + 1) + s;
    const int64_t lo = st[0], hi = st[1];
    if (hi <= lo) {
      if (lane == 0) out[k] = finish(op, init, 0, has_initial);
      continue;
    }
    const T* p = data + g.data.offset(o * g.width + lo);
    T part = identity;
    for (int64_t i = lo + lane; i < hi; i += kWarp) part = combine(op, part, p[(i - lo) * g.axis_stride]);
    for (int delta = kWarp / 2; delta > 0; delta /= 2) {
      const T other = narrow<T>(__shfl_down_sync(0xffffffffu, widen(part), delta));
      part = combine(op, part, other);
    }
    if (lane == 0) out[k] = finish(op, combine(op, init, part), hi - lo, has_initial);
  }
}

}  // namespace

Error launch_segment_starts(const void* seg, const SegmentGeometry& g, bool unsafe, int64_t* starts, int* bad,
                            cudaStream_t stream) {
  if (g.outer == 0) return Error::Ok;
  segment_starts_kernel<<<blocks_for(g.outer, 1), kScanThreads, 0, stream>>>(seg, g, unsafe, starts, bad);
  return cuda_status(cudaGetLastError(), "launching the segment_reduce bounds kernel");
}

Error launch_segment_reduce(const void* data, DType dtype, const SegmentGeometry& g, const int64_t* starts,
                            SegmentReduce op, bool has_initial, double initial, void* out, cudaStream_t stream) {
  const int64_t total = g.outer * g.segments * g.inner;
  if (total == 0) return Error::Ok;
  // A warp per segment pays when segments average a warp's worth of elements.
  const bool by_warp = g.inner == 1 && g.width >= kWarp * g.segments;
  const auto launch = [&](auto tag) {
    using T = decltype(tag);
    if (by_warp)
      segment_reduce_warp_kernel<T><<<blocks_for(total, kThreads / kWarp), kThreads, 0, stream>>>(
          static_cast<const T*>(data), g, starts, op, has_initial, initial, static_cast<T*>(out), total);
    else
      segment_reduce_kernel<T><<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
          static_cast<const T*>(data), g, starts, op, has_initial, initial, static_cast<T*>(out), total);
  };
  switch (dtype) {
    case DType::Float32: launch(float{}); break;
    case DType::Float64: launch(double{}); break;
    case DType::Float16: launch(__half{}); break;
    case DType::BFloat16: launch(__nv_bfloat16{}); break;
    default:
      return set_error(Error::NotSupported,
                       std::string("segment_reduce: the CUDA kernel does not take dtype ") + dtype_name(dtype));
  }
  return cuda_status(cudaGetLastError(), "launching the segment_reduce kernel");
}

}  // namespace kiln::cudadev
