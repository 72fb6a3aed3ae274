// Element-wise kernels of the recurrent ops (shims/cuda/cudnn_rnn.cpp,
// fused_lstm_cell.cpp): one time step's gate activations and state update
// for RNN (tanh, ReLU), LSTM and GRU cells, ATen's fused LSTM cell, and the
// conversions of the cell state between the tensors' dtype and the float32
// it is carried in. Every kernel computes in float32 (float64 for float64
// tensors), as ATen's CUDA cell kernels and cuDNN's float32 math do.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// The cell kinds, numbered as cuDNN's cudnnRNNMode_t, which is what ATen
/// passes to _cudnn_rnn as `mode`.
enum class RnnCell : int64_t { RnnRelu = 0, RnnTanh = 1, Lstm = 2, Gru = 3 };

/// Gates per hidden unit: 1 (RNN), 4 (LSTM: i, f, g, o), 3 (GRU: r, z, n).
inline int64_t rnn_gate_count(RnnCell cell) {
  return cell == RnnCell::Lstm ? 4 : cell == RnnCell::Gru ? 3 : 1;
}

/// One time step for rows b < batch (the sequences still running at this
/// step), hidden unit j < hidden, gates in ATen's order within each row:
///   pre[g] = input_gates[b][g*H + j] + hidden_gates[b][g*H + j] + bias_ih[g*H + j] + bias_hh[g*H + j]
/// (GRU's n gate: input part + bias_ih + r * (hidden part + bias_hh)).
struct RnnStepParams {
  RnnCell cell = RnnCell::Lstm;
  DType dtype = DType::Float32;  ///< of h, out and the biases (float32, float16, bfloat16)
  int64_t batch = 0;
  int64_t hidden = 0;
  const float* input_gates = nullptr;  ///< row b at input_gates + b * input_gates_stride (W_ih x, float32)
  int64_t input_gates_stride = 0;
  const float* hidden_gates = nullptr;  ///< [batch, gates * hidden] contiguous (W_hh h, float32)
  const void* bias_ih = nullptr;        ///< null: no biases (both null together)
  const void* bias_hh = nullptr;
  int64_t bias_ih_stride = 1, bias_hh_stride = 1;
  float* cell_state = nullptr;  ///< LSTM: c [batch, hidden] contiguous, read and updated in place
  void* h =
      nullptr;  ///< [batch, hidden] contiguous: the previous h (GRU reads it), overwritten by the new one
  void* out = nullptr;  ///< null, or row b of the new h also at out + b * out_stride
  int64_t out_stride = 0;
};

Error launch_rnn_step(const RnnStepParams& p, cudaStream_t stream);

/// ATen's _thnn_fused_lstm_cell: for row b, unit j (H = hidden),
///   gates i, f, g, o = input_gates[b][k*H + j] + hidden_gates[b][k*H + j] (+ input_bias + hidden_bias)
///   cy = sigmoid(f) * cx + sigmoid(i) * tanh(g), hy = sigmoid(o) * tanh(cy),
/// the activated gates stored in workspace[b][k*H + j]. Inputs with any
/// strides (elements); hy, cy, workspace contiguous. float32, float64,
/// float16, bfloat16.
struct FusedLstmCellParams {
  DType dtype = DType::Float32;
  int64_t batch = 0, hidden = 0;
  const void* input_gates = nullptr;
  int64_t ig_stride0 = 0, ig_stride1 = 0;
  const void* hidden_gates = nullptr;
  int64_t hg_stride0 = 0, hg_stride1 = 0;
  const void* cx = nullptr;
  int64_t cx_stride0 = 0, cx_stride1 = 0;
  const void* input_bias = nullptr;  ///< null: no biases (both null together)
  const void* hidden_bias = nullptr;
  int64_t ib_stride = 1, hb_stride = 1;
  void* hy = nullptr;
  void* cy = nullptr;
  void* workspace = nullptr;
};

Error launch_fused_lstm_cell(const FusedLstmCellParams& p, cudaStream_t stream);

/// dst[r][c] (float32, contiguous rows x cols) = src[r * s0 + c * s1] of `dtype`.
Error launch_state_to_float(const void* src, DType dtype, int64_t s0, int64_t s1, float* dst, int64_t rows,
                            int64_t cols, cudaStream_t stream);
/// dst[i] (`dtype`) = src[i] (float32) rounded to nearest even, for i < n.
Error launch_state_from_float(const float* src, void* dst, DType dtype, int64_t n, cudaStream_t stream);

}  // namespace kiln::cudadev
