"""Weight-only quantization on CUDA (compile spec ``quantize``): Kiln's int4_linear op
against a float64 reference over both of its paths and its layouts, and quantized programs
run by Kiln's CUDA runtime against eager PyTorch on the same quantized weights, decode and
prefill rows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import gpu_support

pytestmark = gpu_support.cuda_only

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))

from shim_caller import KilnError  # noqa: E402
import test_int8_linear as int8_cases  # noqa: E402
from test_int4_linear import call_int4_linear, check, errors, make, reference  # noqa: E402


@pytest.fixture(scope="module")
def lib():
    return gpu_support.cuda_shim_library()


def on_cuda(*tensors):
    return [t.cuda() for t in tensors]


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 16, 17, 300])
@pytest.mark.parametrize("k,group", [(64, 32), (256, 64), (256, 128), (256, 256), (240, 48), (384, 96),
                                     (4096, 128), (2048, 32)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
def test_int4_linear_rows_groups_dtypes(lib, rows, k, group, dtype):
    """Decode rows (the quantized GEMV kernel, or the simple kernel for groups that are not
    multiples of 32) and prefill rows (dequantized blocks through cuBLASLt)."""
    n = 96 if k < 2048 else 600
    x, qweight, scale_zero = make(rows, k, n, group, dtype, torch.bfloat16, seed=rows * 7 + k + group)
    got = call_int4_linear(lib, *on_cuda(x, qweight, scale_zero), group, device="cuda").cpu()
    check(got, reference(x, qweight, scale_zero, group))


@pytest.mark.parametrize("rows", [1, 4, 5, 33])
def test_int4_linear_strided_offset_and_3d(lib, rows):
    k, n, group = 128, 50, 32
    g = torch.Generator().manual_seed(rows)
    x = torch.randn(k + 6, rows + 3, generator=g).t()[1:rows + 1, 3:k + 3].cuda()
    qw_full = torch.randint(0, 256, (n + 2, k), generator=g, dtype=torch.int32).to(torch.uint8)
    qweight = qw_full[2:, ::2].cuda()
    scale = torch.rand(n + 1, k // group, generator=g) * 0.02
    zero = torch.randn(n + 1, k // group, generator=g) * 0.01
    scale_zero = torch.stack([scale, zero]).permute(1, 2, 0)[1:].cuda()
    got = call_int4_linear(lib, x, qweight, scale_zero, group, device="cuda").cpu()
    check(got, reference(x.cpu(), qweight.cpu(), scale_zero.cpu(), group))
    x3 = torch.randn(2, rows, k, dtype=torch.bfloat16, generator=g)
    got3 = call_int4_linear(lib, x3.cuda(), qweight, scale_zero, group, device="cuda").cpu()
    assert got3.shape == (2, rows, n)
    check(got3, reference(x3, qweight.cpu(), scale_zero.cpu(), group))


@pytest.mark.parametrize("name,x,qweight,scale_zero,group,message", errors(), ids=[e[0] for e in errors()])
def test_int4_linear_errors_name_the_argument(lib, name, x, qweight, scale_zero, group, message):
    with pytest.raises(KilnError, match=message):
        call_int4_linear(lib, *on_cuda(x, qweight, scale_zero), group, device="cuda")


def test_int4_linear_k_zero_and_empty(lib):
    got = call_int4_linear(lib, torch.randn(3, 0).cuda(), torch.empty(5, 0, dtype=torch.uint8).cuda(),
                           torch.empty(5, 0, 2).cuda(), 8, device="cuda").cpu()
    assert torch.equal(got, torch.zeros(3, 5))
    x, qweight, scale_zero = make(0, 64, 8, 32)
    assert call_int4_linear(lib, *on_cuda(x, qweight, scale_zero), 32, device="cuda").shape == (0, 8)


@pytest.mark.parametrize("rows", [1, 2, 4, 5, 16, 17, 300])
@pytest.mark.parametrize("k,n,group", [(64, 96, None), (256, 40, None), (48, 7, None), (2048, 600, None),
                                       (256, 40, 128), (2048, 600, 128), (384, 33, 16), (96, 20, 48), (64, 9, 8)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
def test_int8_linear_rows_groups_dtypes(lib, rows, k, n, group, dtype):
    x, weight, scales, group = int8_cases.make(rows, k, n, dtype, seed=rows + k, group=group)
    got = int8_cases.call_int8_linear(lib, *on_cuda(x, weight, scales), group, device="cuda").cpu()
    int8_cases.check(got, int8_cases.reference(x, weight, scales, group))


@pytest.mark.parametrize("group", [None, 32])
def test_int8_linear_layouts_and_errors(lib, group):
    x, weight, scales, group = int8_cases.make(6, 128, 33, torch.bfloat16, group=group)
    x3 = x.reshape(2, 3, 128)
    got = int8_cases.call_int8_linear(lib, *on_cuda(x3, weight, scales), group, device="cuda").cpu()
    assert got.shape == (2, 3, 33)
    int8_cases.check(got, int8_cases.reference(x3, weight, scales, group))
    xt = torch.randn(130, 2, 3).permute(1, 2, 0)[:, :, 1:129]
    wide = torch.zeros(33, 256, dtype=torch.int8)
    wide[:, ::2] = weight  # a strided weight: the strided kernel or the dequantized product
    got = int8_cases.call_int8_linear(lib, xt.cuda(), wide.cuda()[:, ::2], scales.float().cuda(), group,
                                      device="cuda").cpu()
    int8_cases.check(got, int8_cases.reference(xt, weight, scales.float(), group))
    for name, xe, we, se, ge, message in int8_cases.errors():
        with pytest.raises(KilnError, match=message):
            int8_cases.call_int8_linear(lib, *on_cuda(xe, we, se), ge, device="cuda")


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
    ("int8,embedding=int8", "aoti_torch_cuda_int8_linear"),
    ("int4,group=32", "aoti_torch_cuda_int4_linear"),
    ("int4,group=128,embedding=int8", "aoti_torch_cuda_int4_linear"),
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
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
    reference = quantize_weights(ep, parse_quantize_spec(spec)).module()
    module = Module(str(path))
    module.load({})
    try:
        for rows in (1, 3, 40, 128):  # decode (direct kernels) and prefill (dequantized blocks)
            ids = torch.randint(0, 256, (2, rows), device="cuda")
            (got,) = module.execute("forward", [ids], output="torch")
            with torch.no_grad():
                want = reference(ids)
            rel = float((got.float() - want.float()).norm() / want.float().norm())
            limit = 1e-4 if dtype == torch.float32 else 1e-2
            assert rel < limit, f"{spec} {dtype} rows={rows}: relative error {rel:.2e}"
            with torch.no_grad():
                full = model(ids).float()
            assert float((got.float() - full).norm() / full.norm()) < 0.15
    finally:
        module.close()
