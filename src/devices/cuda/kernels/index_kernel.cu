#include "devices/cuda/kernels/index_kernel.h"

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {

namespace {

constexpr int kThreads = 256;

struct IndexSizes {
  int64_t sizes[StridedIndexer::kMaxDims];
};

__device__ int64_t index_value(const IndexOperand& ix, int64_t offset) {
  return ix.dtype == DType::Int32 ? static_cast<const int32_t*>(ix.data)[offset]
                                  : static_cast<const int64_t*>(ix.data)[offset];
}

__global__ void index_check_kernel(IndexGather g, IndexSizes shape, int64_t numel, unsigned long long* first_bad) {
  for (int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; p < numel;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    for (int k = 0; k < g.nindex; ++k) {
      const IndexOperand& ix = g.index[k];
      int64_t rest = p, off = 0;
      for (int d = g.nb - 1; d >= 0; --d) {
        off += (rest % shape.sizes[d]) * ix.strides[d];
        rest /= shape.sizes[d];
      }
      const int64_t v = index_value(ix, off);
      if (v < -ix.dim_size || v >= ix.dim_size) atomicMin(&first_bad[k], static_cast<unsigned long long>(p));
    }
  }
}

__global__ void index_gather_kernel(IndexGather g, int64_t numel) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < numel;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // Row-major coordinates of k over the result: post dims last, then the index shape, then pre dims.
    int64_t rest = k, out_off = 0, src = 0;
    int64_t bcoord[StridedIndexer::kMaxDims];
    const int n = g.result.ndim;
    for (int d = n - 1; d >= 0; --d) {
      const int64_t c = rest % g.result.sizes[d];
      rest /= g.result.sizes[d];
      out_off += c * g.result.strides[d];
      if (d >= g.npre + g.nb) src += c * g.post_strides[d - g.npre - g.nb];
      else if (d >= g.npre) bcoord[d - g.npre] = c;
      else src += c * g.pre_strides[d];
    }
    for (int j = 0; j < g.nindex; ++j) {
      const IndexOperand& ix = g.index[j];
      int64_t off = 0;
      for (int d = 0; d < g.nb; ++d) off += bcoord[d] * ix.strides[d];
      int64_t v = index_value(ix, off);
      if (v < 0) v += ix.dim_size;
      v = v < 0 ? 0 : (v >= ix.dim_size ? ix.dim_size - 1 : v);
      src += v * ix.self_stride;
    }
    const char* from = g.self + src * g.element_bytes;
    char* to = g.out + out_off * g.element_bytes;
    for (int64_t b = 0; b < g.element_bytes; ++b) to[b] = from[b];
  }
}

unsigned grid(int64_t numel) {
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

}  // namespace

Error launch_index_check(const IndexGather& g, const int64_t* index_sizes, int64_t index_numel,
                         unsigned long long* first_bad, cudaStream_t stream) {
  if (index_numel == 0 || g.nindex == 0) return Error::Ok;
  IndexSizes shape{};
  for (int d = 0; d < g.nb; ++d) shape.sizes[d] = index_sizes[d];
  index_check_kernel<<<grid(index_numel), kThreads, 0, stream>>>(g, shape, index_numel, first_bad);
  return cuda_status(cudaGetLastError(), "launching the index check kernel");
}

Error launch_index_gather(const IndexGather& g, int64_t numel, cudaStream_t stream) {
  if (numel == 0) return Error::Ok;
  index_gather_kernel<<<grid(numel), kThreads, 0, stream>>>(g, numel);
  return cuda_status(cudaGetLastError(), "launching the index gather kernel");
}

}  // namespace kiln::cudadev
