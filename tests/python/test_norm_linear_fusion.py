"""RMSNorm + linear fusion (kiln/exporter/passes/norm_linear_fusion.py) into Kiln's op
kiln::rms_norm_linear: which linears it takes, that the op is called as the C shim
aoti_torch_cpu_rms_norm_linear (no libtorch proxy executor), and that the fused program
computes what eager does through AOTInductor + Kiln's runtime."""

import os

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln
from kiln.exporter import CudaBackend
from kiln.exporter.kiln_ops import RMS_NORM_LINEAR
from kiln.exporter.passes.norm_linear_fusion import fuse_norm_linear
from kiln.runtime import Module

# Kiln's allocations start as NaN, so an output element the op leaves unwritten fails.
os.environ["KILN_POISON_ALLOCATIONS"] = "1"

D, INTER = 32, 48


class GemmaRMSNorm(nn.Module):
    """Gemma's form: float32 math, gain (1 + weight), result cast back to x's dtype."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        xf = x.float()
        out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (out * (1.0 + self.weight.float())).type_as(x)


class PlainRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    """Two norm -> projection pairs, plus a norm whose output is also read elsewhere
    (which must stay unfused: the norm runs anyway)."""

    def __init__(self, dtype=torch.float32):
        super().__init__()
        self.norm1 = GemmaRMSNorm(D)
        self.up = nn.Linear(D, INTER, bias=False)
        self.norm2 = PlainRMSNorm(INTER)
        self.down = nn.Linear(INTER, D, bias=False)
        self.norm3 = GemmaRMSNorm(D)
        self.out = nn.Linear(D, D, bias=False)
        self.to(dtype)

    def forward(self, x):
        h = x + self.down(self.norm2(F.gelu(self.up(self.norm1(x)))))
        n = self.norm3(h)
        return self.out(n) + n


def fused_ops(ep) -> int:
    return sum(1 for n in ep.graph.nodes if n.op == "call_function" and n.target is RMS_NORM_LINEAR)


def linears(ep) -> int:
    return sum(1 for n in ep.graph.nodes if n.op == "call_function" and n.target is torch.ops.aten.linear.default)


def export_block(model, dtype=torch.float32):
    t = torch.export.Dim("t", min=1, max=64)
    return torch.export.export(model, (torch.randn(2, 5, D, dtype=dtype),), dynamic_shapes=({1: t},))


def test_the_pass_fuses_norms_read_only_by_their_projection():
    torch.manual_seed(0)
    model = Block().eval()
    ep = export_block(model)
    notes = []
    fused = fuse_norm_linear(ep, log=notes.append)
    assert (fused_ops(fused), linears(fused)) == (2, 1)  # norm3's output is read twice: unfused
    assert notes == ["norm-linear fusion: 2 of 3 linears fused with the RMSNorm before them"]
    assert fused_ops(ep) == 0  # the caller's program is left as it was
    x = torch.randn(2, 7, D)
    with torch.no_grad():
        torch.testing.assert_close(fused.module()(x), model(x), rtol=1e-5, atol=1e-5)


def test_bfloat16_rounds_the_norm_before_the_product_as_eager_does():
    torch.manual_seed(1)
    model = Block(torch.bfloat16).eval()
    fused = fuse_norm_linear(export_block(model, torch.bfloat16))
    # Only Gemma's norm: the plain one computes in bfloat16 here, which the op (float32
    # math) would not reproduce, so it stays as it is.
    assert (fused_ops(fused), linears(fused)) == (1, 2)
    x = torch.randn(2, 3, D, dtype=torch.bfloat16)
    with torch.no_grad():
        torch.testing.assert_close(fused.module()(x), model(x), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("shape", [(2, 9, D), (2, 1, D), (2, 40, D)])
def test_fused_export_calls_the_c_shim_and_matches_eager(tmp_path, shape):
    torch.manual_seed(2)
    model = Block().eval()
    program = kiln.export(export_block(model), backend="cpu", compile_specs={"fuse_norm_linear": "on"}, verbose=False)
    method = program.methods["forward"]
    imports = dict(method.metadata)["shim_imports"].split(",")
    assert "aoti_torch_cpu_rms_norm_linear" in imports
    assert "aoti_torch_proxy_executor_call_function" not in imports
    path = tmp_path / "block.kiln"
    program.save(str(path))
    module = Module(str(path))
    module.load({})
    x = torch.randn(*shape)
    (out,) = module.execute("forward", [x.numpy()])
    with torch.no_grad():
        np.testing.assert_allclose(out, model(x).numpy(), rtol=1e-5, atol=1e-5)
    module.close()


def test_a_device_without_the_shim_refuses_the_spec():
    from kiln.exporter.backends.metal import MetalBackend

    with pytest.raises(ValueError, match="aoti_torch_mps_rms_norm_linear"):
        MetalBackend().custom_passes({"fuse_norm_linear": "on"})
    assert MetalBackend().custom_passes({"fuse_norm_linear": "off", "grouped_mm": "off"}) == []  # off: no pass, no error


def test_cuda_fuses_decode_rows_only():
    """The CUDA op is a GEMV: a dynamic sequence (prefill) or more than 4 rows stays
    unfused; a one-token step fuses."""
    torch.manual_seed(5)
    model = Block().eval()
    assert len(CudaBackend().custom_passes({"fuse_norm_linear": "on", "grouped_mm": "off"})) == 2
    assert fused_ops(fuse_norm_linear(export_block(model), max_rows=CudaBackend.NORM_LINEAR_MAX_ROWS)) == 0
    step = torch.export.export(model, (torch.randn(2, 1, D),))
    assert fused_ops(fuse_norm_linear(step, max_rows=4)) == 2
    wide = torch.export.export(model, (torch.randn(5, 1, D),))
    assert fused_ops(fuse_norm_linear(wide, max_rows=4)) == 0


class QkvAfterNorm(nn.Module):
    """Three projections of one norm: projection fusion makes them one, which the norm
    then fuses with (the combination a CUDA decode layer would use)."""

    def __init__(self):
        super().__init__()
        self.norm = GemmaRMSNorm(D)
        self.q, self.k, self.v = (nn.Linear(D, n, bias=False) for n in (32, 8, 8))

    def forward(self, x):
        h = self.norm(x)
        return self.q(h) * 2, self.k(h) + 1, self.v(h) - 1  # no projection may be a graph output


def test_after_projection_fusion_the_fused_projection_takes_the_norm(tmp_path):
    torch.manual_seed(4)
    model = QkvAfterNorm().eval()
    ep = export_block(model)
    assert fused_ops(fuse_norm_linear(ep)) == 0  # three readers: the norm has to run anyway
    program = kiln.export(ep, backend="cpu", compile_specs={"fuse_projections": "on", "fuse_norm_linear": "on"},
                          verbose=False)
    assert "aoti_torch_cpu_rms_norm_linear" in dict(program.methods["forward"].metadata)["shim_imports"]
    path = tmp_path / "qkv.kiln"
    program.save(str(path))
    module = Module(str(path))
    module.load({})
    x = torch.randn(2, 6, D)
    outs = module.execute("forward", [x.numpy()])
    with torch.no_grad():
        for got, want in zip(outs, model(x)):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    module.close()
