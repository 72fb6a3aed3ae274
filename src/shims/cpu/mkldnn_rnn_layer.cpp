// aoti_torch_cpu_mkldnn_rnn_layer: one layer and direction of an LSTM, the
// op Inductor's decomposition of aten.lstm calls for float32/bfloat16 CPU
// inputs (torch/_decomp/decompositions.py, mkldnn_one_layer_lstm: once per
// layer and direction, inputs made contiguous, batch_first and bidirectional
// already handled by the caller). The signature is that of torch's
// hand-written c/shim_cpu.h, not the generated header.
//
// Semantics are ATen's (aten/src/ATen/native/mkldnn/RNN.cpp), which hands the
// layer to oneDNN's LSTM; Kiln runs the recurrence itself instead, with
// OpenBLAS products: one product of the whole input sequence with W_ih, then
// per step one product of h with W_hh accumulated onto it and one loop for
// the gates (PyTorch's order i, f, g, o) and the state update. Gate
// pre-activations and the cell state are float32 whatever the dtype. For
// bfloat16, what oneDNN does and what is reproduced here: the bias is
// b_ih + b_hh rounded to bfloat16 (ATen adds them in the dtype before
// handing them over); each step's h is computed from the float32 cell state,
// then both h and c are rounded to bfloat16, since oneDNN keeps the states
// between steps in the dtype. Checked against ATen: identical to the last
// bit, but where a float32 pre-activation (products summed in another
// order) rounds the other way.
//
// As ATen's kernel: the input is read as sequence-major [T, B, I] whatever
// batch_first says (ATen describes it to oneDNN as time-major always; the
// meta function's output shape, [in0, in1, H] either way, agrees), and
// num_layers and bidirectional change nothing (they describe the whole
// network, not this layer). When has_biases is false the bias is zero and
// weight2/weight3 are not read (the decomposition passes zero tensors of
// the weights' shapes there). `reverse` runs the steps from the last time
// index to the first; each step's h is written at its own time index. With
// no steps, hy and cy are hx and cx (ATen's kernel leaves them unset).
//
// Results are laid out as the op's meta function says (a model library
// indexes them with those strides): output [in0, in1, H] in the input's
// dtype, hy and cy shaped like hx and cx, all contiguous, and the workspace
// an empty uint8 tensor (oneDNN's is filled only for a backward pass).
//
// Refused, each with a message naming it: modes other than LSTM (ATen's
// oneDNN path refuses them too), train=True (Kiln runs inference),
// non-empty batch_sizes (packed sequences: the decomposition never passes
// them), dtypes other than float32/bfloat16 and mixed dtypes (oneDNN refuses
// both).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/half_float.h"
#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/parallel_for.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// ideep::rnn_kind, which ATen passes as `mode`.
constexpr int64_t kLstmMode = 2;

const char* mode_name(int64_t mode) {
  switch (mode) {
    case 0:
      return "RNN_RELU";
    case 1:
      return "RNN_TANH";
    case 3:
      return "GRU";
    default:
      return "unknown";
  }
}

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// `v` as the tensor dtype would hold it (float32: unchanged).
inline float round_to(float v, DType dtype) {
  return dtype == DType::BFloat16 ? bf16_to_float(float_to_bf16(v)) : v;
}

// Error unless `t` has exactly `sizes`.
Error expect_sizes(const Tensor& t, std::vector<int64_t> sizes, const char* name, const char* what) {
  if (t.sizes() != sizes)
    return aoti::invalid(std::string("argument '") + name + "' (" + what + ") has shape " +
                         aoti::shape_string(t.sizes()) + ", expected " + aoti::shape_string(sizes));
  return Error::Ok;
}

// Error unless state `t` (hx_ or cx_) holds [B, H]: that shape with any leading
// dimensions of size 1 ([1, B, H] from the decomposition).
Error expect_state(const Tensor& t, int64_t batch, int64_t hidden, const char* name) {
  const int64_t d = t.dim();
  bool ok = d >= 2 && t.size(d - 2) == batch && t.size(d - 1) == hidden;
  for (int64_t i = 0; ok && i + 2 < d; ++i) ok = t.size(i) == 1;
  if (!ok)
    return aoti::invalid(std::string("argument '") + name + "' has shape " + aoti::shape_string(t.sizes()) +
                         ", expected [1, " + std::to_string(batch) + ", " + std::to_string(hidden) +
                         "] (one layer and direction, batch " + std::to_string(batch) + ", hidden_size " +
                         std::to_string(hidden) + ")");
  return Error::Ok;
}

struct Lstm {
  int64_t steps, batch, input_size, hidden;
  bool reverse;
  DType dtype;
};

// Runs the layer on float32 buffers: x [T*B, I], w_ih [4H, I], w_hh [4H, H],
// bias [4H]; h and c [B, H] hold the initial states and receive the final
// ones; out [T*B, H] receives each step's h.
Error run_lstm(const Lstm& p, const float* x, const float* w_ih, const float* w_hh, const float* bias,
               float* h, float* c, float* out) {
  const int64_t T = p.steps, B = p.batch, I = p.input_size, H = p.hidden, G = 4 * H;
  // Pre-activations of every step at once: gates[t*B + b, :] = x[t, b, :] @ W_ih^T.
  std::vector<float> gates(static_cast<size_t>(T * B * G));
  KILN_RETURN_IF_ERROR(gemm<float>({x, T * B, I, I, 1},
                                   MatrixView<const float>{w_ih, G, I, I, 1}.transposed(),
                                   {gates.data(), T * B, G, G, 1}, 1.0f, 0.0f));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = p.reverse ? T - 1 - s : s;
    float* g = gates.data() + t * B * G;
    // g += h @ W_hh^T
    KILN_RETURN_IF_ERROR(gemm<float>({h, B, H, H, 1}, MatrixView<const float>{w_hh, G, H, H, 1}.transposed(),
                                     {g, B, G, G, 1}, 1.0f, 1.0f));
    float* y = out + t * B * H;
    // Each batch row's update reads and writes only that row of h and c.
    KILN_RETURN_IF_ERROR(
        parallel_for(B, std::max<int64_t>(1, 16384 / G), [&](int64_t b0, int64_t b1) -> Error {
          for (int64_t b = b0; b < b1; ++b) {
            const float* gb = g + b * G;
            for (int64_t j = 0; j < H; ++j) {
              const float in = sigmoid(gb[j] + bias[j]);
              const float forget = sigmoid(gb[H + j] + bias[H + j]);
              const float cell = std::tanh(gb[2 * H + j] + bias[2 * H + j]);
              const float outg = sigmoid(gb[3 * H + j] + bias[3 * H + j]);
              const float cn = forget * c[b * H + j] + in * cell;
              const float hn = round_to(outg * std::tanh(cn), p.dtype);
              c[b * H + j] = round_to(cn, p.dtype);
              h[b * H + j] = hn;
              y[b * H + j] = hn;
            }
          }
          return Error::Ok;
        }));
  }
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mkldnn_rnn_layer(
    AtenTensorHandle input, AtenTensorHandle weight0, AtenTensorHandle weight1, AtenTensorHandle weight2,
    AtenTensorHandle weight3, AtenTensorHandle hx_, AtenTensorHandle cx_, int32_t reverse,
    const int64_t* batch_sizes, int64_t batch_sizes_len_, int64_t mode, int64_t hidden_size,
    int64_t num_layers, int32_t has_biases, int32_t bidirectional, int32_t batch_first, int32_t train,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  (void)batch_sizes;
  (void)num_layers;     // describes the whole network; this call is one layer
  (void)bidirectional;  // likewise: this call is one direction (`reverse`)
  (void)batch_first;    // ATen reads the input as sequence-major regardless
  return aoti::guarded("aoti_torch_cpu_mkldnn_rnn_layer", [&]() -> Error {
    if (mode != kLstmMode)
      return set_error(Error::NotSupported,
                       "mode " + std::to_string(mode) + " (" + mode_name(mode) +
                           ") is not supported: mkldnn_rnn_layer runs LSTM (mode 2) only");
    if (train != 0)
      return set_error(Error::NotSupported,
                       "train=True is not supported: Kiln runs the LSTM for inference only");
    if (batch_sizes_len_ != 0)
      return set_error(Error::NotSupported, "packed sequences (non-empty batch_sizes) are not supported");
    KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(input, "input"));
    KILN_ASSIGN_OR_RETURN(Tensor * w_ih, cpu_tensor_arg(weight0, "weight0"));
    KILN_ASSIGN_OR_RETURN(Tensor * w_hh, cpu_tensor_arg(weight1, "weight1"));
    KILN_ASSIGN_OR_RETURN(Tensor * hx, cpu_tensor_arg(hx_, "hx_"));
    KILN_ASSIGN_OR_RETURN(Tensor * cx, cpu_tensor_arg(cx_, "cx_"));
    const DType dtype = x->dtype();
    if (dtype != DType::Float32 && dtype != DType::BFloat16)
      return set_error(Error::NotSupported,
                       std::string("input dtype ") + dtype_name(dtype) +
                           " is not supported (float32 or bfloat16, as ATen's oneDNN LSTM)");
    if (x->dim() != 3)
      return aoti::invalid("argument 'input' has shape " + aoti::shape_string(x->sizes()) +
                           ", expected 3-d [seq_len, batch, input_size]");
    if (hidden_size <= 0)
      return aoti::invalid("argument 'hidden_size' is " + std::to_string(hidden_size) + ", expected > 0");
    const Lstm p{x->size(0), x->size(1), x->size(2), hidden_size, reverse != 0, dtype};
    const int64_t G = 4 * p.hidden;
    KILN_RETURN_IF_ERROR(
        expect_sizes(*w_ih, {G, p.input_size}, "weight0", "W_ih [4 * hidden_size, input_size]"));
    KILN_RETURN_IF_ERROR(
        expect_sizes(*w_hh, {G, p.hidden}, "weight1", "W_hh [4 * hidden_size, hidden_size]"));
    KILN_RETURN_IF_ERROR(expect_state(*hx, p.batch, p.hidden, "hx_"));
    KILN_RETURN_IF_ERROR(expect_state(*cx, p.batch, p.hidden, "cx_"));
    std::vector<const Tensor*> same = {w_ih, w_hh, hx, cx};
    std::vector<const char*> same_names = {"weight0", "weight1", "hx_", "cx_"};
    Tensor* b_ih = nullptr;
    Tensor* b_hh = nullptr;
    if (has_biases) {
      KILN_ASSIGN_OR_RETURN(b_ih, cpu_tensor_arg(weight2, "weight2"));
      KILN_ASSIGN_OR_RETURN(b_hh, cpu_tensor_arg(weight3, "weight3"));
      KILN_RETURN_IF_ERROR(expect_sizes(*b_ih, {G}, "weight2", "b_ih [4 * hidden_size]"));
      KILN_RETURN_IF_ERROR(expect_sizes(*b_hh, {G}, "weight3", "b_hh [4 * hidden_size]"));
      same.insert(same.end(), {b_ih, b_hh});
      same_names.insert(same_names.end(), {"weight2", "weight3"});
    }
    for (size_t i = 0; i < same.size(); ++i) KILN_RETURN_IF_ERROR(same_dtype(*same[i], dtype, same_names[i]));

    KILN_ASSIGN_OR_RETURN(Tensor out,
                          new_cpu_tensor(std::vector<int64_t>{p.steps, p.batch, p.hidden}, dtype));
    KILN_ASSIGN_OR_RETURN(Tensor hy, new_cpu_tensor(hx->sizes(), dtype));
    KILN_ASSIGN_OR_RETURN(Tensor cy, new_cpu_tensor(cx->sizes(), dtype));
    KILN_ASSIGN_OR_RETURN(Tensor workspace, new_cpu_tensor(std::vector<int64_t>{0}, DType::UInt8));

    std::vector<float> x_scratch, wih_scratch, whh_scratch;
    const float* xf = contiguous_floats(*x, x_scratch);
    const float* wih = contiguous_floats(*w_ih, wih_scratch);
    const float* whh = contiguous_floats(*w_hh, whh_scratch);
    std::vector<float> bias(static_cast<size_t>(G), 0.0f);
    if (has_biases) {
      std::vector<float> second(static_cast<size_t>(G));
      load_floats(*b_ih, bias.data());
      load_floats(*b_hh, second.data());
      for (int64_t j = 0; j < G; ++j) bias[j] = round_to(bias[j] + second[j], dtype);
    }
    std::vector<float> h = to_floats(*hx), c = to_floats(*cx);
    std::vector<float> y(static_cast<size_t>(out.numel()));
    if (out.numel() > 0)
      KILN_RETURN_IF_ERROR(run_lstm(p, xf, wih, whh, bias.data(), h.data(), c.data(), y.data()));
    store_floats(y.data(), out);
    store_floats(h.data(), hy);
    store_floats(c.data(), cy);
    KILN_RETURN_IF_ERROR(return_tensor(std::move(out), ret0, "ret0"));
    KILN_RETURN_IF_ERROR(return_tensor(std::move(hy), ret1, "ret1"));
    KILN_RETURN_IF_ERROR(return_tensor(std::move(cy), ret2, "ret2"));
    return return_tensor(std::move(workspace), ret3, "ret3");
  });
}

}  // extern "C"
