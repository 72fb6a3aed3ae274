"""What an op case is, and the helpers cases are written with.

A case is the ATen keyword arguments of one call, written once and run against
every device whose header declares the op. Cases are registered per shim suffix
(``cumsum``, ``add_Tensor``, ``scatter_reduce_two_out``) with ``@cases``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
COMPLEX = (torch.complex64, torch.complex128)


@dataclass
class Case:
    kwargs: dict
    # Tolerances override the dtype's defaults (see compare.py).
    rtol: float | None = None
    atol: float | None = None
    # A substring the error message must contain: the call must fail cleanly.
    error: str | None = None
    # For an error a device op can only detect by reading data back to the host
    # (CUDA ops never synchronise the stream): on devices other than the CPU the
    # call must succeed, and this checks the documented result instead, as
    # without_readback(kwargs=..., got=[results]) on CPU copies.
    without_readback: Callable | None = None
    # Returns whose values depend on tie-breaking ATen does not define (e.g. the
    # indices of equal elements) are compared through `check` instead.
    check: Callable | None = None
    # Computes the expected results from the ATen keyword arguments where ATen's
    # own kernel is not a valid reference for every layout (e.g. a CPU kernel
    # that assumes a unit last-dim stride Inductor always gives it).
    reference: Callable | None = None
    # Layout variants (strided, offset inputs) run unless the case opts out
    # (e.g. an op whose contract needs contiguous input).
    layouts: bool = True
    id: str = ""
    compare_strides: bool = True
    # The argument whose memory ATen's result may share (a view op's input).
    # Kiln's result must share it at the same place where ATen's does, and
    # must not where ATen's is a copy (e.g. reshape of a non-viewable layout).
    alias: str | None = None
    # For in-place ops that change what `self` views (resize_, set_): compare
    # Kiln's handle for `self` after the call (dtype, shape, strides, values)
    # with ATen's `self`, as the op's result; `check`, if given, receives it as
    # got[0] and ATen's `self` as `expected`.
    self_after: bool = False


CASES: dict[str, Callable[["Gen"], Iterable[Case]]] = {}


def cases(*names: str):
    """Registers a generator of Cases for the shim suffixes `names`."""
    def register(fn):
        for name in names:
            if name in CASES:
                raise ValueError(f"cases for {name} registered twice")
            CASES[name] = fn
        return fn
    return register


class Gen:
    """Seeded random inputs, created on the device under test."""

    def __init__(self, seed: int, device: str):
        self.g = torch.Generator().manual_seed(seed)
        self.device = device

    def tensor(self, shape, dtype=torch.float32, low=None, high=None) -> torch.Tensor:
        shape = tuple(shape)
        if dtype == torch.bool:
            t = torch.rand(shape, generator=self.g) < 0.5
        elif dtype.is_floating_point:
            t = torch.randn(shape, generator=self.g, dtype=torch.float64)
            if low is not None:
                t = torch.rand(shape, generator=self.g, dtype=torch.float64) * (high - low) + low
            t = t.to(dtype)
        elif dtype.is_complex:
            t = torch.randn(shape, generator=self.g, dtype=dtype)
        else:
            lo = -20 if low is None else low
            hi = 20 if high is None else high
            if dtype == torch.uint8:
                lo = max(lo, 0)
            t = torch.randint(lo, hi, shape, generator=self.g).to(dtype)
        return t.to(self.device)

    def distinct(self, shape, dtype=torch.float32) -> torch.Tensor:
        """Values without ties (a permutation, scaled), so orderings are unique."""
        n = 1
        for s in shape:
            n *= s
        perm = torch.randperm(n, generator=self.g).reshape(tuple(shape))
        if dtype.is_floating_point:
            return ((perm.to(torch.float64) - n / 2) / 4).to(dtype).to(self.device)
        if dtype == torch.uint8:
            perm = perm % 256
        return (perm - (0 if dtype == torch.uint8 else n // 2)).to(dtype).to(self.device)

    def index(self, shape, high) -> torch.Tensor:
        return torch.randint(0, high, tuple(shape), generator=self.g).to(self.device)

    def out_like(self, t: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(t)
