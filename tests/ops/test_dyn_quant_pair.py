"""_dyn_quant_pack_4bit_weight and _dyn_quant_matmul_4bit together: Kiln's matmul on Kiln's packed
weight gives ATen's matmul on ATen's packed weight (the packed tensor is a model constant, so Kiln's
pack must also produce exactly ATen's bytes; the per-op cases check each op alone)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shim_caller import ShimLibrary, call_shim  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lib():
    path = os.environ.get("KILN_LIBRARY", str(ROOT / "build" / "libkiln.so"))
    if not Path(path).exists():
        pytest.fail(f"libkiln.so not found at {path}: build first or set KILN_LIBRARY")
    return ShimLibrary(path)


@pytest.mark.parametrize("m,n,k,block_size,bias", [(3, 8, 64, 32, False), (4, 5, 128, 128, True),
                                                   (2, 16, 256, 64, True), (7, 3, 30, 30, False)])
def test_pack_then_matmul(lib, m, n, k, block_size, bias):
    g = torch.Generator().manual_seed(m * 1000 + k)
    weights = torch.randint(0, 256, (n, k // 2), generator=g).to(torch.uint8)
    scales = torch.rand((n, k // block_size), generator=g) * 0.1 + 0.01
    b = torch.randn((n,), generator=g) if bias else None
    x = torch.randn((m, k), generator=g)
    pack_args = dict(weights=weights, scales_zeros=scales, bias=b, block_size=block_size, in_features=k,
                     out_features=n)
    (packed,) = call_shim(lib, "aoti_torch_cpu__dyn_quant_pack_4bit_weight", "cpu", pack_args)
    expected_packed = torch.ops.aten._dyn_quant_pack_4bit_weight(weights, scales, b, block_size, k, n)
    assert torch.equal(packed, expected_packed)
    (got,) = call_shim(lib, "aoti_torch_cpu__dyn_quant_matmul_4bit", "cpu",
                       dict(inp=x, packed_weights=packed, block_size=block_size, in_features=k, out_features=n))
    expected = torch.ops.aten._dyn_quant_matmul_4bit(x, expected_packed, block_size, k, n)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
    # The int8 activation quantization loses precision, but the result is still the float product.
    dequant = torch.stack([(weights & 15).to(torch.int32) - 8, (weights >> 4).to(torch.int32) - 8], -1)
    w = dequant.reshape(n, k).float() * scales.repeat_interleave(block_size, 1)
    reference = x @ w.T + (b if bias else 0)
    assert (got - reference).abs().max() < 0.05 * reference.abs().max()
