#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_convert.cuh"
#include "devices/cuda/kernels/rnn_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

// The accurate exp and tanh (not the fast intrinsics): ATen's cell kernels
// call ::exp and ::tanh in the accumulation type.
__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ inline double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ inline float tanh_of(float x) { return tanhf(x); }
__device__ inline double tanh_of(double x) { return tanh(x); }

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{1} << 20));
}

template <typename T>
__global__ void rnn_step_kernel(RnnStepParams p) {
  const int64_t H = p.hidden;
  const int64_t n = p.batch * H;
  const int64_t gates = p.cell == RnnCell::Lstm ? 4 : p.cell == RnnCell::Gru ? 3 : 1;
  const T* bias_ih = static_cast<const T*>(p.bias_ih);
  const T* bias_hh = static_cast<const T*>(p.bias_hh);
  T* h = static_cast<T*>(p.h);
  T* out = static_cast<T*>(p.out);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t b = i / H, j = i % H;
    const float* x = p.input_gates + b * p.input_gates_stride + j;
    const float* r = p.hidden_gates + b * gates * H + j;
    // Gate k's pre-activation parts, summed in ATen's order (input, hidden, biases).
    const auto bi = [&](int64_t k) {
      return bias_ih ? widen(bias_ih[(k * H + j) * p.bias_ih_stride]) : 0.0f;
    };
    const auto bh = [&](int64_t k) {
      return bias_hh ? widen(bias_hh[(k * H + j) * p.bias_hh_stride]) : 0.0f;
    };
    const auto pre = [&](int64_t k) { return x[k * H] + r[k * H] + bi(k) + bh(k); };
    float hy = 0.0f;
    switch (p.cell) {
      case RnnCell::Lstm: {
        const float ig = sigmoid(pre(0)), fg = sigmoid(pre(1)), cg = tanh_of(pre(2)), og = sigmoid(pre(3));
        const float c = fg * p.cell_state[i] + ig * cg;
        p.cell_state[i] = c;
        hy = og * tanh_of(c);
        break;
      }
      case RnnCell::Gru: {
        // The reset gate scales the hidden part of n with its bias (PyTorch's
        // and cuDNN's GRU), not the previous h before the product.
        const float rg = sigmoid(pre(0)), zg = sigmoid(pre(1));
        const float ng = tanh_of(x[2 * H] + bi(2) + rg * (r[2 * H] + bh(2)));
        hy = ng + zg * (widen(h[i]) - ng);
        break;
      }
      case RnnCell::RnnTanh:
        hy = tanh_of(pre(0));
        break;
      case RnnCell::RnnRelu: {
        const float v = pre(0);
        hy = v < 0.0f ? 0.0f : v;  // NaN stays NaN, as in ATen's relu
        break;
      }
    }
    const T rounded = narrow<T>(hy);
    h[i] = rounded;
    if (out != nullptr) out[b * p.out_stride + j] = rounded;
  }
}

template <typename T>
__global__ void fused_lstm_cell_kernel(FusedLstmCellParams p) {
  using A = compute_t<T>;
  const int64_t H = p.hidden;
  const int64_t n = p.batch * H;
  const T* ig_in = static_cast<const T*>(p.input_gates);
  const T* hg_in = static_cast<const T*>(p.hidden_gates);
  const T* cx = static_cast<const T*>(p.cx);
  const T* ib = static_cast<const T*>(p.input_bias);
  const T* hb = static_cast<const T*>(p.hidden_bias);
  T* hy = static_cast<T*>(p.hy);
  T* cy = static_cast<T*>(p.cy);
  T* ws = static_cast<T*>(p.workspace);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t b = i / H, j = i % H;
    const auto pre = [&](int64_t k) {
      const int64_t col = k * H + j;
      A v = widen(ig_in[b * p.ig_stride0 + col * p.ig_stride1]) +
            widen(hg_in[b * p.hg_stride0 + col * p.hg_stride1]);
      if (ib != nullptr) v = v + widen(ib[col * p.ib_stride]) + widen(hb[col * p.hb_stride]);
      return v;
    };
    const A ig = sigmoid(pre(0)), fg = sigmoid(pre(1)), cg = tanh_of(pre(2)), og = sigmoid(pre(3));
    const A c = fg * widen(cx[b * p.cx_stride0 + j * p.cx_stride1]) + ig * cg;
    hy[i] = narrow<T>(og * tanh_of(c));
    cy[i] = narrow<T>(c);
    T* w = ws + b * 4 * H + j;
    w[0] = narrow<T>(ig);
    w[H] = narrow<T>(fg);
    w[2 * H] = narrow<T>(cg);
    w[3 * H] = narrow<T>(og);
  }
}

template <typename T>
__global__ void state_to_float_kernel(const T* src, int64_t s0, int64_t s1, float* dst, int64_t rows,
                                      int64_t cols) {
  const int64_t n = rows * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    dst[i] = widen(src[(i / cols) * s0 + (i % cols) * s1]);
}

template <typename T>
__global__ void state_from_float_kernel(const float* src, T* dst, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    dst[i] = from_float<T>(src[i]);
}

Error unsupported(const char* what, DType dtype) {
  return set_error(Error::NotSupported, std::string(what) + " does not support dtype " + dtype_name(dtype) +
                                            " (supported: float32, float16, bfloat16)");
}

}  // namespace

Error launch_rnn_step(const RnnStepParams& p, cudaStream_t stream) {
  const int64_t n = p.batch * p.hidden;
  if (n == 0) return Error::Ok;
  switch (p.dtype) {
    case DType::Float32:
      rnn_step_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(p);
      break;
    case DType::Float16:
      rnn_step_kernel<__half><<<blocks_for(n), kThreads, 0, stream>>>(p);
      break;
    case DType::BFloat16:
      rnn_step_kernel<__nv_bfloat16><<<blocks_for(n), kThreads, 0, stream>>>(p);
      break;
    default:
      return unsupported("the RNN step kernel", p.dtype);
  }
  return cuda_status(cudaGetLastError(), "launching the RNN step kernel");
}

Error launch_fused_lstm_cell(const FusedLstmCellParams& p, cudaStream_t stream) {
  const int64_t n = p.batch * p.hidden;
  if (n == 0) return Error::Ok;
  switch (p.dtype) {
    case DType::Float32:
      fused_lstm_cell_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(p);
      break;
    case DType::Float64:
      fused_lstm_cell_kernel<double><<<blocks_for(n), kThreads, 0, stream>>>(p);
      break;
    case DType::Float16:
      fused_lstm_cell_kernel<__half><<<blocks_for(n), kThreads, 0, stream>>>(p);
      break;
    case DType::BFloat16:
      fused_lstm_cell_kernel<__nv_bfloat16><<<blocks_for(n), kThreads, 0, stream>>>(p);
      break;
    default:
      return set_error(Error::NotSupported, std::string("_thnn_fused_lstm_cell does not support dtype ") +
                                                dtype_name(p.dtype) +
                                                " (supported: float32, float64, float16, bfloat16)");
  }
  return cuda_status(cudaGetLastError(), "launching the fused LSTM cell kernel");
}

Error launch_state_to_float(const void* src, DType dtype, int64_t s0, int64_t s1, float* dst, int64_t rows,
                            int64_t cols, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return Error::Ok;
  switch (dtype) {
    case DType::Float32:
      state_to_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(src), s0, s1,
                                                                    dst, rows, cols);
      break;
    case DType::Float16:
      state_to_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(src), s0, s1,
                                                                    dst, rows, cols);
      break;
    case DType::BFloat16:
      state_to_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(src),
                                                                    s0, s1, dst, rows, cols);
      break;
    default:
      return unsupported("the RNN state conversion", dtype);
  }
  return cuda_status(cudaGetLastError(), "launching the RNN state conversion kernel");
}

Error launch_state_from_float(const float* src, void* dst, DType dtype, int64_t n, cudaStream_t stream) {
  if (n == 0) return Error::Ok;
  switch (dtype) {
    case DType::Float32:
      state_from_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, static_cast<float*>(dst), n);
      break;
    case DType::Float16:
      state_from_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, static_cast<__half*>(dst), n);
      break;
    case DType::BFloat16:
      state_from_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, static_cast<__nv_bfloat16*>(dst),
                                                                      n);
      break;
    default:
      return unsupported("the RNN state conversion", dtype);
  }
  return cuda_status(cudaGetLastError(), "launching the RNN state conversion kernel");
}

}  // namespace kiln::cudadev
