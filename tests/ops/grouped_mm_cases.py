"""Kiln's own op kiln::grouped_mm called directly (ctypes), and its cases: shared by the
CPU test (tests/ops/test_grouped_mm.py) and the GPU one (tests/gpu/test_moe.py).

tests/ops reads each function's signature from torch's generated header, which does
not declare Kiln's own ops; this one's signature is the declaration kiln_ops.py gives
AOTInductor: (AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle offs,
AtenTensorHandle* ret0)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import torch

from shim_caller import ShimLibrary


def call_grouped_mm(lib: ShimLibrary, device: str, x: torch.Tensor, w: torch.Tensor,
                    offs: torch.Tensor) -> torch.Tensor:
    """Kiln's aoti_torch_<device>_grouped_mm on borrowed handles; a torch copy of the result.
    Raises shim_caller.KilnError with Kiln's message on failure."""
    handles = [lib.handle(t) for t in (x, w, offs)]
    ret = ctypes.c_void_p()
    fn = getattr(lib.ops, f"aoti_torch_{device}_grouped_mm")
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.POINTER(ctypes.c_void_p)]
    try:
        lib.check(fn(*handles, ctypes.byref(ret)), f"aoti_torch_{device}_grouped_mm")
        out = lib.to_torch(ret, device)
        lib.delete(ret)
        return out
    finally:
        for h in handles:
            lib.delete(h)


def fallback(x, w, offs):
    """transformers::grouped_mm_fallback's semantics (zeros past offs[-1]), without transformers."""
    out = torch.zeros(x.shape[0], w.shape[2], dtype=x.dtype, device=x.device)
    start = 0
    for g, end in enumerate(offs.tolist()):
        if end > start:
            out[start:end] = x[start:end] @ w[g]
        start = end
    return out


@dataclass
class GroupedCase:
    name: str
    x: torch.Tensor
    w: torch.Tensor
    offs: torch.Tensor


def random_offs(gen: torch.Generator, s: int, g: int, empty: int, tail: int, dtype) -> torch.Tensor:
    """Non-decreasing ends of g groups over the first s - tail rows, `empty` of them empty."""
    rows = s - tail
    counts = torch.zeros(g, dtype=torch.int64)
    live = torch.randperm(g, generator=gen)[: max(g - empty, 0)]
    if rows > 0 and len(live) > 0:
        picks = live[torch.randint(len(live), (rows,), generator=gen)]
        counts += torch.bincount(picks, minlength=g)
    return torch.cumsum(counts, 0).to(dtype)


def cases(dtype: torch.dtype, device: str = "cpu") -> list[GroupedCase]:
    gen = torch.Generator().manual_seed(7 if dtype == torch.float32 else 8)

    def randn(*shape):
        return torch.randn(*shape, generator=gen).to(dtype).to(device)

    out = []
    # (name, S, K, N, G, empty groups, rows past the end, weight layout, input layout, offs dtype)
    specs = [
        ("prefill-linear-weights", 70, 48, 40, 6, 2, 0, "nk", "dense", torch.int32),
        ("prefill-kn-weights", 70, 48, 40, 6, 1, 5, "kn", "dense", torch.int64),
        ("decode", 4, 32, 24, 8, 5, 0, "nk", "dense", torch.int32),
        ("decode-tail", 6, 32, 24, 8, 5, 2, "kn", "dense", torch.int32),
        ("strided-input", 33, 40, 16, 4, 1, 3, "nk", "strided", torch.int64),
        ("one-group", 17, 16, 8, 1, 0, 0, "nk", "dense", torch.int32),
        ("all-empty", 5, 16, 8, 3, 3, 5, "nk", "dense", torch.int32),
        ("no-rows", 0, 16, 8, 3, 3, 0, "nk", "dense", torch.int32),
        ("large-tiles", 150, 72, 136, 5, 1, 7, "nk", "dense", torch.int32),
    ]
    for name, s, k, n, g, empty, tail, wl, xl, odt in specs:
        if wl == "nk":  # transformers' experts: [G, N, K] storage, passed transposed
            w = randn(g, n, k).transpose(1, 2)
        else:
            w = randn(g, k, n)
        x = randn(s, 2 * k)[:, ::2] if xl == "strided" else randn(s, k)
        offs = random_offs(gen, s, g, empty, tail, odt).to(device)
        out.append(GroupedCase(name, x, w, offs))
    return out


def bad_offs(device: str = "cpu") -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor, str]]:
    """(name, x, w, offs, the error text naming the value) for offs the CPU op must refuse."""
    x = torch.randn(6, 8, device=device)
    w = torch.randn(3, 8, 4, device=device)
    return [
        ("decreasing", x, w, torch.tensor([4, 2, 6], dtype=torch.int32, device=device), r"offs\[1\] = 2"),
        ("past-the-rows", x, w, torch.tensor([1, 2, 9], dtype=torch.int64, device=device), r"offs\[2\] = 9"),
        ("negative", x, w, torch.tensor([-1, 2, 6], dtype=torch.int32, device=device), r"offs\[0\] = -1"),
    ]
