"""Kiln's own op kiln::int8_linear on the CPU (aoti_torch_cpu_int8_linear, called through
ctypes; torch's header does not declare it): x [..., K] @ (int8 weight [N, K])^T times a scale
per output, against a reference written here with torch ops (float32 sums, then the scale,
rounded once to x's dtype), over both paths (few rows streaming the weight, more rows through
the GEMM), x of any rank and layout, empty shapes and the argument errors. The GPU suite runs
the same cases on CUDA (tests/gpu/test_quantized_linear.py)."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest
import torch

os.environ["KILN_POISON_ALLOCATIONS"] = "1"

from shim_caller import KilnError, ShimLibrary  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
IDS = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}


@pytest.fixture(scope="module")
def lib():
    path = os.environ.get("KILN_LIBRARY", str(ROOT / "build" / "libkiln.so"))
    if not Path(path).exists():
        pytest.fail(f"libkiln.so not found at {path}: build first or set KILN_LIBRARY")
    return ShimLibrary(path)


def call_int8_linear(lib: ShimLibrary, x, weight, scales, device: str = "cpu") -> torch.Tensor:
    handles = [lib.handle(t) for t in (x, weight, scales)]
    ret = ctypes.c_void_p()
    name = f"aoti_torch_{device}_int8_linear"
    fn = getattr(lib.ops, name)
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.POINTER(ctypes.c_void_p)]
    try:
        lib.check(fn(*handles, ctypes.byref(ret)), name)
        out = lib.to_torch(ret, device)
        lib.delete(ret)
        return out
    finally:
        for h in handles:
            lib.delete(h)


def reference(x, weight, scales):
    return ((x.float() @ weight.float().T) * scales.float()).to(x.dtype)


def make(rows, k, n, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k, generator=g).to(dtype)
    weight = torch.randint(-127, 128, (n, k), generator=g, dtype=torch.int32).to(torch.int8)
    scales = (torch.rand(n, generator=g) * 0.01 + 0.001).to(dtype)
    return x, weight, scales


def check(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype and got.is_contiguous()
    if want.numel() == 0:
        return
    scale = want.float().abs().max().item()
    tol = dict(rtol=1e-5, atol=1e-4 * scale) if want.dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2 * scale)
    torch.testing.assert_close(got, want, **tol)


@pytest.mark.parametrize("rows", [1, 2, 4, 5, 16, 17, 300])
@pytest.mark.parametrize("k,n", [(64, 96), (256, 40), (48, 7), (2048, 600)])
@pytest.mark.parametrize("dtype", DTYPES, ids=[IDS[d] for d in DTYPES])
def test_rows_and_dtypes(lib, rows, k, n, dtype):
    x, weight, scales = make(rows, k, n, dtype, seed=rows + k)
    check(call_int8_linear(lib, x, weight, scales), reference(x, weight, scales))


@pytest.mark.parametrize("rows", [1, 3, 20])
def test_three_dim_and_strided_x(lib, rows):
    x, weight, scales = make(2 * rows, 128, 33, torch.bfloat16)
    x3 = x.reshape(2, rows, 128)
    got = call_int8_linear(lib, x3, weight, scales)
    assert got.shape == (2, rows, 33)
    check(got, reference(x3, weight, scales))
    g = torch.Generator().manual_seed(rows)
    xt = torch.randn(130, 2, rows, generator=g).permute(1, 2, 0)[:, :, 1:129]  # no row stride of its own
    assert not xt.is_contiguous()
    check(call_int8_linear(lib, xt, weight.float().to(torch.int8), scales.float()), reference(xt, weight, scales.float()))


def test_one_dim_x_and_strided_weight(lib):
    x, weight, scales = make(1, 64, 10)
    wide = torch.zeros(10, 128, dtype=torch.int8)
    wide[:, ::2] = weight
    check(call_int8_linear(lib, x[0], wide[:, ::2], scales), reference(x[0], weight, scales))


def test_empty(lib):
    for rows, k, n in ((0, 64, 8), (3, 64, 0), (2, 0, 5)):
        x, weight, scales = make(rows, k, n)
        got = call_int8_linear(lib, x, weight, scales)
        assert got.shape == (rows, n)
        assert torch.equal(got, torch.zeros(rows, n))


def errors():
    x, weight, scales = make(2, 64, 6)
    return [
        ("weight-dtype", x, weight.to(torch.uint8), scales, r"argument 'weight' has dtype uint8, expected int8"),
        ("weight-shape", x, weight[:, :32], scales, r"argument 'weight' has shape \[6, 32\], expected \[N, 64\]"),
        ("scales-shape", x, weight, scales[:5], r"argument 'scales' has shape \[5\], expected \[6\]"),
        ("scales-dtype", x, weight, scales.to(torch.bfloat16), r"argument 'scales' has dtype bfloat16, expected x's"),
        ("x-dtype", x.double(), weight, scales.double(), r"argument 'x' has dtype float64"),
        ("x-scalar", torch.tensor(1.0), weight, scales, r"argument 'x' must have at least 1 dimension"),
    ]


@pytest.mark.parametrize("name,x,weight,scales,message", errors(), ids=[e[0] for e in errors()])
def test_errors_name_the_argument(lib, name, x, weight, scales, message):
    with pytest.raises(KilnError, match=message):
        call_int8_linear(lib, x, weight, scales)
