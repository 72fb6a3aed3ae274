"""Convolutions and linear layers over a program's own weights on the CPU.

The CPU exporter stores convolution weights channels-last (passes/conv_weight_layout.py), so
the compiled code reads them in place instead of copying them each call; Parameters keep their
type in the weights table even when their FQN starts with a digit (an ``nn.Sequential``
layer), which Inductor's own naming misses; and the runtime packs each constant weight once
for its GEMM (src/devices/cpu/packed_gemm.h, packed_weights.h) and keeps the packing with the
weights: convolutions, and linear layers over 9 rows or more (fewer stream the weight). Checked
against eager PyTorch on fresh inputs, over several calls (the first packs, the rest reuse),
one and two threads, two methods sharing the weights, and inputs that are channels-last,
strided and offset views: output channel counts that fill no whole panel, 1x1 convolutions
read in place, strides, dilation, groups, no bias, 1-d and 3-d convolutions; linears with
and without bias over a dynamic number of rows on both sides of 9.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

import kiln
from kiln.runtime import Module


class Convs(nn.Module):
    def __init__(self):
        super().__init__()
        self.partial_panel = nn.Conv2d(6, 40, 3, padding=1)
        self.pointwise = nn.Conv2d(6, 64, 1)
        self.strided = nn.Conv2d(6, 33, 3, stride=2, padding=2, dilation=2, bias=False)
        self.grouped = nn.Conv2d(6, 12, 3, padding=1, groups=3)
        self.wide = nn.Conv2d(40, 70, 5, padding=2)
        self.conv1d = nn.Conv1d(5, 36, 3, padding=1)
        self.conv3d = nn.Conv3d(4, 20, 3, padding=1)

    def forward(self, image, signal, volume):
        a = torch.relu(self.partial_panel(image))
        return (a, self.pointwise(image), self.strided(image), self.grouped(image), self.wide(a),
                self.conv1d(signal), self.conv3d(volume))


class Numbered(nn.Module):
    """Convs registered under the name "0", as nn.Sequential names its layers."""

    def __init__(self):
        super().__init__()
        self.add_module("0", Convs())

    def forward(self, *args):
        return getattr(self, "0")(*args)


class Linears(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(48, 100)
        self.down = nn.Linear(100, 37, bias=False)

    def forward(self, x):
        return self.down(torch.relu(self.up(x))), self.up(x[:, 0])


def inputs(batch: int, generator: torch.Generator):
    return (torch.randn(batch, 6, 11, 13, generator=generator), torch.randn(batch, 5, 17, generator=generator),
            torch.randn(batch, 4, 5, 6, 7, generator=generator))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    model = Numbered().eval()  # FQNs such as "0.wide.weight"
    g = torch.Generator().manual_seed(1)
    methods = {"forward": torch.export.export(model, inputs(2, g)), "single": torch.export.export(model, inputs(1, g))}
    linears = Linears().eval()
    rows = torch.export.Dim("rows", min=1, max=64)
    methods["linears"] = torch.export.export(linears, (torch.randn(2, 12, 48),), dynamic_shapes=({1: rows},))
    program = kiln.export(methods, backend="cpu", verbose=False)
    path = tmp_path_factory.mktemp("packed_weights") / "weights.kiln"
    program.save(str(path))
    return (model, linears), program, path


def test_weights_are_parameters_stored_channels_last(exported):
    _, program, _ = exported
    for name in ("forward", "single"):
        method = program.methods[name]
        rows = [line.split("\t") for line in method.metadata["aoti_constants"].splitlines()]
        assert rows
        types = {row[1]: row[3] for row in rows}
        assert set(types.values()) == {"Parameter"}, types
        for row in rows:
            shape = [int(v) for v in row[7].split(",")]
            strides = tuple(int(v) for v in row[8].split(","))
            if len(shape) in (4, 5):
                fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
                want = torch.empty(shape).contiguous(memory_format=fmt).stride()
                assert strides == want, (row[1], strides, want)


def check(got, want, what: str) -> None:
    assert len(got) == len(want)
    for i, (o, w) in enumerate(zip(got, want)):
        w = w.numpy()
        assert o.shape == w.shape
        err = float(np.abs(np.asarray(o) - w).max() / np.abs(w).max())
        assert err <= 1e-5, f"{what}, output {i}: relative error {err:.2e}"


def views(x: torch.Tensor, kind: str) -> torch.Tensor:
    if kind == "contiguous":
        return x
    if kind == "channels_last" and x.dim() in (4, 5):
        return x.contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
    # An offset, strided view: every other element of a larger buffer, past a leading element.
    big = torch.full((2 * x.numel() + 1,), float("nan"))
    view = big[1:].as_strided(x.shape, [2 * s for s in x.contiguous().stride()], 1)
    view.copy_(x)
    return view


@pytest.mark.parametrize("threads", [1, 2])
def test_matches_eager_over_calls_layouts_and_methods(exported, threads):
    (model, linears), _, path = exported
    module = Module(str(path))
    module.load({"aoti": {"num_threads": threads}})
    g = torch.Generator().manual_seed(100 + threads)
    try:
        for call, (method, batch, kind) in enumerate([("forward", 2, "contiguous"), ("forward", 2, "channels_last"),
                                                      ("single", 1, "strided"), ("forward", 2, "strided"),
                                                      ("single", 1, "contiguous")]):
            xs = inputs(batch, g)
            got = module.execute(method, [views(x, kind) for x in xs])
            with torch.no_grad():
                want = model(*xs)
            assert len(got) == len(want)
            check(got, want, f"call {call} ({method}, {kind})")
        # Rows of the linears: 2 x 3 = 6 (streamed), 2 x 5 = 10, 2 x 29 = 58 (packed); the second output
        # has 2 rows.
        for seq in (3, 5, 29, 5):
            x = torch.randn(2, seq, 48, generator=g)
            got = module.execute("linears", [x])
            with torch.no_grad():
                want = linears(x)
            check(got, want, f"linears over {2 * seq} rows")
    finally:
        module.close()


def test_same_results_with_packing_off(exported, tmp_path):
    """Setting cpu_pack_weights off (KILN_CPU_PACK_WEIGHTS, read once per process) sends the same
    products to OpenBLAS: a second process gives the eager results too."""
    (model, linears), _, path = exported
    g = torch.Generator().manual_seed(7)
    xs = inputs(2, g)
    x = torch.randn(2, 29, 48, generator=g)
    for i, t in enumerate(xs):
        np.save(tmp_path / f"x{i}.npy", t.numpy())
    np.save(tmp_path / "lin.npy", x.numpy())
    script = f"""
import numpy as np
from kiln.runtime import Module
m = Module({str(path)!r}); m.load()
xs = [np.load({str(tmp_path)!r} + f"/x{{i}}.npy") for i in range(3)]
for i, o in enumerate(m.execute("forward", xs)): np.save({str(tmp_path)!r} + f"/out{{i}}.npy", o)
for i, o in enumerate(m.execute("linears", [np.load({str(tmp_path)!r} + "/lin.npy")])):
    np.save({str(tmp_path)!r} + f"/lin_out{{i}}.npy", o)
"""
    env = dict(os.environ, KILN_CPU_PACK_WEIGHTS="false")
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    with torch.no_grad():
        want, want_lin = model(*xs), linears(x)
    check([np.load(tmp_path / f"out{i}.npy") for i in range(len(want))], want, "packing off, convolutions")
    check([np.load(tmp_path / f"lin_out{i}.npy") for i in range(len(want_lin))], want_lin, "packing off, linears")
