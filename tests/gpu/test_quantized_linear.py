"""Weight-only quantization on CUDA (compile spec ``quantize``): the exporter's int4 packing
against ATen's own converter, and quantized programs run by Kiln's CUDA runtime against
eager PyTorch (ATen's CUDA ops) on the same quantized weights, decode and prefill rows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import gpu_support

pytestmark = gpu_support.cuda_only

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))


@pytest.mark.parametrize("n,k,tiles", [(8, 256, 8), (24, 128, 8), (16, 64, 4), (32, 96, 2), (64, 2048, 8)])
def test_host_packing_equals_atens_converter(n, k, tiles):
    from kiln.exporter import quantized_weights as qw

    g = torch.Generator().manual_seed(n * k + tiles)
    codes = torch.randint(0, 16, (n, k), dtype=torch.uint8, generator=g)
    host = qw.pack_int4_for_cuda(codes, tiles)
    aten = qw.pack_int4_for_cuda(codes.cuda(), tiles).cpu()
    assert host.shape == aten.shape and torch.equal(host, aten)


class Decoder(nn.Module):
    def __init__(self, vocab=256, d=256, inter=512):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.up = nn.Linear(d, inter, bias=True)
        self.down = nn.Linear(inter, d, bias=False)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        h = self.emb(ids)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        h = h + torch.tanh(q) * k + v
        h = h + self.down(torch.nn.functional.silu(self.up(h)))
        return self.head(h)


@pytest.mark.parametrize("spec,shim", [
    ("int8,embedding=int8", "aoti_torch_cuda__weight_int8pack_mm"),
    ("int4,group=32", "aoti_torch_cuda__weight_int4pack_mm"),
    ("int4,group=128,embedding=int8", "aoti_torch_cuda__weight_int4pack_mm"),
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_quantized_program_matches_eager_on_the_same_weights(tmp_path, spec, shim, dtype):
    import kiln
    from kiln.exporter import CudaBackend
    from kiln.exporter.passes.weight_quantization import parse_quantize_spec, quantize_weights
    from kiln.runtime import Module

    torch.manual_seed(0)
    model = Decoder().to("cuda", dtype).eval()
    seq = torch.export.Dim("seq", min=1, max=128)
    ep = torch.export.export(model, (torch.randint(0, 256, (2, 4), device="cuda"),), dynamic_shapes=({1: seq},))
    program = kiln.export(ep, backend=CudaBackend(), compile_specs={"quantize": spec, "max_autotune": "off"},
                          verbose=False)
    imports = dict(program.methods["forward"].metadata)["shim_imports"].split(",")
    assert shim in imports and "aoti_torch_proxy_executor_call_function" not in imports
    path = tmp_path / "q.kiln"
    program.save(str(path))
    reference = quantize_weights(ep, parse_quantize_spec(spec), "cuda", int4_native=False).module()
    module = Module(str(path))
    module.load({})
    try:
        for rows in (1, 3, 40, 128):  # decode (direct kernels) and prefill (dequantized blocks)
            ids = torch.randint(0, 256, (2, rows), device="cuda")
            (got,) = module.execute("forward", [ids], output="torch")
            with torch.no_grad():
                want = reference(ids)
            rel = float((got.float() - want.float()).norm() / want.float().norm())
            assert rel < 1e-2, f"{spec} {dtype} rows={rows}: relative error {rel:.2e}"
            with torch.no_grad():
                full = model(ids).float()
            assert float((got.float() - full).norm() / full.norm()) < 0.15
    finally:
        module.close()
