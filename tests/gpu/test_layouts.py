"""Inputs of any layout on a GPU: the CUDA side of tests/python/test_input_layouts.py.

Exports, with kiln.export(..., backend="cuda") on this machine's torch, the models of
tests/python/layout_cases.py: the two-input model (a matmul, elementwise ops, a reduction;
dynamic rows) in float32, float32 compiled for a column-major ``b`` (a transposed example),
bfloat16, float16 and int64, a convolution exported with a channels_last example, and a method
that adds into its first input in place. Then runs each in Kiln on fresh random inputs in every
layout of layout_cases.LAYOUTS (transposed, Fortran order, every other column or row,
broadcast with stride 0, offset views, a view one element past an aligned allocation,
contiguous) as host tensors (torch and numpy) and as device tensors, with and without
aoti.cuda_graphs, and compares with eager PyTorch on the GPU on the same logical values. The
method that writes its input in place must update a device cache in the compiled layout and
refuse, by name, a transposed or misaligned one.

Table: gpu_layouts. KILN_GPU_DEVICE=cpu runs the same steps on the CPU (host inputs only).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gpu_support
import kiln
from kiln.runtime import KilnError, Module
from layout_cases import (COLS, LAYOUTS, OUT, TOLERANCE, Accumulate, Conv, eager, export_mixed, model_for,
                          numpy_layout, random_tensor, relative_error, torch_layout)

DEVICE = gpu_support.DEVICE
ON_GPU = DEVICE == "cuda"
ROWS = 7
DTYPES = ("float32", "bfloat16", "float16", "int64")
SECTION = gpu_support.section("gpu_layouts", gpu_support.check_table("Inputs of every layout against eager"))


def compare(got, want, rtol: float):
    errs = [relative_error(torch.as_tensor(g) if not isinstance(g, torch.Tensor) else g, w)
            for g, w in zip(got, want)]
    err = max(errs) if errs else float("inf")
    ok = len(got) == len(want) and err <= rtol
    return err, ok, "" if ok else f"{len(got)} outputs for {len(want)}; errors {errs}"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(the program holding every method, the conv model for its eager reference)."""
    torch.manual_seed(0)
    methods = {}
    for dtype in DTYPES:
        methods[dtype] = export_mixed(dtype, DEVICE)
    methods["float32_colmajor_b"] = export_mixed("float32", DEVICE, transposed_b=True)
    conv = Conv().eval().to(DEVICE)
    image = torch.randn(2, 3, 8, 8, device=DEVICE).contiguous(memory_format=torch.channels_last)
    methods["conv"] = torch.export.export(conv, (image,))
    zeros = torch.zeros(4, 6, device=DEVICE)
    methods["accumulate"] = torch.export.export(Accumulate(), (zeros, zeros.clone()))
    path = tmp_path_factory.mktemp("layouts") / "layouts.kiln"
    kiln.export(methods, backend=DEVICE, verbose=True).save(path)
    return path, conv


@pytest.fixture(scope="module")
def module(exported):
    m = Module(exported[0])
    m.load()
    yield m
    m.close()


@pytest.fixture(scope="module")
def graphs_module(exported):
    m = Module(exported[0])
    m.load({"aoti": {"cuda_graphs": True}})
    yield m
    m.close()


# ---- the two-input model in every layout -----------------------------------------------------


def _host_torch(x, layout):
    view, logical = torch_layout(x, layout)
    return view, logical.to(DEVICE)


def _host_numpy(x, layout):
    view, logical = numpy_layout(x.numpy(), layout)
    return view, torch.from_numpy(np.ascontiguousarray(logical)).to(DEVICE)


def _device_torch(x, layout):
    return torch_layout(x, layout, DEVICE)


ORIGINS = {"host torch": _host_torch, "host numpy": _host_numpy, "device torch": _device_torch}


def origins(dtype: str) -> list[str]:
    """Where inputs come from: numpy has no bfloat16, and device tensors need a GPU."""
    return ["host torch"] + (["host numpy"] if dtype != "bfloat16" else []) + (["device torch"] if ON_GPU else [])


def run_mixed(module: Module, method: str, dtype: str, origin: str, layout: str, repeats: int = 1):
    """`method` on inputs of `layout` from `origin`, `repeats` calls on new values, against eager."""
    model = model_for(dtype)
    make = ORIGINS[origin]
    li = LAYOUTS.index(layout)
    worst = 0.0
    for r in range(repeats):
        seed = 1000 * li + 10 * r
        a = random_tensor((ROWS, COLS), dtype, seed)
        b = random_tensor((COLS, OUT), dtype, seed + 1)
        (va, la), (vb, lb) = make(a, layout), make(b, layout)
        got = module.execute(method, [va, vb], output="torch")
        err, ok, note = compare(got, eager(model, la, lb), TOLERANCE[dtype])
        worst = max(worst, err)
        if not ok:
            return worst, False, f"call {r}: {note}"
    return worst, True, ""


# (method, dtype, label): the method compiled for a column-major b runs float32 values too.
MIXED = [(dtype, dtype, dtype) for dtype in DTYPES] + [("float32_colmajor_b", "float32", "float32 column-major b")]
MIXED_CASES = [(m, dtype, label, origin, layout) for m, dtype, label in MIXED
               for origin in origins(dtype) for layout in LAYOUTS]


@pytest.mark.parametrize("method, dtype, label, origin, layout", MIXED_CASES,
                         ids=[f"{m}-{o.replace(' ', '_')}-{lay}" for m, _, _, o, lay in MIXED_CASES])
def test_mixed(module, method, dtype, label, origin, layout):
    gpu_support.checked(SECTION, f"{label} {origin} {layout}",
                        lambda: run_mixed(module, method, dtype, origin, layout))


GRAPH_CASES = [(origin, layout) for origin in origins("float32") for layout in LAYOUTS]


@gpu_support.cuda_only
@pytest.mark.parametrize("origin, layout", GRAPH_CASES, ids=[f"{o.replace(' ', '_')}-{lay}" for o, lay in GRAPH_CASES])
def test_mixed_cuda_graphs(graphs_module, origin, layout):
    # Graphs are keyed by the inputs after they are laid out: every layout of a shape shares a
    # recording, and replays read the views they are given.
    gpu_support.checked(SECTION, f"float32 cuda_graphs {origin} {layout}",
                        lambda: run_mixed(graphs_module, "float32", "float32", origin, layout, repeats=3))


def test_transposed_example_records_dim_order(module):
    colmajor = module.method_meta("float32_colmajor_b").inputs[1].dim_order
    gpu_support.checked(SECTION, "transposed example records dim order (1, 0)",
                        lambda: (None, colmajor == (1, 0), f"dim_order {colmajor}"))


# ---- a convolution compiled for channels_last ------------------------------------------------


def test_conv_records_channels_last(module):
    order = module.method_meta("conv").inputs[0].dim_order
    gpu_support.checked(SECTION, "conv records channels_last", lambda: (None, order == (0, 2, 3, 1), f"dim_order {order}"))


def conv_input(what: str, x: torch.Tensor):
    if what == "host contiguous":
        return x
    if what == "host channels_last":
        return x.contiguous(memory_format=torch.channels_last)
    if what == "host numpy":
        return x.numpy()
    d = x.to(DEVICE)
    if what == "device contiguous":
        return d
    if what == "device channels_last":
        return d.contiguous(memory_format=torch.channels_last)
    if what == "device sliced":
        sliced = torch.full((2, 3, 8, 16), float("nan"), device=DEVICE)
        sliced[..., ::2] = d
        return sliced[..., ::2]
    raise AssertionError(what)


CONV_INPUTS = ["host contiguous", "host channels_last", "host numpy"] + (
    ["device contiguous", "device channels_last", "device sliced"] if ON_GPU else [])


@pytest.mark.parametrize("what", CONV_INPUTS, ids=[w.replace(" ", "_") for w in CONV_INPUTS])
def test_conv(module, exported, what):
    x = random_tensor((2, 3, 8, 8), "float32", 7)
    want = eager(exported[1], x.to(DEVICE))
    gpu_support.checked(SECTION, f"conv {what}",
                        lambda: compare(module.execute("conv", [conv_input(what, x)], output="torch"), want, 1e-4))


# ---- a method that writes its input in place --------------------------------------------------


def _accumulate_values():
    return random_tensor((4, 6), "float32", 90).to(DEVICE), random_tensor((4, 6), "float32", 91).to(DEVICE)


def test_accumulate_updates_the_cache_in_place(module):
    start, x = _accumulate_values()

    def in_layout():
        # A view two rows into its storage: 48 bytes, so still 16-byte aligned
        # (one row, 24 bytes, would be refused as misaligned on a GPU).
        base = torch.full((6, 6), -7.0, device=DEVICE)
        base[2:] = start
        cache = base[2:]
        (got,) = module.execute("accumulate", [cache, x], output="torch")
        err_cache = relative_error(cache, start + x)
        err_out = relative_error(got.to(DEVICE), ((start + x) * 2).sum(dim=1))
        ok = err_cache <= 1e-6 and err_out <= 1e-5 and bool((base[:2] == -7.0).all())
        return max(err_cache, err_out), ok, "" if ok else "the in-place update did not reach the caller's cache"

    gpu_support.checked(SECTION, "accumulate: cache in its layout, updated in place", in_layout)


def refused_cache(kind: str, start: torch.Tensor):
    """(a cache the method must refuse, the words the refusal must hold)."""
    if kind == "transposed" and not ON_GPU:
        return start.t().contiguous().t(), "in place"
    if kind == "transposed":
        transposed = torch.empty(6, 4, device=DEVICE).t()
        transposed.copy_(start)
        return transposed, "in place"
    if kind == "misaligned":
        flat = torch.zeros(25, device=DEVICE)
        return flat[1:].view(4, 6), "16-byte boundary"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["transposed", "misaligned"] if ON_GPU else ["transposed"])
def test_accumulate_refuses_a_cache_in_another_layout(module, kind):
    start, x = _accumulate_values()
    view, expected = refused_cache(kind, start)

    def refused():
        try:
            module.execute("accumulate", [view, x])
        except KilnError as e:
            ok = e.status == "InvalidArgument" and "'cache'" in e.message and expected in e.message
            return None, ok, e.message[:200]
        return None, False, "not refused"

    where = "device cache" if ON_GPU else "cache"
    gpu_support.checked(SECTION, f"accumulate: {kind} {where} refused", refused)
