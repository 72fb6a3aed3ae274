"""Kiln's own op kiln::int8_linear on the CPU (aoti_torch_cpu_int8_linear, called through
ctypes; torch's header does not declare it): x [..., K] @ W^T with W = int8 codes times a
scale per group of inputs (or per row), against a reference written here with torch ops
(float32 sums rounded once to x's dtype), over both paths (few rows streaming the weight,
more rows through the GEMM), group sizes, x of any rank and layout, empty shapes and the
argument errors. The GPU suite runs the same cases on CUDA (tests/gpu/test_quantized_linear.py)."""

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


def call_int8_linear(lib: ShimLibrary, x, weight, scales, group: int, device: str = "cpu") -> torch.Tensor:
    handles = [lib.handle(t) for t in (x, weight, scales)]
    ret = ctypes.c_void_p()
    name = f"aoti_torch_{device}_int8_linear"
    fn = getattr(lib.ops, name)
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]
    try:
        lib.check(fn(*handles, group, ctypes.byref(ret)), name)
        out = lib.to_torch(ret, device)
        lib.delete(ret)
        return out
    finally:
        for h in handles:
            lib.delete(h)


def reference(x, weight, scales, group):
    w = weight.float() * scales.float().repeat_interleave(group, dim=1)
    return (x.float() @ w.T).to(x.dtype)


def make(rows, k, n, dtype=torch.float32, seed=0, group=None):
    """x, codes and scales [n, k / group] (group None: one a row); returns the group too."""
    group = k if group is None else group
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k, generator=g).to(dtype)
    weight = torch.randint(-127, 128, (n, k), generator=g, dtype=torch.int32).to(torch.int8)
    scales = (torch.rand(n, max(k // group, 0) if group else 0, generator=g) * 0.01 + 0.001).to(dtype)
    return x, weight, scales, group


def check(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype and got.is_contiguous()
    if want.numel() == 0:
        return
    scale = want.float().abs().max().item()
    tol = dict(rtol=1e-5, atol=1e-4 * scale) if want.dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2 * scale)
    torch.testing.assert_close(got, want, **tol)




@pytest.mark.parametrize("rows", [1, 2, 4, 5, 16, 17, 300])
@pytest.mark.parametrize("k,n,group", [(64, 96, None), (256, 40, None), (48, 7, None), (2048, 600, None),
                                       (256, 40, 128), (256, 40, 32), (2048, 600, 128), (384, 33, 16),
                                       (96, 20, 48), (64, 9, 8)])
@pytest.mark.parametrize("dtype", DTYPES, ids=[IDS[d] for d in DTYPES])
def test_rows_groups_and_dtypes(lib, rows, k, n, group, dtype):
    x, weight, scales, group = make(rows, k, n, dtype, seed=rows + k, group=group)
    check(call_int8_linear(lib, x, weight, scales, group), reference(x, weight, scales, group))


@pytest.mark.parametrize("rows", [1, 3, 20])
@pytest.mark.parametrize("group", [None, 32])
def test_three_dim_and_strided_x(lib, rows, group):
    x, weight, scales, group = make(2 * rows, 128, 33, torch.bfloat16, group=group)
    x3 = x.reshape(2, rows, 128)
    got = call_int8_linear(lib, x3, weight, scales, group)
    assert got.shape == (2, rows, 33)
    check(got, reference(x3, weight, scales, group))
    g = torch.Generator().manual_seed(rows)
    xt = torch.randn(130, 2, rows, generator=g).permute(1, 2, 0)[:, :, 1:129]  # no row stride of its own
    assert not xt.is_contiguous()
    check(call_int8_linear(lib, xt, weight, scales.float(), group), reference(xt, weight, scales.float(), group))


@pytest.mark.parametrize("group", [None, 16])
def test_one_dim_x_and_strided_operands(lib, group):
    x, weight, scales, group = make(1, 64, 10, group=group)
    wide = torch.zeros(10, 128, dtype=torch.int8)
    wide[:, ::2] = weight
    st = torch.zeros(scales.shape[1], 10).t()  # scales with a column-major layout
    st.copy_(scales)
    check(call_int8_linear(lib, x[0], wide[:, ::2], st, group), reference(x[0], weight, scales, group))


def test_empty(lib):
    for rows, k, n, group in ((0, 64, 8, 32), (3, 64, 0, 64), (2, 0, 5, 4)):
        x, weight, scales, group = make(rows, k, n, group=group)
        got = call_int8_linear(lib, x, weight, scales, group)
        assert got.shape == (rows, n)
        assert torch.equal(got, torch.zeros(rows, n))


def errors():
    x, weight, scales, _ = make(2, 64, 6, group=32)
    return [
        ("weight-dtype", x, weight.to(torch.uint8), scales, 32, r"argument 'weight' has dtype uint8, expected int8"),
        ("weight-shape", x, weight[:, :32], scales, 32, r"argument 'weight' has shape \[6, 32\], expected \[N, 64\]"),
        ("scales-shape", x, weight, scales[:5], 32, r"argument 'scales' has shape \[5, 2\], expected \[6, 2\]"),
        ("scales-groups", x, weight, scales, 16, r"argument 'scales' has shape \[6, 2\], expected \[6, 4\]"),
        ("scales-1d", x, weight, scales[:, 0], 64, r"argument 'scales' has shape \[6\], expected \[6, 1\]"),
        ("group-not-dividing", x, weight, scales, 24, r"argument 'group_size' is 24, expected a positive divisor"),
        ("group-zero", x, weight, scales, 0, r"argument 'group_size' is 0"),
        ("scales-dtype", x, weight, scales.to(torch.bfloat16), 32, r"argument 'scales' has dtype bfloat16, expected x's"),
        ("x-dtype", x.double(), weight, scales.double(), 32, r"argument 'x' has dtype float64"),
        ("x-scalar", torch.tensor(1.0), weight, scales, 32, r"argument 'x' must have at least 1 dimension"),
    ]


@pytest.mark.parametrize("name,x,weight,scales,group,message", errors(), ids=[e[0] for e in errors()])
def test_errors_name_the_argument(lib, name, x, weight, scales, group, message):
    with pytest.raises(KilnError, match=message):
        call_int8_linear(lib, x, weight, scales, group)
