"""Kiln's own op kiln::int4_linear on the CPU (aoti_torch_cpu_int4_linear, called through
ctypes: torch's header, which tests/ops reads signatures from, does not declare it), against
a reference written here with torch ops (nibbles unpacked, dequantized in float32, x.float()
@ w.T rounded once to x's dtype): both paths (few rows streaming the weight, more rows through
the GEMM), every float dtype of x and of scale_zero, odd group sizes, strided and offset
operands, empty shapes and the argument errors."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest
import torch

# Kiln's allocations start as NaN, so an element the op leaves unwritten fails the comparison.
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


def call_int4_linear(lib: ShimLibrary, x, qweight, scale_zero, group_size: int, device: str = "cpu") -> torch.Tensor:
    """aoti_torch_<device>_int4_linear on borrowed handles; a torch copy of the result.
    Raises shim_caller.KilnError with Kiln's message on failure."""
    handles = [lib.handle(t) for t in (x, qweight, scale_zero)]
    ret = ctypes.c_void_p()
    name = f"aoti_torch_{device}_int4_linear"
    fn = getattr(lib.ops, name)
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]
    try:
        lib.check(fn(*handles, group_size, ctypes.byref(ret)), name)
        out = lib.to_torch(ret, device)
        lib.delete(ret)
        return out
    finally:
        for h in handles:
            lib.delete(h)


def reference(x, qweight, scale_zero, group_size):
    """The op's contract, independently: codes from the nibbles, w = (code - 8) * scale + zero in
    float32, x.float() @ w.T rounded once to x's dtype."""
    n, half = qweight.shape
    q = qweight.to(torch.int32)
    codes = torch.stack([q & 15, q >> 4], dim=-1).reshape(n, 2 * half).float()
    sz = scale_zero.float().repeat_interleave(group_size, dim=1)  # [N, K, 2]
    w = (codes - 8.0) * sz[..., 0] + sz[..., 1]
    return (x.float() @ w.T).to(x.dtype)


def make(rows, k, n, group, x_dtype=torch.float32, sz_dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k, generator=g).to(x_dtype)
    qweight = torch.randint(0, 256, (n, k // 2), generator=g, dtype=torch.int32).to(torch.uint8)
    scale = torch.rand(n, k // group, generator=g) * 0.02 + 0.001
    zero = torch.randn(n, k // group, generator=g) * 0.01
    scale_zero = torch.stack([scale, zero], dim=-1).to(sz_dtype)
    return x, qweight, scale_zero


def check(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.is_contiguous()
    if want.numel() == 0:
        return
    scale = want.float().abs().max().item()
    if want.dtype == torch.float32:
        tol = dict(rtol=1e-5, atol=1e-4 * scale)
    else:
        tol = dict(rtol=2e-2, atol=2e-2 * scale)
    torch.testing.assert_close(got, want, **tol)


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 17, 300])
@pytest.mark.parametrize("k,group", [(64, 32), (64, 64), (256, 32), (256, 64), (256, 128), (256, 256),
                                     (240, 48), (384, 96), (4096, 128)])
def test_rows_and_group_sizes_float32(lib, rows, k, group):
    n = 96 if k < 4096 else 40
    x, qweight, scale_zero = make(rows, k, n, group, seed=rows * 7 + k + group)
    check(call_int4_linear(lib, x, qweight, scale_zero, group), reference(x, qweight, scale_zero, group))


@pytest.mark.parametrize("x_dtype", DTYPES, ids=[IDS[d] for d in DTYPES])
@pytest.mark.parametrize("sz_dtype", DTYPES, ids=[IDS[d] for d in DTYPES])
@pytest.mark.parametrize("rows", [1, 4, 17])
def test_mixed_dtypes(lib, x_dtype, sz_dtype, rows):
    x, qweight, scale_zero = make(rows, 256, 72, 64, x_dtype, sz_dtype, seed=rows)
    check(call_int4_linear(lib, x, qweight, scale_zero, 64), reference(x, qweight, scale_zero, 64))


@pytest.mark.parametrize("group", [1, 3, 5, 6, 10, 30])
@pytest.mark.parametrize("rows", [2, 9])
def test_small_and_odd_groups(lib, group, rows):
    """Odd groups split a byte's two codes between groups; groups smaller than a vector."""
    x, qweight, scale_zero = make(rows, 30, 11, group, seed=group)
    check(call_int4_linear(lib, x, qweight, scale_zero, group), reference(x, qweight, scale_zero, group))


@pytest.mark.parametrize("rows", [1, 3, 6, 40])
def test_three_dim_x(lib, rows):
    x, qweight, scale_zero = make(2 * rows, 128, 33, 32, torch.bfloat16)
    x = x.reshape(2, rows, 128)
    got = call_int4_linear(lib, x, qweight, scale_zero, 32)
    assert got.shape == (2, rows, 33)
    check(got, reference(x, qweight, scale_zero, 32))


def test_one_dim_x(lib):
    x, qweight, scale_zero = make(1, 128, 20, 64)
    x = x[0]
    got = call_int4_linear(lib, x, qweight, scale_zero, 64)
    assert got.shape == (20,)
    check(got, reference(x, qweight, scale_zero, 64))


@pytest.mark.parametrize("rows", [1, 4, 5, 33])
@pytest.mark.parametrize("x_dtype", DTYPES, ids=[IDS[d] for d in DTYPES])
def test_strided_and_offset_operands(lib, rows, x_dtype):
    k, n, group = 128, 50, 32
    g = torch.Generator().manual_seed(rows)
    # x: transposed storage, then a slice of columns starting at an offset.
    x = torch.randn(k + 6, rows + 3, generator=g).to(x_dtype).t()[1:rows + 1, 3:k + 3]
    assert not x.is_contiguous() and x.storage_offset() > 0
    # qweight: every other byte of a wider buffer, rows from an offset.
    qw_full = torch.randint(0, 256, (n + 2, k), generator=g, dtype=torch.int32).to(torch.uint8)
    qweight = qw_full[2:, ::2]
    assert qweight.stride() == (k, 2) and qweight.storage_offset() > 0
    # scale_zero: [N, G, 2] as a permuted view of [2, N, G] (stride 1 along groups), then offset.
    scale = torch.rand(n + 1, k // group, generator=g) * 0.02
    zero = torch.randn(n + 1, k // group, generator=g) * 0.01
    scale_zero = torch.stack([scale, zero]).to(torch.bfloat16).permute(1, 2, 0)[1:]
    assert not scale_zero.is_contiguous() and scale_zero.storage_offset() > 0
    check(call_int4_linear(lib, x, qweight, scale_zero, group), reference(x, qweight, scale_zero, group))


def test_broadcast_x_rows(lib):
    """A zero stride (an expanded row) reads the same row for every output row."""
    x, qweight, scale_zero = make(1, 64, 10, 32)
    x = x.expand(6, 64)
    check(call_int4_linear(lib, x, qweight, scale_zero, 32), reference(x, qweight, scale_zero, 32))


def test_extreme_codes(lib):
    """Codes 0 and 15 in both nibbles: w spans (-8 .. 7) * scale + zero."""
    x, _, scale_zero = make(3, 64, 4, 16)
    qweight = torch.tensor([[0x00] * 32, [0xFF] * 32, [0x0F] * 32, [0xF0] * 32], dtype=torch.uint8)
    check(call_int4_linear(lib, x, qweight, scale_zero, 16), reference(x, qweight, scale_zero, 16))


@pytest.mark.parametrize("rows,k,n", [(0, 64, 8), (3, 64, 0), (0, 64, 0), (20, 64, 0)])
def test_empty(lib, rows, k, n):
    x, qweight, scale_zero = make(rows, k, n, 32, torch.bfloat16)
    got = call_int4_linear(lib, x, qweight, scale_zero, 32)
    assert got.shape == (rows, n) and got.dtype == torch.bfloat16


@pytest.mark.parametrize("rows", [1, 7])
def test_k_zero_gives_zeros(lib, rows):
    x = torch.randn(rows, 0)
    got = call_int4_linear(lib, x, torch.empty(5, 0, dtype=torch.uint8), torch.empty(5, 0, 2), 8)
    assert torch.equal(got, torch.zeros(rows, 5))


def test_large_decode_and_prefill_shapes(lib):
    """A 2048-wide layer: the decode row and a prefill block cross several GEMM blocks."""
    for rows in (1, 64):
        x, qweight, scale_zero = make(rows, 2048, 600, 128, torch.bfloat16, torch.bfloat16, seed=rows)
        check(call_int4_linear(lib, x, qweight, scale_zero, 128), reference(x, qweight, scale_zero, 128))


def errors():
    x, qweight, scale_zero = make(2, 64, 6, 32)
    return [
        ("qweight-dtype", x, qweight.to(torch.int8), scale_zero, 32,
         r"argument 'qweight' has dtype int8, expected uint8"),
        ("qweight-shape", x, qweight[:, :16], scale_zero, 32, r"argument 'qweight' has shape \[6, 16\], expected \[N, 32\]"),
        ("qweight-1d", x, qweight[0], scale_zero, 32, r"argument 'qweight' has shape \[32\], expected \[N, 32\]"),
        ("k-odd", torch.randn(2, 63), torch.zeros(6, 31, dtype=torch.uint8), scale_zero, 32,
         r"argument 'x' has K = 63 .*expected an even K"),
        ("group-not-dividing", x, qweight, scale_zero, 24, r"argument 'group_size' is 24, which does not divide K = 64"),
        ("group-zero", x, qweight, scale_zero, 0, r"argument 'group_size' is 0, expected > 0"),
        ("group-negative", x, qweight, scale_zero, -32, r"argument 'group_size' is -32, expected > 0"),
        ("scale-zero-groups", x, qweight, scale_zero[:, :1], 32,
         r"argument 'scale_zero' has shape \[6, 1, 2\], expected \[6, 2, 2\]"),
        ("scale-zero-last", x, qweight, scale_zero[..., :1], 32,
         r"argument 'scale_zero' has shape \[6, 2, 1\], expected \[6, 2, 2\]"),
        ("n-mismatch", x, qweight, scale_zero[:5], 32, r"argument 'scale_zero' has shape \[5, 2, 2\], expected \[6, 2, 2\]"),
        ("scale-zero-dtype", x, qweight, scale_zero.double(), 32,
         r"argument 'scale_zero' has dtype float64, expected float32, bfloat16 or float16"),
        ("x-dtype", x.double(), qweight, scale_zero, 32, r"argument 'x' has dtype float64, expected float32"),
        ("x-scalar", torch.tensor(1.0), qweight, scale_zero, 32, r"argument 'x' must have at least 1 dimension"),
    ]


@pytest.mark.parametrize("name,x,qweight,scale_zero,group,message", errors(), ids=[e[0] for e in errors()])
def test_errors_name_the_argument(lib, name, x, qweight, scale_zero, group, message):
    with pytest.raises(KilnError, match=message):
        call_int4_linear(lib, x, qweight, scale_zero, group)
