"""CUDA _scaled_mm beyond the shared cases of tests/ops (which run on the CPU too, where ATen
and Kiln take per-tensor scales only): row-wise scaling and the float8 result scale against
ATen's CUDA op, and the products ATen's CUDA op refuses but Kiln's tiled kernel computes
(other layouts, sizes that are not multiples of 16, e5m2 x e5m2, float32 bias, strided
results) against a float64 reference on the host."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import gpu_support

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))

from compare import assert_same  # noqa: E402
from shim_caller import KilnError, call_shim  # noqa: E402

pytestmark = gpu_support.cuda_only

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2


@pytest.fixture(scope="module")
def lib():
    return gpu_support.cuda_shim_library()


def _f8(g, shape, dt):
    """Halves in [-4, 4]: products and sums exact in float32, whatever the summation order."""
    return (torch.randint(-8, 9, shape, generator=g).to(torch.float32) / 2).to(dt).cuda()


def _args(g, m, k, n, dt_a=E4, dt_b=E4, column_major=True, **kw):
    mat2 = _f8(g, (n, k), dt_b).t() if column_major else _f8(g, (k, n), dt_b)
    args = dict(self=_f8(g, (m, k), dt_a), mat2=mat2, scale_a=torch.tensor(0.5, device="cuda"),
                scale_b=torch.tensor(2.0, device="cuda"), bias=None, scale_result=None, out_dtype=None,
                use_fast_accum=False)
    args.update(kw)
    return args


def _rowwise(g, m, n):
    # Powers of two keep the scaled products exact.
    sa = torch.pow(2.0, torch.randint(-2, 3, (m, 1), generator=g).float()).cuda()
    sb = torch.pow(2.0, torch.randint(-2, 3, (1, n), generator=g).float()).cuda()
    return sa, sb


def _reference(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum):
    """ATen CUDA's arithmetic in float64 on the host: product times the scales, plus the bias
    read as n elements along each row, times scale_result for a float8 result."""
    prod = self.cpu().double() @ mat2.cpu().double()
    prod = prod * scale_a.cpu().double().reshape(-1, 1) if scale_a.numel() > 1 else prod * scale_a.cpu().double()
    prod = prod * scale_b.cpu().double().reshape(1, -1) if scale_b.numel() > 1 else prod * scale_b.cpu().double()
    if bias is not None:
        prod = prod + bias.cpu().double().reshape(1, -1)
    dt = out_dtype or self.dtype
    if scale_result is not None and dt in (E4, E5):
        prod = prod * scale_result.cpu().double()
    return prod.float().to(dt)


def _call(lib, args):
    return call_shim(lib, "aoti_torch_cuda__scaled_mm", "cuda", args)[0]


def _aten(args):
    try:
        return torch.ops.aten._scaled_mm(**args)
    except RuntimeError as e:
        pytest.skip(f"ATen's CUDA op refuses these inputs: {str(e).splitlines()[0]}")


ROWWISE = [(m, k, n, out, bias) for m, k, n in ((1, 32, 16), (5, 64, 48), (64, 128, 32))
           for out, bias in ((torch.bfloat16, None), (torch.bfloat16, torch.bfloat16), (torch.float16, None),
                             (torch.float16, torch.float16), (torch.float32, None))]


@pytest.mark.parametrize("m,k,n,out,bias", ROWWISE)
@pytest.mark.parametrize("fast", [False, True])
def test_rowwise_matches_aten(lib, m, k, n, out, bias, fast):
    g = torch.Generator().manual_seed(m * 1000 + n)
    sa, sb = _rowwise(g, m, n)
    b = torch.randn(n, generator=g).to(bias).cuda() if bias else None
    args = _args(g, m, k, n, scale_a=sa, scale_b=sb, bias=b, out_dtype=out, use_fast_accum=fast)
    assert_same(_call(lib, args), _aten(args), "rowwise")


@pytest.mark.parametrize("out", [E4, E5])
def test_scale_result_matches_aten(lib, out):
    g = torch.Generator().manual_seed(7)
    args = _args(g, 16, 32, 16, scale_a=torch.tensor(0.25, device="cuda"), scale_b=torch.tensor(0.5, device="cuda"),
                 scale_result=torch.tensor(2.0, device="cuda"), out_dtype=out)
    assert_same(_call(lib, args), _aten(args), "scale_result")


FALLBACK = {
    "row-major-mat2": lambda g: _args(g, 5, 32, 16, column_major=False, out_dtype=torch.bfloat16),
    "odd-sizes": lambda g: _args(g, 7, 9, 5, out_dtype=torch.float32),
    "e5m2-e5m2": lambda g: _args(g, 4, 32, 16, E5, E5, out_dtype=torch.float32),
    "float32-bias": lambda g: _args(g, 4, 32, 16, out_dtype=torch.float32, bias=torch.randn(16, generator=g).cuda()),
    "float64-out": lambda g: _args(g, 3, 16, 16, out_dtype=torch.float64),
    "float8-out-odd": lambda g: _args(g, 6, 24, 10, out_dtype=E5, scale_result=torch.tensor(0.5, device="cuda")),
    "rowwise-row-major-mat2": lambda g: _args(g, 5, 24, 12, column_major=False, out_dtype=torch.float32,
                                              **dict(zip(("scale_a", "scale_b"), _rowwise(g, 5, 12)))),
    "k0": lambda g: _args(g, 3, 0, 16, out_dtype=torch.bfloat16, bias=torch.ones(16, dtype=torch.bfloat16).cuda()),
}


@pytest.mark.parametrize("name", sorted(FALLBACK))
def test_tiled_kernel_against_reference(lib, name):
    args = FALLBACK[name](torch.Generator().manual_seed(len(name)))
    got = _call(lib, args)
    if args["self"].shape[1] == 0:
        want = torch.zeros(args["self"].shape[0], args["mat2"].shape[1], dtype=args["out_dtype"])
    else:
        want = _reference(**args)
    assert_same(got, want, name)


def test_strided_out(lib):
    g = torch.Generator().manual_seed(3)
    args = _args(g, 16, 32, 16, out_dtype=torch.bfloat16)
    base = torch.full((16, 32), float("nan"), dtype=torch.bfloat16, device="cuda")
    out = base[:, ::2]
    call_shim(lib, "aoti_torch_cuda__scaled_mm_out", "cuda", dict(args, out=out))
    assert_same(out, _reference(**args), "strided out", strides=False)
    assert torch.isnan(base[:, 1::2].float()).all(), "wrote between the strided columns"


def test_mixed_scaling_is_refused(lib):
    g = torch.Generator().manual_seed(4)
    sa, _ = _rowwise(g, 4, 16)
    args = _args(g, 4, 32, 16, scale_a=sa)
    with pytest.raises(KilnError, match="per-tensor scaling"):
        _call(lib, args)
