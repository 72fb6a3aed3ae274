#include <cub/block/block_scan.cuh>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/scan_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

struct Multiply {
  template <typename T>
  __device__ T operator()(const T& a, const T& b) const {
    return a * b;
  }
};
struct Add {
  template <typename T>
  __device__ T operator()(const T& a, const T& b) const {
    return a + b;
  }
};

template <typename T>
__device__ T load_as(const void* p, DType dtype, int64_t i);
template <>
__device__ double load_as<double>(const void* p, DType dtype, int64_t i) { return load_double(p, dtype, i); }
template <>
__device__ int64_t load_as<int64_t>(const void* p, DType dtype, int64_t i) { return load_int(p, dtype, i); }

__device__ void store_as(void* p, DType dtype, int64_t i, double v) { store_double(p, dtype, i, v); }
__device__ void store_as(void* p, DType dtype, int64_t i, int64_t v) { store_int(p, dtype, i, v); }

template <typename T, typename Op>
__global__ void scan_kernel(const void* in, DType in_dtype, StridedIndexer in_index, void* out, DType out_dtype,
                            int64_t size, int64_t inner, T identity) {
  using BlockScan = cub::BlockScan<T, kThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  __shared__ T carry;
  const int64_t line = blockIdx.x;
  const int64_t base = (line / inner) * size * inner + line % inner;
  if (threadIdx.x == 0) carry = identity;
  __syncthreads();
  for (int64_t tile = 0; tile < size; tile += kThreads) {
    const int64_t i = tile + threadIdx.x;
    const int64_t k = base + i * inner;
    T v = i < size ? load_as<T>(in, in_dtype, in_index.offset(k)) : identity;
    T total;
    BlockScan(temp).InclusiveScan(v, v, Op(), total);
    const T prefix = carry;
    v = Op()(prefix, v);
    if (i < size) store_as(out, out_dtype, k, v);
    __syncthreads();
    if (threadIdx.x == 0) carry = Op()(prefix, total);
    __syncthreads();
  }
}

template <typename T>
Error launch_typed(const void* in, DType in_dtype, const StridedIndexer& idx, void* out, DType out_dtype,
                   int64_t lines, int64_t size, int64_t inner, ScanOp op, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(lines));
  if (op == ScanOp::Sum)
    scan_kernel<T, Add><<<grid, kThreads, 0, stream>>>(in, in_dtype, idx, out, out_dtype, size, inner, T(0));
  else
    scan_kernel<T, Multiply><<<grid, kThreads, 0, stream>>>(in, in_dtype, idx, out, out_dtype, size, inner, T(1));
  return cuda_status(cudaGetLastError(), "launching the scan kernel");
}

}  // namespace

Error launch_scan(const void* in, DType in_dtype, const StridedIndexer& in_index, void* out, DType out_dtype,
                  int64_t outer, int64_t size, int64_t inner, ScanOp op, cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines == 0 || size == 0) return Error::Ok;
  if (lines > 2147483647)
    return set_error(Error::InvalidArgument, "scan over " + std::to_string(lines) + " lines exceeds the grid limit");
  if (is_integral_dtype(out_dtype))
    return launch_typed<int64_t>(in, in_dtype, in_index, out, out_dtype, lines, size, inner, op, stream);
  if (is_floating_dtype(out_dtype))
    return launch_typed<double>(in, in_dtype, in_index, out, out_dtype, lines, size, inner, op, stream);
  return set_error(Error::NotSupported, std::string("scan of dtype ") + dtype_name(out_dtype) +
                                            " is not supported on CUDA yet (complex scans run on the CPU)");
}

}  // namespace kiln::cudadev
