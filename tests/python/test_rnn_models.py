"""Recurrent models through kiln.export on the CPU, compared with eager on fresh inputs.

On the CPU, Inductor decomposes aten.lstm (float32 and bfloat16) into one
aten.mkldnn_rnn_layer per layer and direction, which the model library calls as
aoti_torch_cpu_mkldnn_rnn_layer (declared in torch's hand-written c/shim_cpu.h);
aten.gru has no such op and is unrolled into generated code and products.

The sequence length is static: torch.export (torch 2.11) cannot make it dynamic
for nn.LSTM or nn.GRU. It turns oneDNN off while tracing (export/_trace.py,
_ignore_backend_decomps), so the fake run of aten.lstm takes the decomposition
that unbinds the input over time steps, which specializes a Dim on the time axis
to the example's length ("marked T as dynamic but your code specialized it").
test_dynamic_sequence_length_is_specialized_by_torch_export records this, and
fails once torch can do it, so that the models here gain a test of two lengths.
"""

from __future__ import annotations

import os

import pytest
import torch

import kiln
from kiln.runtime import Module

# Kiln's allocations start as NaN, so an output element the op leaves unwritten fails.
os.environ["KILN_POISON_ALLOCATIONS"] = "1"

INPUT, HIDDEN, BATCH, STEPS, HEAD = 12, 16, 3, 7, 5
RNN_SHIM = "aoti_torch_cpu_mkldnn_rnn_layer"


class Tagger(torch.nn.Module):
    """A recurrent layer (batch-first) and a linear head over its per-step output; returns the head's
    output and the final states, so every result of the recurrent op reaches the outputs."""

    def __init__(self, cell: str, *, layers: int, bidirectional: bool, with_state: bool):
        super().__init__()
        rnn = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        self.rnn = rnn(INPUT, HIDDEN, num_layers=layers, bidirectional=bidirectional, batch_first=True)
        self.head = torch.nn.Linear(HIDDEN * (2 if bidirectional else 1), HEAD)
        self.cell, self.with_state = cell, with_state

    def forward(self, x, *state):
        if self.cell == "lstm":
            y, (h, c) = self.rnn(x, tuple(state) if self.with_state else None)
            return self.head(y), h, c
        y, h = self.rnn(x, state[0] if self.with_state else None)
        return self.head(y), h


# name -> (cell, layers, bidirectional, with_state)
MODELS = {
    "lstm-2layer-bidir-state": ("lstm", 2, True, True),
    "lstm-2layer-bidir": ("lstm", 2, True, False),
    "lstm-1layer": ("lstm", 1, False, False),
    "gru-2layer-bidir-state": ("gru", 2, True, True),
}


def _inputs(cell, layers, bidirectional, with_state, gen, dtype=torch.float32):
    x = torch.randn(BATCH, STEPS, INPUT, generator=gen).to(dtype)
    if not with_state:
        return (x,)
    shape = (layers * (2 if bidirectional else 1), BATCH, HIDDEN)
    states = [torch.randn(shape, generator=gen).to(dtype) for _ in range(2 if cell == "lstm" else 1)]
    return (x, *states)


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """Largest difference relative to the largest magnitude of the expected result."""
    return ((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-12)).item()


def _export_and_compare(tmp_path, name, spec, *, dtype, tolerance, expect_rnn_shim):
    torch.manual_seed(0)
    model = Tagger(spec[0], layers=spec[1], bidirectional=spec[2], with_state=spec[3]).eval().to(dtype)
    gen = torch.Generator().manual_seed(5)
    ep = torch.export.export(model, _inputs(*spec, gen, dtype))
    program = kiln.export({"forward": ep}, backend="cpu", verbose=False)
    imports = dict(program.methods["forward"].metadata)["shim_imports"].split(",")
    assert (RNN_SHIM in imports) == expect_rnn_shim, imports
    path = tmp_path / f"{name}.kiln"
    program.save(str(path))
    module = Module(str(path))
    module.load({})
    try:
        for _ in range(2):  # fresh inputs each time, none of them the export's
            inputs = _inputs(*spec, gen, dtype)
            outs = module.execute("forward", list(inputs), output="torch")
            with torch.no_grad():
                want = model(*inputs)
            assert len(outs) == len(want)
            for i, (got, w) in enumerate(zip(outs, want)):
                assert got.shape == w.shape and got.dtype == w.dtype, f"{name} output {i}: {got.shape} {got.dtype}"
                err = relative_error(got, w)
                assert err <= tolerance, f"{name} output {i}: relative error {err:.2e}"
    finally:
        module.close()


@pytest.mark.parametrize("name", MODELS)
def test_rnn_model_matches_eager(tmp_path, name):
    spec = MODELS[name]
    _export_and_compare(tmp_path, name, spec, dtype=torch.float32, tolerance=1e-5,
                        expect_rnn_shim=spec[0] == "lstm")


def test_bfloat16_lstm_matches_eager(tmp_path):
    _export_and_compare(tmp_path, "lstm-bf16", ("lstm", 2, True, True), dtype=torch.bfloat16, tolerance=2e-2,
                        expect_rnn_shim=True)


def test_dynamic_sequence_length_is_specialized_by_torch_export():
    model = Tagger("lstm", layers=1, bidirectional=False, with_state=False).eval()
    x = torch.randn(BATCH, STEPS, INPUT)
    steps = torch.export.Dim("steps", min=2, max=64)
    with pytest.raises(Exception, match="specialized"):
        torch.export.export(model, (x,), dynamic_shapes=({1: steps},))
