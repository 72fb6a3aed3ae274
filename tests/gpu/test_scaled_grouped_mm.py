"""CUDA _scaled_grouped_mm beyond the shared cases of tests/ops (which keep to what ATen's
CUTLASS kernel takes): problems whose groups cross the kernel's 64 x 64 tiles, against ATen;
rows and columns past the last group (zero in Kiln, unwritten by ATen); empty K groups, which
ATen's kernel asserts against on the device; and layouts and sizes ATen's kernel refuses,
against a float64 reference on the host. Values are halves in [-4, 4] and scales powers of
two, so every sum is exact in float32 and only the final bfloat16 rounding remains."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import gpu_support

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))

from compare import assert_same  # noqa: E402
from shim_caller import call_shim  # noqa: E402

pytestmark = gpu_support.cuda_only

E4 = torch.float8_e4m3fn
TOL = dict(rtol=2e-2, atol=2e-2)


@pytest.fixture(scope="module")
def lib():
    return gpu_support.cuda_shim_library()


def _f8(g, shape):
    return (torch.randint(-8, 9, shape, generator=g).to(torch.float32) / 2).to(E4).cuda()


def _pow2(g, shape):
    return torch.pow(2.0, torch.randint(-2, 3, shape, generator=g).float()).cuda()


def _col_major(g, shape):
    """float8 of `shape` stored column-major in its last two dimensions."""
    return _f8(g, tuple(shape[:-2]) + (shape[-1], shape[-2])).transpose(-2, -1)


def _args(g, a, b, ends=None, **kw):
    """Arguments for operands a and b (tensors), scales shaped as ATen checks them."""
    groups = len(ends) if ends is not None else a.shape[0]
    both_2d = a.dim() == 2 and b.dim() == 2
    sa = _pow2(g, (a.shape[0] * (groups if both_2d else 1),) if a.dim() == 2 else (a.shape[0], a.shape[1]))
    sb = _pow2(g, (b.shape[1] * (groups if both_2d else 1),) if b.dim() == 2 else (b.shape[0], b.shape[2]))
    args = dict(self=a, mat2=b, scale_a=sa, scale_b=sb,
                offs=None if ends is None else torch.tensor(ends, dtype=torch.int32, device="cuda"),
                bias=None, scale_result=None, out_dtype=None, use_fast_accum=False)
    args.update(kw)
    return args


def _reference(self, mat2, scale_a, scale_b, offs, **_):
    """The grouped product in float64 on the host; rows (columns) past the last group zero."""
    a, b = self.cpu().double(), mat2.cpu().double()
    sa, sb = scale_a.cpu().double(), scale_b.cpu().double()
    ends = offs.cpu().tolist() if offs is not None else None
    start = 0
    if a.dim() == 2 and b.dim() == 3:
        out = torch.zeros(a.shape[0], b.shape[2], dtype=torch.float64)
        for g, end in enumerate(ends):
            out[start:end] = (a[start:end] @ b[g]) * sa[start:end, None] * sb[g][None, :]
            start = end
    elif a.dim() == 3 and b.dim() == 2:
        out = torch.zeros(a.shape[1], b.shape[1], dtype=torch.float64)
        for g, end in enumerate(ends):
            out[:, start:end] = (a[g] @ b[:, start:end]) * sa[g][:, None] * sb[None, start:end]
            start = end
    elif a.dim() == 2:
        m, n = a.shape[0], b.shape[1]
        out = torch.zeros(len(ends), m, n, dtype=torch.float64)
        for g, end in enumerate(ends):
            out[g] = (a[:, start:end] @ b[start:end]) * sa[g * m:(g + 1) * m, None] * sb[None, g * n:(g + 1) * n]
            start = end
    else:
        out = (a @ b) * sa[:, :, None] * sb[:, None, :]
    return out.to(torch.bfloat16)


def _aten_strides(args):
    """ATen's CUDA result layout: contiguous, the last dimension's stride rounded up to 8 elements."""
    a, b = args["self"], args["mat2"]
    n = b.shape[-1]
    padded = (n + 7) // 8 * 8
    if (a.dim() == 2) != (b.dim() == 2):
        return (padded, 1)
    m = a.shape[0] if a.dim() == 2 else a.shape[1]
    return (m * padded, padded, 1)


def _call(lib, args):
    return call_shim(lib, "aoti_torch_cuda__scaled_grouped_mm", "cuda", args)[0]


def _aten(args):
    try:
        return torch.ops.aten._scaled_grouped_mm(**args)
    except (RuntimeError, ValueError) as e:
        pytest.skip(f"ATen's CUDA op refuses these inputs: {str(e).splitlines()[0]}")


LARGE = {
    # Groups of 0 to 97 rows, crossing the 64-row tiles; one empty group.
    "2d-3d": lambda g: _args(g, _f8(g, (300, 256)), _col_major(g, (8, 256, 192)),
                             [20, 20, 117, 150, 151, 200, 290, 300]),
    # Column groups of multiples of 8 (ATen's output alignment), one empty, crossing 64-column tiles.
    "3d-2d": lambda g: _args(g, _f8(g, (5, 100, 128)), _col_major(g, (128, 320)), [40, 40, 136, 256, 320]),
    # K groups of non-zero multiples of 16 (what ATen's kernel takes).
    "2d-2d": lambda g: _args(g, _f8(g, (96, 256)), _col_major(g, (256, 80)), [32, 48, 160, 256]),
    "3d-3d": lambda g: _args(g, _f8(g, (3, 70, 96)), _col_major(g, (3, 96, 144))),
}


@pytest.mark.parametrize("name", sorted(LARGE))
def test_matches_aten(lib, name):
    args = LARGE[name](torch.Generator().manual_seed(len(name)))
    got = _call(lib, args)
    assert_same(got, _reference(**args), name + " (reference)", **TOL, strides=False)
    assert_same(got, _aten(args), name, **TOL)


def test_rows_past_the_last_group_are_zero(lib):
    g = torch.Generator().manual_seed(11)
    args = _args(g, _f8(g, (150, 64)), _col_major(g, (3, 64, 32)), [10, 10, 90])
    got = _call(lib, args)
    want = _aten(args)  # rows 90.. unwritten
    assert_same(got[:90], want[:90], "grouped rows", **TOL)
    assert torch.equal(got[90:].float().cpu(), torch.zeros(60, 32)), "rows past the last group"


def test_columns_past_the_last_group_are_zero(lib):
    g = torch.Generator().manual_seed(12)
    args = _args(g, _f8(g, (2, 40, 32)), _col_major(g, (32, 144)), [16, 80])
    got = _call(lib, args)
    want = _aten(args)  # columns 80.. unwritten
    assert_same(got[:, :80], want[:, :80], "grouped columns", **TOL)
    assert torch.equal(got[:, 80:].float().cpu(), torch.zeros(40, 64)), "columns past the last group"


def test_empty_k_groups_are_zero(lib):
    # ATen's kernel asserts on the device for an empty K group (not called: it would poison the context).
    g = torch.Generator().manual_seed(13)
    args = _args(g, _f8(g, (20, 48)), _col_major(g, (48, 24)), [0, 16, 16, 40])
    got = _call(lib, args)
    assert_same(got, _reference(**args), "empty K groups", **TOL)
    assert torch.equal(got[0].float().cpu(), torch.zeros(20, 24)) and torch.equal(got[2].float().cpu(), torch.zeros(20, 24))


def test_no_groups(lib):
    g = torch.Generator().manual_seed(14)
    args = _args(g, _f8(g, (7, 32)), _col_major(g, (0, 32, 16)), [])
    got = _call(lib, args)
    assert tuple(got.shape) == (7, 16) and torch.equal(got.float().cpu(), torch.zeros(7, 16))


def _misaligned(t):
    """Same values, starting 3 elements into its storage (not 16-byte aligned), same strides."""
    flat = torch.empty(t.untyped_storage().nbytes() // t.element_size() + 3, dtype=t.dtype, device=t.device)
    view = flat[3:].as_strided(t.shape, t.stride())
    view.copy_(t)
    return view


LAYOUTS = {
    "row-major-mat2": lambda g: _args(g, _f8(g, (50, 32)), _f8(g, (3, 32, 48)), [5, 30, 50]),
    "column-major-mat-a": lambda g: _args(g, _f8(g, (32, 50)).t(), _col_major(g, (3, 32, 48)), [5, 30, 50]),
    "misaligned": lambda g: _args(g, _misaligned(_f8(g, (50, 32))), _misaligned(_col_major(g, (3, 32, 48))),
                                  [5, 30, 50]),
    "odd-sizes-2d-3d": lambda g: _args(g, _f8(g, (33, 24)), _col_major(g, (2, 24, 20)), [13, 33]),
    "odd-sizes-3d-2d": lambda g: _args(g, _f8(g, (2, 9, 24)), _col_major(g, (24, 21)), [5, 21]),
    "odd-sizes-2d-2d": lambda g: _args(g, _f8(g, (9, 40)), _col_major(g, (40, 21)), [7, 7, 40]),
    "odd-sizes-3d-3d": lambda g: _args(g, _f8(g, (2, 9, 24)), _col_major(g, (2, 24, 21))),
    "strided-scales": lambda g: _args(g, _f8(g, (2, 9, 32)), _col_major(g, (2, 32, 16)),
                                      scale_a=_pow2(g, (2, 12))[:, 3:], scale_b=_pow2(g, (2, 20))[:, 4:]),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layouts_aten_refuses_against_reference(lib, name):
    args = LAYOUTS[name](torch.Generator().manual_seed(len(name)))
    got = _call(lib, args)
    assert_same(got, _reference(**args), name, **TOL, strides=False)
    assert got.stride() == _aten_strides(args), f"{name}: strides {got.stride()}"
