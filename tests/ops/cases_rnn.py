"""Recurrent networks: ATen's cuDNN RNN forward and its fused LSTM cell (CUDA-only ops), and
the oneDNN LSTM layer Inductor's decomposition of aten.lstm calls on the CPU (mkldnn_rnn_layer)."""

import math

import torch

from op_case import Case, cases

# cuDNN's cudnnRNNMode_t, which ATen passes to _cudnn_rnn as `mode`.
RNN_RELU, RNN_TANH, LSTM, GRU = 0, 1, 2, 3
GATES = {RNN_RELU: 1, RNN_TANH: 1, LSTM: 4, GRU: 3}
NAMES = {RNN_RELU: "relu", RNN_TANH: "tanh", LSTM: "lstm", GRU: "gru"}

# Per dtype: (rtol, atol) of the RNN's results against ATen's. Both accumulate in float32;
# h is rounded to the dtype at every step, so the differences grow with the steps and layers.
RNN_TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 5e-3), torch.bfloat16: (2e-2, 3e-2)}


def _aten_cudnn_rnn(**kwargs):
    """ATen's CUDA op with contiguous states (it refuses others; Kiln takes any layout) and
    without TF32 (cuDNN may use it for float32 RNNs by default; Kiln's products do not unless
    cuda_allow_tf32 is set), so the reference is the float32 math Kiln computes."""
    kwargs = dict(kwargs)
    kwargs["hx"] = kwargs["hx"].contiguous()
    if kwargs.get("cx") is not None:
        kwargs["cx"] = kwargs["cx"].contiguous()
    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        return torch.ops.aten._cudnn_rnn.default(**kwargs)
    finally:
        torch.backends.cudnn.allow_tf32 = previous


def _rnn_results(kwargs, ref_kwargs, got, expected):
    """output, hy, cy and the reserve against ATen's. With batch_first ATen's CUDA kernel returns
    the output as a transposed view of a sequence-major buffer, while the meta function (what a
    model library indexes the result with) and Kiln make it contiguous: output values are
    compared, not its strides. The fifth result is cuDNN's packed copy of the weights when no
    weight_buf is given, a layout of cuDNN's own that Kiln does not reproduce (the meta function
    gives None and a model library passes no slot for it)."""
    from compare import assert_same

    rtol, atol = RNN_TOLERANCE[expected[0].dtype]
    assert_same(got[0], expected[0], "output", rtol, atol, strides=False)
    assert_same(got[1], expected[1], "hy", rtol, atol)
    assert_same(got[2], expected[2], "cy", rtol, atol)
    assert got[3].dtype == torch.uint8 and got[3].numel() == 0, f"reserve: {got[3].dtype} {tuple(got[3].shape)}"


def _uniform(g, shape, dtype, bound):
    return g.tensor(shape, dtype, low=-bound, high=bound)


def _rnn_case(g, mode, *, dtype=torch.float32, layers=1, bidirectional=False, batch_first=False, bias=True,
              proj=0, with_cx=True, batch=3, seq=5, input_size=6, hidden=8, batch_sizes=(), train=False,
              dropout=0.0, error=None, id=""):
    dirs = 2 if bidirectional else 1
    gates = GATES[mode] * hidden
    out = proj or hidden
    bound = 1 / math.sqrt(hidden)  # nn.RNNBase's initialisation: pre-activations stay out of saturation
    weight = []
    for layer in range(layers):
        for _ in range(dirs):
            width = input_size if layer == 0 else dirs * out
            weight += [_uniform(g, (gates, width), dtype, bound), _uniform(g, (gates, out), dtype, bound)]
            if bias:
                weight += [_uniform(g, (gates,), dtype, bound), _uniform(g, (gates,), dtype, bound)]
            if proj:
                weight.append(_uniform(g, (proj, hidden), dtype, bound))
    if batch_sizes:
        batch = batch_sizes[0]
        x = g.tensor((sum(batch_sizes), input_size), dtype)
    else:
        x = g.tensor((batch, seq, input_size) if batch_first else (seq, batch, input_size), dtype)
    hx = _uniform(g, (layers * dirs, batch, out), dtype, 1.0)
    cx = _uniform(g, (layers * dirs, batch, hidden), dtype, 1.0) if mode == LSTM and with_cx else None
    kwargs = dict(input=x, weight=weight, weight_stride0=len(weight) // (layers * dirs), weight_buf=None, hx=hx,
                  cx=cx, mode=mode, hidden_size=hidden, proj_size=proj, num_layers=layers, batch_first=batch_first,
                  dropout=dropout, train=train, bidirectional=bidirectional, batch_sizes=list(batch_sizes),
                  dropout_state=None)
    if error is not None:
        return Case(kwargs, error=error, id=id)
    return Case(kwargs, reference=_aten_cudnn_rnn, check=_rnn_results, id=id)


@cases("_cudnn_rnn")
def _cudnn_rnn(g):
    # Every cell, one layer, sequence-major.
    for mode in (LSTM, GRU, RNN_TANH, RNN_RELU):
        yield _rnn_case(g, mode, id=NAMES[mode])
    # Layers, both directions, batch-major; without biases.
    for mode in (LSTM, GRU, RNN_TANH, RNN_RELU):
        yield _rnn_case(g, mode, layers=2, bidirectional=True, batch_first=True, id=f"{NAMES[mode]}-2layer-bidir-bf")
        yield _rnn_case(g, mode, layers=2, bias=False, id=f"{NAMES[mode]}-2layer-nobias")
    yield _rnn_case(g, LSTM, layers=3, bidirectional=True, id="lstm-3layer-bidir")
    yield _rnn_case(g, LSTM, with_cx=False, layers=2, id="lstm-no-cx")
    # LSTM with projections (weight_hr), with and without biases.
    yield _rnn_case(g, LSTM, proj=5, id="lstm-proj")
    yield _rnn_case(g, LSTM, proj=5, layers=2, bidirectional=True, batch_first=True, id="lstm-proj-2layer-bidir-bf")
    yield _rnn_case(g, LSTM, proj=5, bias=False, layers=2, id="lstm-proj-nobias")
    # Packed sequences (lengths 4, 3, 2, 2): sequences end at their own step; reverse starts there.
    for mode in (LSTM, GRU):
        yield _rnn_case(g, mode, batch_sizes=(4, 4, 2, 1), layers=2, bidirectional=True,
                        id=f"{NAMES[mode]}-packed-2layer-bidir")
    yield _rnn_case(g, LSTM, batch_sizes=(3, 2, 2, 1), proj=5, id="lstm-packed-proj")
    # Half precision.
    for dtype in (torch.bfloat16, torch.float16):
        name = str(dtype)[6:]
        for mode in (LSTM, GRU):
            yield _rnn_case(g, mode, dtype=dtype, layers=2, bidirectional=True, batch_first=True,
                            id=f"{NAMES[mode]}-{name}-2layer-bidir-bf")
    yield _rnn_case(g, RNN_TANH, dtype=torch.bfloat16, layers=2, id="tanh-bfloat16-2layer")
    yield _rnn_case(g, LSTM, dtype=torch.bfloat16, proj=5, id="lstm-bfloat16-proj")
    # Training mode is accepted where it changes nothing (no dropout, or one layer), refused otherwise.
    yield _rnn_case(g, LSTM, layers=2, train=False, dropout=0.5, id="lstm-dropout-eval")
    yield _rnn_case(g, LSTM, layers=2, train=True, dropout=0.5, error="train=True is not supported", id="train-dropout")
    yield _rnn_case(g, LSTM, dtype=torch.float64, error="float64 is not supported", id="float64")
    yield _rnn_case(g, GRU, proj=4, error="proj_size (4) is only supported for LSTM", id="gru-proj")


@cases("_thnn_fused_lstm_cell")
def _fused_lstm_cell(g):
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for bias in (True, False):
            batch, hidden = 3, 8
            yield Case(dict(input_gates=g.tensor((batch, 4 * hidden), dtype),
                            hidden_gates=g.tensor((batch, 4 * hidden), dtype),
                            cx=g.tensor((batch, hidden), dtype),
                            input_bias=g.tensor((4 * hidden,), dtype) if bias else None,
                            hidden_bias=g.tensor((4 * hidden,), dtype) if bias else None),
                       id=f"{str(dtype)[6:]}-{'bias' if bias else 'nobias'}")
    yield Case(dict(input_gates=g.tensor((2, 12)), hidden_gates=g.tensor((2, 12)), cx=g.tensor((2, 3)),
                    input_bias=g.tensor((12,)), hidden_bias=None),
               error="input_bias and hidden_bias must be given together", id="one-bias")


# mkldnn_rnn_layer against ATen's oneDNN kernel: float32 within the default tolerance (the
# products' summation order differs); bfloat16 to one rounding step of the dtype, since Kiln
# rounds h and c at the same points as oneDNN and differs only where a float32 pre-activation
# that differs in its last bits lands on the other side of a bfloat16 rounding.
MKLDNN_TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1e-2, 1e-2)}


def _aten_mkldnn_rnn_layer(**kwargs):
    """ATen's kernel hands data pointers to oneDNN as dense tensors, so it needs contiguous
    inputs (the decomposition makes them so; Kiln takes any layout). Without autograd, as a
    model runs: with it, ATen fills a training workspace the meta function does not describe."""
    kwargs = {k: v.contiguous() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    with torch.no_grad():
        return torch.ops.aten.mkldnn_rnn_layer.default(**kwargs)


def _mkldnn_rnn_results(kwargs, ref_kwargs, got, expected):
    """output, hy and cy against ATen's with their strides; the workspace as the meta function
    gives it (empty uint8: inference fills none, and ATen then returns an undefined tensor)."""
    from compare import assert_same

    rtol, atol = MKLDNN_TOLERANCE[expected[0].dtype]
    for i, name in enumerate(("output", "hy", "cy")):
        assert_same(got[i], expected[i], name, rtol, atol)
    assert got[3].dtype == torch.uint8 and tuple(got[3].shape) == (0,), f"workspace: {got[3].dtype} {tuple(got[3].shape)}"


def _mkldnn_lstm_case(g, *, dtype=torch.float32, seq=5, batch=3, input_size=6, hidden=8, reverse=False, bias=True,
                      batch_first=False, mode=LSTM, train=False, batch_sizes=(), id="", error=None, reference=None):
    bound = 1 / math.sqrt(hidden)
    gates = GATES[mode] * hidden
    w_ih = _uniform(g, (gates, input_size), dtype, bound)
    w_hh = _uniform(g, (gates, hidden), dtype, bound)
    if bias:
        b_ih, b_hh = _uniform(g, (gates,), dtype, bound), _uniform(g, (gates,), dtype, bound)
    else:
        # What the decomposition passes without biases: zeros shaped like the weights, never read.
        b_ih, b_hh = torch.zeros_like(w_ih), torch.zeros_like(w_hh)
    kwargs = dict(input=g.tensor((seq, batch, input_size), dtype), weight0=w_ih, weight1=w_hh, weight2=b_ih,
                  weight3=b_hh, hx_=_uniform(g, (1, batch, hidden), dtype, 1.0),
                  cx_=_uniform(g, (1, batch, hidden), dtype, 1.0), reverse=reverse, batch_sizes=list(batch_sizes),
                  mode=mode, hidden_size=hidden, num_layers=1, has_biases=bias, bidirectional=False,
                  batch_first=batch_first, train=train)
    if error is not None:
        return Case(kwargs, error=error, id=id)
    return Case(kwargs, reference=reference or _aten_mkldnn_rnn_layer, check=_mkldnn_rnn_results, id=id)


def _empty_sequence_reference(**kwargs):
    """No steps: the final states are the initial ones. (ATen's kernel leaves hy and cy
    uninitialised here, so it is no reference.)"""
    x, hx, cx = kwargs["input"], kwargs["hx_"], kwargs["cx_"]
    out = x.new_empty((x.shape[0], x.shape[1], kwargs["hidden_size"]))
    return out, hx.contiguous(), cx.contiguous(), None


@cases("mkldnn_rnn_layer")
def _mkldnn_rnn_layer(g):
    for dtype in (torch.float32, torch.bfloat16):
        name = str(dtype)[6:]
        yield _mkldnn_lstm_case(g, dtype=dtype, id=f"{name}-forward")
        yield _mkldnn_lstm_case(g, dtype=dtype, reverse=True, id=f"{name}-reverse")
        yield _mkldnn_lstm_case(g, dtype=dtype, bias=False, id=f"{name}-nobias")
        yield _mkldnn_lstm_case(g, dtype=dtype, bias=False, reverse=True, id=f"{name}-nobias-reverse")
        # Longer and wider: rounding to bfloat16 at every step must track oneDNN's over many steps.
        yield _mkldnn_lstm_case(g, dtype=dtype, seq=24, batch=4, input_size=20, hidden=32, id=f"{name}-long")
        yield _mkldnn_lstm_case(g, dtype=dtype, seq=24, batch=4, input_size=20, hidden=32, reverse=True,
                                id=f"{name}-long-reverse")
    # batch_first does not change ATen's kernel, which reads the input as sequence-major (the
    # decomposition transposes it first and passes False); the result's shape is the same either way.
    yield _mkldnn_lstm_case(g, batch_first=True, id="batch-first")
    yield _mkldnn_lstm_case(g, dtype=torch.bfloat16, batch_first=True, reverse=True, id="bfloat16-batch-first")
    yield _mkldnn_lstm_case(g, seq=1, batch=1, input_size=3, hidden=4, id="one-step")
    yield _mkldnn_lstm_case(g, seq=0, reference=_empty_sequence_reference, id="empty-sequence")
    # Refusals.
    yield _mkldnn_lstm_case(g, mode=GRU, error="mode 3 (GRU) is not supported", id="gru")
    yield _mkldnn_lstm_case(g, mode=RNN_TANH, error="mode 1 (RNN_TANH) is not supported", id="rnn-tanh")
    yield _mkldnn_lstm_case(g, train=True, error="train=True is not supported", id="train")
    yield _mkldnn_lstm_case(g, batch_sizes=(3, 3, 3, 3, 3), error="non-empty batch_sizes", id="packed")
    yield _mkldnn_lstm_case(g, dtype=torch.float64, error="float64 is not supported", id="float64")
    yield _mkldnn_lstm_case(g, dtype=torch.float16, error="float16 is not supported", id="float16")
