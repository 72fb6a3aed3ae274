// aoti_torch_cuda__cudnn_rnn: the forward pass of ATen's cuDNN RNN (RNN with
// tanh or ReLU, LSTM with optional projection, GRU; any number of layers, one
// or two directions, sequence- or batch-major, padded or packed sequences),
// for inference.
//
// Kiln runs the recurrence itself instead of calling cuDNN's RNN API. cuDNN
// would need the weights copied into its own packed weight space on every
// call (the model library holds them as separate tensors), in a layout
// documented only through query functions, and its algorithm choice makes
// results differ slightly between GPUs; the recurrence written out is short,
// and every step is exactly the math of ATen's own cells. Per layer and
// direction: one product of the whole input sequence with W_ih (cuBLASLt,
// matmul.h), then per time step one product of h with W_hh and one kernel
// (kernels/rnn_kernel.cu) for the gates and the state update (plus, for an
// LSTM with projection, the product with W_hr). Gate pre-activations and
// the LSTM cell state are kept in float32 whatever the dtype (cuDNN computes
// float16/bfloat16 RNNs in float32 too, as ATen asks it to); h is rounded to
// the dtype each step, since it is an output and the next step's operand.
//
// Results are laid out as the op's meta function says (a model library
// indexes them with those strides): output contiguous in its logical shape
// (with batch_first, ATen's CUDA kernel instead returns a transposed view of
// a sequence-major buffer; the values are the same), hy and cy contiguous,
// the reserve an empty uint8 tensor (no backward pass reads it). The fifth
// result is weight_buf itself when the caller passed one, as in ATen;
// without one ATen returns cuDNN's packed copy of the weights, which the
// meta function gives as None (so a model library passes no slot for it):
// a slot that is passed anyway receives an undefined tensor.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/strided_copy.h"
#include "devices/cuda/kernels/rnn_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/matmul.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

std::string cell_name(RnnCell cell) {
  switch (cell) {
    case RnnCell::RnnRelu:
      return "RNN_RELU";
    case RnnCell::RnnTanh:
      return "RNN_TANH";
    case RnnCell::Lstm:
      return "LSTM";
    case RnnCell::Gru:
      return "GRU";
  }
  return "?";
}

// What the scalar arguments and the input's shape say.
struct RnnShape {
  RnnCell cell = RnnCell::Lstm;
  int64_t gates = 4;     // G: rows of W_ih and W_hh are G * hidden
  int64_t hidden = 0;    // H
  int64_t proj = 0;      // P (0: none)
  int64_t out_size = 0;  // size of h: P if projected, else H
  int64_t layers = 0;
  int64_t dirs = 1;
  bool has_bias = true;
  bool batch_first = false;
  bool packed = false;
  int64_t seq = 0;    // T
  int64_t batch = 0;  // B
  int64_t input_size = 0;
  int64_t rows = 0;                           // rows of the input/output seen as [rows, features]
  std::vector<int64_t> batch_sizes, offsets;  // packed: per step, and its first row

  // The sequences still running at step t, and where their rows are: row of
  // batch entry b at step t = first_row(t) + b * row_step().
  int64_t active(int64_t t) const { return packed ? batch_sizes[static_cast<size_t>(t)] : batch; }
  int64_t first_row(int64_t t) const {
    return packed ? offsets[static_cast<size_t>(t)] : batch_first ? t : t * batch;
  }
  int64_t row_step() const { return !packed && batch_first ? seq : 1; }
};

// One layer-direction's parameters, each a GEMM-ready view (see gemm_ready).
struct LayerParams {
  TensorRef w_ih, w_hh, w_hr;  // w_hr: data null without projection
  TensorRef b_ih, b_hh;        // data null without biases
};

TensorRef view(void* data, DType dtype, int device, std::vector<int64_t> sizes,
               std::vector<int64_t> strides) {
  TensorRef t;
  t.data = data;
  t.dtype = dtype;
  t.device_type = static_cast<int32_t>(DeviceType::CUDA);
  t.device_index = device;
  t.sizes = std::move(sizes);
  t.strides = std::move(strides);
  return t;
}

// W as the right operand of x @ W^T.
TensorRef transposed(const TensorRef& w) {
  return view(w.data, w.dtype, w.device_index, {w.sizes[1], w.sizes[0]}, {w.strides[1], w.strides[0]});
}

// `w` itself when cuBLASLt can read it in place (one of its strides 1),
// else a contiguous copy made once here, so the per-step products do not
// copy it again on every step.
Result<TensorRef> gemm_ready(const TensorRef& w, std::vector<DeviceBuffer>& holders, cudaStream_t stream) {
  const bool row_major = w.strides[1] == 1 && w.strides[0] >= w.sizes[1];
  const bool column_major = w.strides[0] == 1 && w.strides[1] >= w.sizes[0];
  if (row_major || column_major || w.numel() == 0) return w;
  const std::vector<int64_t> strides = contiguous_strides(w.sizes);
  KILN_ASSIGN_OR_RETURN(DeviceBuffer copy, copy_to_layout(w, strides, stream));
  TensorRef c = view(copy.get(), w.dtype, w.device_index, w.sizes, strides);
  holders.push_back(std::move(copy));
  return c;
}

Error expect_shape(const TensorRef& t, const std::vector<int64_t>& sizes, const std::string& what) {
  if (t.sizes == sizes) return Error::Ok;
  std::string want = "[";
  for (size_t i = 0; i < sizes.size(); ++i) want += (i ? ", " : "") + std::to_string(sizes[i]);
  return aoti::invalid(what + " is " + t.describe() + ", expected shape " + want + "]");
}

Error check_like(const TensorRef& input, const TensorRef& t, const std::string& what) {
  if (t.dtype != input.dtype)
    return aoti::invalid(what + " " + t.describe() + " has another dtype than input " + input.describe());
  if (t.device_index != input.device_index)
    return aoti::invalid(what + " is on CUDA device " + std::to_string(t.device_index) + ", input on " +
                         std::to_string(input.device_index));
  return Error::Ok;
}

Result<RnnShape> read_shape(const TensorRef& input, int64_t mode, int64_t hidden_size, int64_t proj_size,
                            int64_t num_layers, bool batch_first, bool bidirectional,
                            std::span<const int64_t> batch_sizes, int64_t weight_len,
                            int64_t weight_stride0) {
  RnnShape s;
  if (mode < 0 || mode > 3)
    return aoti::invalid("unrecognized RNN mode " + std::to_string(mode) +
                         " (cuDNN's: 0 RNN_RELU, 1 RNN_TANH, 2 LSTM, 3 GRU)");
  s.cell = static_cast<RnnCell>(mode);
  s.gates = rnn_gate_count(s.cell);
  if (hidden_size <= 0)
    return aoti::invalid("hidden_size must be positive, got " + std::to_string(hidden_size));
  if (num_layers <= 0) return aoti::invalid("num_layers must be positive, got " + std::to_string(num_layers));
  if (proj_size < 0) return aoti::invalid("proj_size must not be negative, got " + std::to_string(proj_size));
  if (proj_size > 0 && s.cell != RnnCell::Lstm)
    return aoti::invalid("proj_size (" + std::to_string(proj_size) + ") is only supported for LSTM, not " +
                         cell_name(s.cell));
  s.hidden = hidden_size;
  s.proj = proj_size;
  s.out_size = proj_size > 0 ? proj_size : hidden_size;
  s.layers = num_layers;
  s.dirs = bidirectional ? 2 : 1;
  s.batch_first = batch_first;

  // Per layer-direction: w_ih, w_hh, [b_ih, b_hh], [w_hr].
  const int64_t with_bias = proj_size > 0 ? 5 : 4, without = proj_size > 0 ? 3 : 2;
  if (weight_stride0 != with_bias && weight_stride0 != without)
    return aoti::invalid("weight_stride0 is " + std::to_string(weight_stride0) + "; " + cell_name(s.cell) +
                         (proj_size > 0 ? " with projections" : "") + " takes " + std::to_string(with_bias) +
                         " tensors per layer and direction with biases or " + std::to_string(without) +
                         " without");
  s.has_bias = weight_stride0 == with_bias;
  if (weight_len != weight_stride0 * s.layers * s.dirs)
    return aoti::invalid("the weight list holds " + std::to_string(weight_len) + " tensors; " +
                         std::to_string(s.layers) + " layers x " + std::to_string(s.dirs) + " directions x " +
                         std::to_string(weight_stride0) + " need " +
                         std::to_string(weight_stride0 * s.layers * s.dirs));

  s.packed = !batch_sizes.empty();
  if (s.packed) {
    if (input.dim() != 2)
      return aoti::invalid("a packed input (batch_sizes given) must be 2-D [total, input_size], got " +
                           input.describe());
    int64_t total = 0;
    for (size_t t = 0; t < batch_sizes.size(); ++t) {
      const int64_t n = batch_sizes[t];
      if (n <= 0 || (t > 0 && n > batch_sizes[t - 1]))
        return aoti::invalid("batch_sizes must be positive and non-increasing (a PackedSequence's), got " +
                             aoti::shape_string(batch_sizes));
      s.offsets.push_back(total);
      total += n;
    }
    if (total != input.sizes[0])
      return aoti::invalid("batch_sizes " + aoti::shape_string(batch_sizes) + " sum to " +
                           std::to_string(total) + " but the packed input has " +
                           std::to_string(input.sizes[0]) + " rows");
    s.batch_sizes.assign(batch_sizes.begin(), batch_sizes.end());
    s.seq = static_cast<int64_t>(batch_sizes.size());
    s.batch = batch_sizes[0];
    s.rows = total;
    s.input_size = input.sizes[1];
  } else {
    if (input.dim() != 3)
      return aoti::invalid(std::string("input must be 3-D ") +
                           (batch_first ? "[batch, seq, input_size]" : "[seq, batch, input_size]") +
                           ", got " + input.describe());
    s.seq = batch_first ? input.sizes[1] : input.sizes[0];
    s.batch = batch_first ? input.sizes[0] : input.sizes[1];
    s.rows = s.seq * s.batch;
    s.input_size = input.sizes[2];
  }
  return s;
}

// The parameters of layer `layer`, direction `dir`, checked against the shape.
Result<LayerParams> read_layer(const AtenTensorHandle* weight, int64_t stride0, const RnnShape& s,
                               const TensorRef& input, int64_t layer, int64_t dir,
                               std::vector<DeviceBuffer>& holders, cudaStream_t stream) {
  const int64_t base = (layer * s.dirs + dir) * stride0;
  const std::string where = " of layer " + std::to_string(layer) + (dir ? " (reverse)" : "");
  const auto read = [&](int64_t k, const char* name) -> Result<TensorRef> {
    KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(weight[base + k], "weight"));
    KILN_RETURN_IF_ERROR(check_like(input, t, name + where));
    return t;
  };
  const int64_t gh = s.gates * s.hidden;
  const int64_t in = layer == 0 ? s.input_size : s.dirs * s.out_size;
  LayerParams p;
  KILN_ASSIGN_OR_RETURN(p.w_ih, read(0, "w_ih"));
  KILN_RETURN_IF_ERROR(expect_shape(p.w_ih, {gh, in}, "w_ih" + where));
  KILN_ASSIGN_OR_RETURN(p.w_hh, read(1, "w_hh"));
  KILN_RETURN_IF_ERROR(expect_shape(p.w_hh, {gh, s.out_size}, "w_hh" + where));
  if (s.has_bias) {
    KILN_ASSIGN_OR_RETURN(p.b_ih, read(2, "b_ih"));
    KILN_RETURN_IF_ERROR(expect_shape(p.b_ih, {gh}, "b_ih" + where));
    KILN_ASSIGN_OR_RETURN(p.b_hh, read(3, "b_hh"));
    KILN_RETURN_IF_ERROR(expect_shape(p.b_hh, {gh}, "b_hh" + where));
  }
  if (s.proj > 0) {
    KILN_ASSIGN_OR_RETURN(p.w_hr, read(s.has_bias ? 4 : 2, "w_hr"));
    KILN_RETURN_IF_ERROR(expect_shape(p.w_hr, {s.proj, s.hidden}, "w_hr" + where));
    KILN_ASSIGN_OR_RETURN(p.w_hr, gemm_ready(p.w_hr, holders, stream));
  }
  KILN_ASSIGN_OR_RETURN(p.w_ih, gemm_ready(p.w_ih, holders, stream));
  KILN_ASSIGN_OR_RETURN(p.w_hh, gemm_ready(p.w_hh, holders, stream));
  return p;
}

// The layer-0 input as a 2-D [rows, input_size] operand: the input itself
// when its two leading dimensions merge into one row index, else a copy.
Result<TensorRef> input_rows(const TensorRef& input, const RnnShape& s, DeviceBuffer& holder,
                             cudaStream_t stream) {
  if (s.packed) return input;
  const int64_t a0 = input.sizes[0], a1 = input.sizes[1];
  const int64_t s0 = input.strides[0], s1 = input.strides[1];
  int64_t row_stride = 0;
  bool merges = true;
  if (a1 == 1)
    row_stride = s0;
  else if (a0 == 1 || s0 == a1 * s1)
    row_stride = s1;
  else
    merges = false;
  if (merges)
    return view(input.data, input.dtype, input.device_index, {s.rows, s.input_size},
                {row_stride, input.strides[2]});
  const std::vector<int64_t> strides = contiguous_strides(input.sizes);
  KILN_ASSIGN_OR_RETURN(holder, copy_to_layout(input, strides, stream));
  return view(holder.get(), input.dtype, input.device_index, {s.rows, s.input_size}, {s.input_size, 1});
}

struct RnnResults {
  TensorRef output, hy, cy;  // cy: data null without cx
};

Error run_rnn(const RnnShape& s, const TensorRef& input, const AtenTensorHandle* weight, int64_t stride0,
              const TensorRef& hx, const TensorRef* cx, const RnnResults& r) {
  const int device = input.device_index;
  const DType dtype = input.dtype;
  const size_t elem = element_size(dtype);
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  cudaStream_t stream = current_stream(device);

  const int64_t B = s.batch, H = s.hidden, Po = s.out_size, D = s.dirs;
  const int64_t gh = s.gates * H;
  const int64_t features = D * Po;  // columns of a layer's output
  const auto bytes = [](int64_t n, size_t each) { return static_cast<size_t>(n) * each; };

  // Scratch, freed in stream order when this returns.
  KILN_ASSIGN_OR_RETURN(DeviceBuffer input_gates,
                        DeviceBuffer::allocate(bytes(s.rows * gh, 4), device, stream));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer hidden_gates, DeviceBuffer::allocate(bytes(B * gh, 4), device, stream));
  DeviceBuffer cell_state, h_unprojected, layer_out[2];
  if (s.cell == RnnCell::Lstm) {
    KILN_ASSIGN_OR_RETURN(cell_state, DeviceBuffer::allocate(bytes(B * H, 4), device, stream));
  }
  if (s.proj > 0) {
    KILN_ASSIGN_OR_RETURN(h_unprojected, DeviceBuffer::allocate(bytes(B * H, elem), device, stream));
  }
  for (int64_t i = 0; i < std::min<int64_t>(s.layers - 1, 2); ++i) {
    KILN_ASSIGN_OR_RETURN(layer_out[i],
                          DeviceBuffer::allocate(bytes(s.rows * features, elem), device, stream));
  }
  DeviceBuffer input_copy;
  KILN_ASSIGN_OR_RETURN(TensorRef layer_in, input_rows(input, s, input_copy, stream));
  auto* xg = static_cast<float*>(input_gates.get());
  auto* hg = static_cast<float*>(hidden_gates.get());
  auto* c = static_cast<float*>(cell_state.get());

  for (int64_t layer = 0; layer < s.layers; ++layer) {
    char* y = static_cast<char*>(layer + 1 == s.layers ? r.output.data : layer_out[layer % 2].get());
    for (int64_t dir = 0; dir < D; ++dir) {
      std::vector<DeviceBuffer> holders;
      KILN_ASSIGN_OR_RETURN(LayerParams w,
                            read_layer(weight, stride0, s, input, layer, dir, holders, stream));
      const int64_t k = layer * D + dir;  // index into hx, cx, hy, cy

      // The input's contribution to every gate at every step, in one product.
      KILN_RETURN_IF_ERROR(matmul_into(view(xg, DType::Float32, device, {s.rows, gh}, {gh, 1}), layer_in,
                                  transposed(w.w_ih), 1.0f, 0.0f));

      // h lives in hy's slice from the start (it ends there); c in float32.
      char* h = static_cast<char*>(r.hy.data) + bytes(k * B * Po, elem);
      {
        const int64_t dst_strides[2] = {Po, 1};
        const int64_t src_strides[2] = {hx.strides[1], hx.strides[2]};
        const int64_t sizes[2] = {B, Po};
        KILN_RETURN_IF_ERROR(launch_strided_copy(
            h, dst_strides, static_cast<const char*>(hx.data) + bytes(k * hx.strides[0], elem), src_strides,
            sizes, 2, elem, stream));
      }
      if (c != nullptr) {
        if (cx != nullptr) {
          KILN_RETURN_IF_ERROR(
              launch_state_to_float(static_cast<const char*>(cx->data) + bytes(k * cx->strides[0], elem),
                                    dtype, cx->strides[1], cx->strides[2], c, B, H, stream));
        } else {
          KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c, 0, bytes(B * H, 4), stream));
        }
      }

      for (int64_t step = 0; step < s.seq; ++step) {
        const int64_t t = dir == 0 ? step : s.seq - 1 - step;
        const int64_t n = s.active(t);
        const int64_t row = s.first_row(t), row_step = s.row_step();
        char* y_rows = y + bytes(row * features + dir * Po, elem);
        KILN_RETURN_IF_ERROR(matmul_into(view(hg, DType::Float32, device, {n, gh}, {gh, 1}),
                                    view(h, dtype, device, {n, Po}, {Po, 1}), transposed(w.w_hh), 1.0f,
                                    0.0f));
        RnnStepParams p;
        p.cell = s.cell;
        p.dtype = dtype;
        p.batch = n;
        p.hidden = H;
        p.input_gates = xg + row * gh;
        p.input_gates_stride = row_step * gh;
        p.hidden_gates = hg;
        if (s.has_bias) {
          p.bias_ih = w.b_ih.data;
          p.bias_hh = w.b_hh.data;
          p.bias_ih_stride = w.b_ih.strides[0];
          p.bias_hh_stride = w.b_hh.strides[0];
        }
        p.cell_state = c;
        if (s.proj > 0) {
          p.h = h_unprojected.get();  // projected below, into h and the output
        } else {
          p.h = h;
          p.out = y_rows;
          p.out_stride = row_step * features;
        }
        KILN_RETURN_IF_ERROR(launch_rnn_step(p, stream));
        if (s.proj > 0) {
          KILN_RETURN_IF_ERROR(matmul_into(view(h, dtype, device, {n, Po}, {Po, 1}),
                                      view(h_unprojected.get(), dtype, device, {n, H}, {H, 1}),
                                      transposed(w.w_hr), 1.0f, 0.0f));
          const int64_t dst_strides[2] = {row_step * features, 1};
          const int64_t src_strides[2] = {Po, 1};
          const int64_t sizes[2] = {n, Po};
          KILN_RETURN_IF_ERROR(
              launch_strided_copy(y_rows, dst_strides, h, src_strides, sizes, 2, elem, stream));
        }
      }
      if (c != nullptr && r.cy.data != nullptr)
        KILN_RETURN_IF_ERROR(launch_state_from_float(
            c, static_cast<char*>(r.cy.data) + bytes(k * B * H, elem), dtype, B * H, stream));
    }
    layer_in = view(y, dtype, device, {s.rows, features}, {features, 1});
  }
  return Error::Ok;
}

// Hands `h` to the caller through `ret`; a null slot (a result the model
// library does not use) drops it.
void give(OwnedHandle& h, AtenTensorHandle* ret) {
  if (ret != nullptr) *ret = h.release();
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__cudnn_rnn(
    AtenTensorHandle input, const AtenTensorHandle* weight, int64_t weight_len_, int64_t weight_stride0,
    AtenTensorHandle* weight_buf, AtenTensorHandle hx, AtenTensorHandle* cx, int64_t mode,
    int64_t hidden_size, int64_t proj_size, int64_t num_layers, int32_t batch_first, double dropout,
    int32_t train, int32_t bidirectional, const int64_t* batch_sizes, int64_t batch_sizes_len_,
    AtenTensorHandle* dropout_state, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, AtenTensorHandle* ret4) {
  (void)dropout_state;  // only read by dropout, which inference never applies
  return aoti::guarded("aoti_torch_cuda__cudnn_rnn", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef in, read_tensor(input, "input"));
    if (in.dtype != DType::Float32 && in.dtype != DType::Float16 && in.dtype != DType::BFloat16)
      return set_error(Error::NotSupported, std::string("input of dtype ") + dtype_name(in.dtype) +
                                                " is not supported (float32, float16, bfloat16)");
    // cuDNN applies dropout to the outputs of every layer but the last, and
    // only when training; with one layer it never applies.
    if (train != 0 && dropout > 0.0 && num_layers > 1)
      return set_error(
          Error::NotSupported,
          "dropout " + std::to_string(dropout) +
              " between layers with train=True is not supported: "
              "Kiln runs inference only; export the model in eval mode (model.eval()), or with dropout=0");
    if (weight_len_ > 0 && weight == nullptr) return aoti::invalid("argument 'weight' is null");
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> sizes_list,
                          aoti::int_array_arg(batch_sizes, batch_sizes_len_, "batch_sizes"));
    KILN_ASSIGN_OR_RETURN(RnnShape s,
                          read_shape(in, mode, hidden_size, proj_size, num_layers, batch_first != 0,
                                     bidirectional != 0, sizes_list, weight_len_, weight_stride0));

    const int64_t states = s.layers * s.dirs;
    KILN_ASSIGN_OR_RETURN(TensorRef h0, read_tensor(hx, "hx"));
    KILN_RETURN_IF_ERROR(check_like(in, h0, "hx"));
    KILN_RETURN_IF_ERROR(expect_shape(h0, {states, s.batch, s.out_size}, "hx"));
    const bool has_cx = cx != nullptr && *cx != nullptr;
    TensorRef c0;
    if (has_cx) {
      if (s.cell != RnnCell::Lstm)
        return aoti::invalid("cx is given for a " + cell_name(s.cell) + " (LSTM only)");
      KILN_ASSIGN_OR_RETURN(c0, read_tensor(*cx, "cx"));
      KILN_RETURN_IF_ERROR(check_like(in, c0, "cx"));
      KILN_RETURN_IF_ERROR(expect_shape(c0, {states, s.batch, s.hidden}, "cx"));
    }

    const int device = in.device_index;
    const int64_t features = s.dirs * s.out_size;
    std::vector<int64_t> out_sizes;
    if (s.packed)
      out_sizes = {s.rows, features};
    else if (s.batch_first)
      out_sizes = {s.batch, s.seq, features};
    else
      out_sizes = {s.seq, s.batch, features};
    KILN_ASSIGN_OR_RETURN(OwnedHandle output, new_contiguous(out_sizes, in.dtype, device));
    KILN_ASSIGN_OR_RETURN(
        OwnedHandle hy, new_contiguous(std::vector<int64_t>{states, s.batch, s.out_size}, in.dtype, device));
    // Without cx, ATen returns an empty cy of hx's options.
    KILN_ASSIGN_OR_RETURN(
        OwnedHandle cy,
        new_contiguous(has_cx ? std::vector<int64_t>{states, s.batch, s.hidden} : std::vector<int64_t>{0},
                       in.dtype, device));
    KILN_ASSIGN_OR_RETURN(OwnedHandle reserve, new_contiguous(std::vector<int64_t>{0}, DType::UInt8, device));
    OwnedHandle buf;
    if (weight_buf != nullptr && *weight_buf != nullptr) {
      AtenTensorHandle alias = nullptr;
      if (aoti_torch_new_tensor_handle(*weight_buf, &alias) != 0)
        return aoti::invalid("weight_buf: " + last_error_message());
      buf = OwnedHandle(alias);
    } else if (ret4 != nullptr) {
      KILN_ASSIGN_OR_RETURN(buf, new_undefined_tensor());
    }

    RnnResults r;
    KILN_ASSIGN_OR_RETURN(r.output, read_tensor(output.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(r.hy, read_tensor(hy.get(), "ret1"));
    if (has_cx) {
      KILN_ASSIGN_OR_RETURN(r.cy, read_tensor(cy.get(), "ret2"));
    }
    KILN_RETURN_IF_ERROR(run_rnn(s, in, weight, weight_stride0, h0, has_cx ? &c0 : nullptr, r));

    give(output, ret0);
    give(hy, ret1);
    give(cy, ret2);
    give(reserve, ret3);
    give(buf, ret4);
    return Error::Ok;
  });
}

}  // extern "C"
