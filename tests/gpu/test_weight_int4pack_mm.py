"""CUDA _weight_int4pack_mm against the int4 codes themselves, not ATen's product: the codes are packed by
ATen's CUDA _convert_weight_to_int4pack, multiplied by Kiln, and compared with the product dequantized
on the host from the unpacked codes, so a misread packed layout fails here even where it would agree
with itself. The shared cases of tests/ops compare with ATen's CUDA op on the same inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import gpu_support

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))

from shim_caller import call_shim  # noqa: E402

pytestmark = gpu_support.cuda_only

FUNCTION = "aoti_torch_cuda__weight_int4pack_mm"


@pytest.fixture(scope="module")
def lib():
    return gpu_support.cuda_shim_library()


def _pack(codes: torch.Tensor, inner_k_tiles: int) -> torch.Tensor:
    """int4 codes [n, k] (0..15) packed by ATen: its input holds an even k in a byte's high nibble."""
    data = ((codes[:, ::2] << 4) | codes[:, 1::2]).to(torch.uint8).cuda()
    return torch.ops.aten._convert_weight_to_int4pack(data, inner_k_tiles)


def _dequantized(codes, scales, zeros, group):
    """W [n, k] = (q - 8) * scale + zero in float32, per group of k, rounded to bfloat16 as ATen's
    kernel rounds its dequantized weight (the tensor cores take bfloat16)."""
    s = scales.float().repeat_interleave(group, dim=0).t()  # [n, k]
    z = zeros.float().repeat_interleave(group, dim=0).t()
    return ((codes.float() - 8) * s + z).to(torch.bfloat16).float()


def _run(lib, x, packed, group, scales, zeros):
    qsz = torch.stack([scales, zeros], dim=2).to(torch.bfloat16).cuda()
    return call_shim(lib, FUNCTION, "cuda", dict(self=x, mat2=packed, qGroupSize=group, qScaleAndZeros=qsz))[0]


@pytest.mark.parametrize("inner_k_tiles", [2, 4, 8])
@pytest.mark.parametrize("group", [32, 64, 128, 256])
def test_each_code_lands_on_its_row_and_column(lib, inner_k_tiles, group):
    """x = rows of I gives out[r][j] = W[j][c] for row r one-hot at c, one product each: every code,
    scale and zero point is checked at its own place, exactly (small multiples of 1/2 are exact in
    bfloat16). Sixteen rows at a time go through the kernel that reads the packed weight directly;
    all k rows at once through the dequantized block and cuBLASLt."""
    g = torch.Generator().manual_seed(inner_k_tiles * 1000 + group)
    n, k = 24, 512
    codes = torch.randint(0, 16, (n, k), generator=g, dtype=torch.int32)
    scales = torch.pow(2.0, torch.randint(-1, 3, (k // group, n), generator=g).float())
    zeros = torch.randint(-4, 5, (k // group, n), generator=g).float()
    packed = _pack(codes, inner_k_tiles)
    eye = torch.eye(k, dtype=torch.bfloat16, device="cuda")
    expected = _dequantized(codes, scales, zeros, group).t()
    direct = torch.cat([_run(lib, eye[c:c + 16], packed, group, scales, zeros) for c in range(0, k, 16)])
    for path, got in (("direct", direct), ("dequantized", _run(lib, eye, packed, group, scales, zeros))):
        assert got.dtype == torch.bfloat16 and tuple(got.shape) == (k, n) and got.is_contiguous()
        mismatch = (got.float().cpu() != expected).nonzero()
        assert mismatch.numel() == 0, \
            f"{path}: {len(mismatch)} values misplaced, first (k, n) = {mismatch[0].tolist()}"


@pytest.mark.parametrize("inner_k_tiles", [2, 4, 8])
@pytest.mark.parametrize("group", [32, 64, 128, 256])
@pytest.mark.parametrize("m,k,n", [(1, 1024, 256), (3, 256, 64), (16, 512, 64), (17, 512, 8), (64, 1024, 128)])
def test_matches_the_dequantized_product(lib, inner_k_tiles, group, m, k, n):
    g = torch.Generator().manual_seed(m * 7 + k + n + inner_k_tiles * 13 + group)
    codes = torch.randint(0, 16, (n, k), generator=g, dtype=torch.int32)
    scales = torch.rand(k // group, n, generator=g) * 0.08 + 0.02
    zeros = torch.rand(k // group, n, generator=g) - 0.5
    x = torch.randn(m, k, generator=g).to(torch.bfloat16)
    got = _run(lib, x.cuda(), _pack(codes, inner_k_tiles), group, scales.to(torch.bfloat16),
               zeros.to(torch.bfloat16))
    w = _dequantized(codes, scales.to(torch.bfloat16), zeros.to(torch.bfloat16), group)
    expected = (x.double() @ w.double().t()).to(torch.bfloat16)
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-2, atol=1e-2)


def test_non_contiguous_activations(lib):
    """A column slice of a wider activation (row stride 2k) and a transposed one (column-major), through
    the direct kernel (6 rows) and the dequantized product (40 rows)."""
    for m in (6, 40):
        _check_non_contiguous(lib, m)


def _check_non_contiguous(lib, m):
    g = torch.Generator().manual_seed(5 + m)
    k, n, group = 256, 64, 64
    codes = torch.randint(0, 16, (n, k), generator=g, dtype=torch.int32)
    scales = (torch.rand(k // group, n, generator=g) * 0.08 + 0.02).to(torch.bfloat16)
    zeros = (torch.rand(k // group, n, generator=g) - 0.5).to(torch.bfloat16)
    x = torch.randn(m, k, generator=g).to(torch.bfloat16)
    expected = (x.double() @ _dequantized(codes, scales, zeros, group).double().t()).to(torch.bfloat16)
    packed = _pack(codes, 4)
    wide = torch.zeros(m, 2 * k, dtype=torch.bfloat16, device="cuda")
    wide[:, 1::2] = x.cuda()
    for view in (wide[:, 1::2], x.t().contiguous().cuda().t()):
        got = _run(lib, view, packed, group, scales, zeros)
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-2, atol=1e-2)
