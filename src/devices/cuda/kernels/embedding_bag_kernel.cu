#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/embedding_bag_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

__device__ inline int64_t load_index(const void* p, DType dtype, int64_t i) {
  return dtype == DType::Int32 ? static_cast<int64_t>(static_cast<const int32_t*>(p)[i])
                               : static_cast<const int64_t*>(p)[i];
}

__device__ inline void store_aux(void* p, DType dtype, int64_t i, int64_t v) {
  if (dtype == DType::Int32) static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
  else static_cast<int64_t*>(p)[i] = v;
}

__device__ inline int64_t offset_at(const EmbeddingBagArgs& a, int64_t k) {
  return load_index(a.offsets, a.offsets_dtype, k * a.offsets_stride);
}

// Bag b's indices as ATen's CUDA kernel takes them: from offsets[b] (0 for
// the first bag, whatever offsets[0] says) to offsets[b + 1], the last bag to
// the end of indices. Clamped to indices, which valid offsets never need.
__device__ inline void bag_range(const EmbeddingBagArgs& a, int64_t bag, int64_t& begin, int64_t& end) {
  begin = bag == 0 ? 0 : offset_at(a, bag);
  end = bag + 1 < a.bags ? offset_at(a, bag + 1) : a.count;
  begin = begin < 0 ? 0 : (begin > a.count ? a.count : begin);
  end = end < begin ? begin : (end > a.count ? a.count : end);
}

// One thread per offset: checks it and, for a bag's own offset, writes the
// bag's offset2bag entries and its size (indices other than padding_idx).
__global__ void bag_layout_kernel(EmbeddingBagArgs a) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < a.num_offsets; k += step) {
    const int64_t o = offset_at(a, k);
    const bool bad = k == 0 ? o != 0 : (o < offset_at(a, k - 1) || o > a.count);
    if (bad) atomicMin(&a.first_bad[0], static_cast<unsigned long long>(k));
    if (k >= a.bags) {
      store_aux(a.bag_size, a.aux_dtype, k, 0);  // include_last_offset's extra entry (ATen leaves it unset)
      continue;
    }
    int64_t begin = 0, end = 0, size = 0;
    bag_range(a, k, begin, end);
    for (int64_t e = begin; e < end; ++e) {
      const int64_t row = load_index(a.indices, a.indices_dtype, e * a.indices_stride);
      if (row < 0 || row >= a.rows) atomicMin(&a.first_bad[1], static_cast<unsigned long long>(e));
      size += row != a.padding_idx;
      store_aux(a.offset2bag, a.aux_dtype, e, k);
    }
    store_aux(a.bag_size, a.aux_dtype, k, size);
  }
}

template <typename W>
struct Element;
template <>
struct Element<float> {
  using Acc = float;
  __device__ static float widen(float v) { return v; }
  __device__ static float narrow(float v) { return v; }
};
template <>
struct Element<double> {
  using Acc = double;
  __device__ static double widen(double v) { return v; }
  __device__ static double narrow(double v) { return v; }
};
template <>
struct Element<__half> {
  using Acc = float;
  __device__ static float widen(__half v) { return __half2float(v); }
  __device__ static __half narrow(float v) { return __float2half_rn(v); }
};
template <>
struct Element<__nv_bfloat16> {
  using Acc = float;
  __device__ static float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 narrow(float v) { return __float2bfloat16_rn(v); }
};

// One thread per (bag, feature), feature fastest, walking the bag in order
// as ATen's thread does, so sums round identically: acc += w (or, with
// per_sample_weights, one fused multiply-add acc = s * w + acc, which is what
// nvcc makes of ATen's `acc += s * w`); a padding index adds 0 (s * 0 with
// per_sample_weights) and is not counted; mean divides the sum by the count
// when it is not 0. Max keeps the first non-padding value and then any
// strictly greater one (a NaN only if it comes first), 0 and row -1 for a
// bag with none.
template <typename W>
__global__ void bag_output_kernel(EmbeddingBagArgs a) {
  using E = Element<W>;
  using Acc = typename E::Acc;
  const auto* weight = static_cast<const W*>(a.weight);
  const auto* psw = static_cast<const W*>(a.per_sample_weights);
  auto* out = static_cast<W*>(a.output);
  const int64_t total = a.bags * a.features;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += step) {
    const int64_t bag = k / a.features, feature = k % a.features;
    const W* column = weight + feature * a.weight_stride1;
    int64_t begin = 0, end = 0;
    bag_range(a, bag, begin, end);
    if (a.mode == BagMode::Max) {
      Acc best = 0;
      int64_t best_row = -1, seen = 0;
      for (int64_t e = begin; e < end; ++e) {
        const int64_t row = load_index(a.indices, a.indices_dtype, e * a.indices_stride);
        if (row == a.padding_idx || row < 0 || row >= a.rows) continue;
        const Acc v = E::widen(column[row * a.weight_stride0]);
        if (seen == 0 || v > best) {
          best = v;
          best_row = row;
        }
        ++seen;
      }
      out[k] = E::narrow(best);
      store_aux(a.max_indices, a.aux_dtype, k, best_row);
      continue;
    }
    Acc sum = 0;
    int64_t counted = 0;
    for (int64_t e = begin; e < end; ++e) {
      const int64_t row = load_index(a.indices, a.indices_dtype, e * a.indices_stride);
      const bool pad = row == a.padding_idx;
      if (!pad && (row < 0 || row >= a.rows)) continue;
      const Acc v = pad ? Acc(0) : E::widen(column[row * a.weight_stride0]);
      if (psw != nullptr) sum = fma(E::widen(psw[e * a.per_sample_weights_stride]), v, sum);
      else sum += v;
      counted += !pad;
    }
    if (a.mode == BagMode::Mean && counted != 0) sum = sum / static_cast<Acc>(counted);
    out[k] = E::narrow(sum);
  }
}

}  // namespace

Error launch_embedding_bag(const EmbeddingBagArgs& a, cudaStream_t stream) {
  KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(a.first_bad, 0xFF, 2 * sizeof(unsigned long long), stream));
  if (a.num_offsets > 0) {
    bag_layout_kernel<<<grid_for(a.num_offsets), kThreads, 0, stream>>>(a);
    KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the embedding_bag layout kernel"));
  }
  const int64_t total = a.bags * a.features;
  if (total == 0) return Error::Ok;
  const unsigned grid = grid_for(total);
  switch (a.weight_dtype) {
    case DType::Float32: bag_output_kernel<float><<<grid, kThreads, 0, stream>>>(a); break;
    case DType::Float64: bag_output_kernel<double><<<grid, kThreads, 0, stream>>>(a); break;
    case DType::Float16: bag_output_kernel<__half><<<grid, kThreads, 0, stream>>>(a); break;
    case DType::BFloat16: bag_output_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(a); break;
    default:
      return set_error(Error::InvalidArgument,
                       std::string("embedding_bag of dtype ") + dtype_name(a.weight_dtype) + " is not supported on CUDA");
  }
  return cuda_status(cudaGetLastError(), "launching the embedding_bag kernel");
}

}  // namespace kiln::cudadev
