"""Comparing Kiln's results with ATen's: values within a dtype's tolerance,
and the same dtype, shape and strides (a model library indexes a fallback's
result with the strides ATen's meta function gave it at compile time)."""

from __future__ import annotations

import torch

TOLERANCES = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-10, 1e-10),
    torch.float16: (2e-2, 2e-3),
    torch.bfloat16: (2e-2, 2e-2),
    torch.complex64: (1e-5, 1e-5),
    torch.complex128: (1e-10, 1e-10),
}

FLOAT8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def strides_equivalent(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal strides on every dimension that has more than one element."""
    if a.numel() <= 1:
        return True
    return all(sa == sb for n, sa, sb in zip(a.shape, a.stride(), b.stride()) if n > 1)


def assert_same(kiln: torch.Tensor, ref: torch.Tensor, what: str, rtol=None, atol=None, strides=True) -> None:
    assert kiln is not None, f"{what}: Kiln returned no tensor"
    assert kiln.dtype == ref.dtype, f"{what}: dtype {kiln.dtype}, ATen {ref.dtype}"
    assert tuple(kiln.shape) == tuple(ref.shape), f"{what}: shape {tuple(kiln.shape)}, ATen {tuple(ref.shape)}"
    if strides:
        assert strides_equivalent(kiln, ref), f"{what}: strides {kiln.stride()}, ATen {ref.stride()}"
    k, r = kiln.cpu(), ref.cpu()
    if ref.dtype in TOLERANCES:
        d_rtol, d_atol = TOLERANCES[ref.dtype]
        torch.testing.assert_close(k, r, rtol=rtol if rtol is not None else d_rtol,
                                   atol=atol if atol is not None else d_atol, equal_nan=True, msg=lambda m: f"{what}: {m}")
    elif ref.dtype in FLOAT8:
        # torch.equal has no float8 kernel; float8 widens to float32 exactly, so this is exact equality.
        torch.testing.assert_close(k.float(), r.float(), rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{what}: {m}")
    else:
        assert torch.equal(k, r), f"{what}: values differ\nKiln {k}\nATen {r}"
