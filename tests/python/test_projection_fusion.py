"""Projection fusion (kiln/exporter/passes/projection_fusion.py): which linears become one, the
names their fused weights get, and that the fused program computes what eager does, on
the graph and through AOTInductor + Kiln's runtime."""

import os

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln
from kiln.exporter.passes.projection_fusion import fuse_projections
from kiln.runtime import Module

# Kiln's allocations start as NaN, so an output element the fused program leaves unwritten fails.
os.environ["KILN_POISON_ALLOCATIONS"] = "1"

D, HEADS, KV_HEADS, HEAD_DIM, INTER = 32, 4, 1, 8, 64


class GqaBlock(nn.Module):
    """A pre-norm decoder layer with grouped-query attention (k and v narrower than q)
    and a gated MLP: the shapes q/k/v and gate/up fusion is for."""

    def __init__(self, bias: bool = False):
        super().__init__()
        self.norm = nn.LayerNorm(D)
        self.q_proj = nn.Linear(D, HEADS * HEAD_DIM, bias=bias)
        self.k_proj = nn.Linear(D, KV_HEADS * HEAD_DIM, bias=bias)
        self.v_proj = nn.Linear(D, KV_HEADS * HEAD_DIM, bias=bias)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, D, bias=False)
        self.post_norm = nn.LayerNorm(D)
        self.gate_proj = nn.Linear(D, INTER, bias=False)
        self.up_proj = nn.Linear(D, INTER, bias=False)
        self.down_proj = nn.Linear(INTER, D, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.norm(x)
        q = self.q_proj(h).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k_proj(h).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v_proj(h).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        k, v = k.expand(b, HEADS, t, HEAD_DIM), v.expand(b, HEADS, t, HEAD_DIM)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, HEADS * HEAD_DIM)
        x = x + self.o_proj(a)
        h = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


def export_block(model, seq=5):
    t = torch.export.Dim("t", min=2, max=64)
    return torch.export.export(model, (torch.randn(2, seq, D),), dynamic_shapes=({1: t},))


def linears(ep) -> int:
    return sum(1 for n in ep.graph.nodes if n.op == "call_function" and n.target is torch.ops.aten.linear.default)


def assert_same_as_eager(ep, model, seqs=(3, 17, 64)):
    for seq in seqs:
        x = torch.randn(2, seq, D)  # fresh values, other lengths than exported with
        with torch.no_grad():
            torch.testing.assert_close(ep.module()(x), model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias", [False, True])
def test_qkv_and_gate_up_become_one_projection_each(bias):
    torch.manual_seed(0)
    model = GqaBlock(bias=bias).eval()
    ep = export_block(model)
    lines = []
    fused = fuse_projections(ep, log=lines.append)

    assert linears(ep) == 7 and linears(fused) == 4  # qkv, o, gate/up, down
    assert lines == ["projection fusion: 5 projections in 2 groups"]
    names = set(fused.state_dict)
    kinds = ["weight", "bias"] if bias else ["weight"]
    for kind in kinds:
        assert f"q_proj__k_proj__v_proj.{kind}" in names
        assert f"q_proj.{kind}" not in names and f"k_proj.{kind}" not in names
    assert "gate_proj__up_proj.weight" in names and "gate_proj.weight" not in names
    qkv = fused.state_dict["q_proj__k_proj__v_proj.weight"]
    assert tuple(qkv.shape) == ((HEADS + 2 * KV_HEADS) * HEAD_DIM, D)
    torch.testing.assert_close(qkv[HEADS * HEAD_DIM:][: KV_HEADS * HEAD_DIM], model.k_proj.weight, rtol=0, atol=0)
    assert_same_as_eager(fused, model)


class NotFusable(nn.Module):
    """Each pair reads one input but must stay apart: one has a bias and the other not;
    one weight is also used outside its projection; one output is a graph output."""

    def __init__(self):
        super().__init__()
        self.with_bias = nn.Linear(D, 8, bias=True)
        self.without_bias = nn.Linear(D, 8, bias=False)
        self.tied = nn.Linear(D, 8, bias=False)
        self.plain = nn.Linear(D, 8, bias=False)
        self.returned = nn.Linear(D, 8, bias=False)
        self.other = nn.Linear(D, 8, bias=False)

    def forward(self, x, y, z):
        a = self.with_bias(x) + self.without_bias(x)
        b = self.tied(y) * self.plain(y) + self.tied.weight.sum()
        return a, b, self.returned(z), torch.relu(self.other(z))


def test_mixed_bias_shared_weights_and_graph_outputs_stay_apart():
    torch.manual_seed(1)
    model = NotFusable().eval()
    args = tuple(torch.randn(3, D) for _ in range(3))
    ep = torch.export.export(model, args)
    lines = []
    assert fuse_projections(ep, log=lines.append) is ep
    assert lines == ["projection fusion: no projections share an input"]


class FlattensOneOutput(nn.Module):
    """`a` merges its projections' feature dimension with the sequence one (a view a
    column slice cannot take); `b` only splits heads off, which a slice allows."""

    def __init__(self):
        super().__init__()
        self.a1, self.a2 = nn.Linear(D, 8, bias=False), nn.Linear(D, 8, bias=False)
        self.b1, self.b2 = nn.Linear(D, 16, bias=False), nn.Linear(D, 8, bias=False)

    def forward(self, x, y):
        a = self.a1(x).view(2, 24) + self.a2(x).view(2, 24)
        b = self.b1(y).view(2, 3, 2, 8).sum(2) * self.b2(y)
        return a, b


def test_a_group_whose_consumer_needs_a_contiguous_output_stays_unfused():
    torch.manual_seed(2)
    model = FlattensOneOutput().eval()
    x, y = torch.randn(2, 3, D), torch.randn(2, 3, D)
    ep = torch.export.export(model, (x, y))
    lines = []
    fused = fuse_projections(ep, log=lines.append)
    assert lines == ["projection fusion: 2 projections in 1 groups; 1 groups left unfused "
                     "(a consumer needs a contiguous output)"]
    assert "b1__b2.weight" in fused.state_dict and "a1.weight" in fused.state_dict
    x, y = torch.randn(2, 3, D), torch.randn(2, 3, D)
    with torch.no_grad():
        for got, want in zip(fused.module()(x, y), model(x, y)):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def constant_names(method) -> set[str]:
    return {line.split("\t")[1] for line in method.metadata["aoti_constants"].splitlines()}


def test_fused_export_runs_and_two_methods_share_the_fused_weights(tmp_path):
    """With fuse_projections=ON, a prefill method (dynamic length) and a one-token method of
    the same layer both fuse to the same parameter names and run on Kiln's runtime as eager
    does; the CPU backend's default keeps the graph as exported."""
    torch.manual_seed(3)
    model = GqaBlock(bias=True).eval()
    eps = {"prefill": export_block(model), "step": torch.export.export(model, (torch.randn(2, 1, D),))}
    program = kiln.export(eps, backend="cpu", compile_specs={"fuse_projections": "ON"}, verbose=False)
    path = tmp_path / "block.kiln"
    program.save(str(path))
    for name in eps:
        names = constant_names(program.methods[name])
        assert {"q_proj__k_proj__v_proj.weight", "q_proj__k_proj__v_proj.bias", "gate_proj__up_proj.weight"} <= names
        assert not names & {"q_proj.weight", "k_proj.weight", "gate_proj.weight", "up_proj.weight"}

    module = Module(str(path))
    module.load({"aoti": {"weights": "kiln"}})
    for name, seq in (("prefill", 9), ("step", 1), ("prefill", 40)):
        x = torch.randn(2, seq, D)
        (out,) = module.execute(name, [x.numpy()])
        with torch.no_grad():
            np.testing.assert_allclose(out, model(x).numpy(), rtol=1e-5, atol=1e-5)
    module.close()

    unfused = kiln.export({"step": eps["step"]}, backend="cpu", verbose=False)
    names = constant_names(unfused.methods["step"])
    assert {"q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight", "up_proj.weight"} <= names
    assert "q_proj__k_proj__v_proj.weight" not in names
    from kiln.exporter import CpuBackend, CudaBackend

    assert not CpuBackend.FUSE_PROJECTIONS and CudaBackend.FUSE_PROJECTIONS
