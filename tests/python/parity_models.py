"""Models of the CPU parity suite: each one exercises a part of the shim ABI or
a fallback op that Kiln must get exactly right. Every entry says how to build
the model, its example inputs, the dynamic dims to export with, and how to make
fresh inputs (of other sizes where dims are dynamic) for the comparison."""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 16)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class ConvNet(nn.Module):
    """Strided, dilated, grouped and depthwise conv1d/conv2d, batchnorm, transposed conv."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)  # depthwise
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.c1d = nn.Conv1d(4, 6, 5, stride=2, padding=2)
        self.dw1d = nn.Conv1d(6, 6, 3, padding=1, groups=6, bias=False)

    def forward(self, image, signal):
        y = F.relu(self.bn1(self.c1(image)))
        y = F.relu(self.c2(y))
        y = self.dw(y) + y
        y = self.up(y)
        s = self.dw1d(F.gelu(self.c1d(signal)))
        return y, s


class TransformerBlock(nn.Module):
    """Pre-norm block: LayerNorm, multi-head SDPA (causal, or with an additive
    mask), GELU MLP; the sequence length is dynamic."""

    def __init__(self, dim=64, heads=4, causal=True):
        super().__init__()
        self.heads = heads
        self.causal = causal
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.causal:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class OffsetViews(nn.Module):
    """Outputs that are views into one buffer at non-zero storage offsets."""

    def forward(self, x):
        y = x * 2.0 + 1.0
        return y[:, 3:], y[1:, :5], y.t()[2:]


class BatchedMatmul(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b) * 0.5


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 24)
        self.out = nn.Linear(24, 8)

    def forward(self, ids):
        return self.out(self.emb(ids).mean(dim=1))


class SharedWeightForward(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.shared = shared

    def forward(self, x):
        return torch.tanh(self.shared(x))


class SharedWeightScore(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.shared = shared

    def forward(self, x):
        return self.shared(x).sum(dim=-1, keepdim=True)


class FallbackOps(nn.Module):
    """Ops AOTInductor leaves to fallback kernels on the CPU: position ids from a padding mask
    (cumsum), routing (topk), sorting, a spectrum (rfft and complex abs) and a rotary-style
    product of complex views."""

    def forward(self, x, mask):
        positions = torch.cumsum(mask, dim=1) * mask - 1
        top_values, top_index = torch.topk(x, 3, dim=-1)
        ordered = torch.sort(x, dim=1, stable=True).values
        spectrum = torch.fft.rfft(x, dim=-1).abs()
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        turn = torch.polar(torch.ones_like(pairs.real), pairs.real)
        rotated = torch.view_as_real(pairs * turn).flatten(-2)
        return positions, top_values, top_index, ordered, spectrum, rotated


@dataclasses.dataclass
class Case:
    name: str
    # method name -> (module, example inputs, dynamic_shapes or None, fresh-input factory)
    methods: dict[str, tuple[nn.Module, tuple, object, Callable[[], tuple]]]
    dtype: torch.dtype = torch.float32
    cli: bool = True  # .npy has no bfloat16: such programs are checked through Python only


def _seed(n):
    torch.manual_seed(n)


def build_cases() -> list[Case]:
    _seed(0)
    cases = []
    batch = torch.export.Dim("batch", min=1, max=64)
    cases.append(Case("mlp", {"forward": (Mlp().eval(), (torch.randn(4, 32),), ({0: batch},),
                                          lambda: (torch.randn(7, 32),))}))
    cases.append(Case("convnet", {"forward": (ConvNet().eval(), (torch.randn(2, 3, 16, 16), torch.randn(2, 4, 20)),
                                              None, lambda: (torch.randn(2, 3, 16, 16), torch.randn(2, 4, 20)))}))
    seq = torch.export.Dim("seq", min=2, max=128)
    cases.append(Case("transformer_causal",
                      {"forward": (TransformerBlock(causal=True).eval(), (torch.randn(2, 16, 64),),
                                   ({1: seq},), lambda: (torch.randn(2, 23, 64),))}))

    def masked_inputs(t):
        mask = torch.randn(2, 1, t, t)  # additive float mask, broadcast over heads
        return torch.randn(2, t, 64), mask

    seq_m = torch.export.Dim("seq_m", min=2, max=128)
    cases.append(Case("transformer_masked",
                      {"forward": (TransformerBlock(causal=False).eval(), masked_inputs(16),
                                   ({1: seq_m}, {2: seq_m, 3: seq_m}), lambda: masked_inputs(11))}))
    cases.append(Case("offset_views", {"forward": (OffsetViews().eval(), (torch.randn(6, 9),), None,
                                                   lambda: (torch.randn(6, 9),))}))
    cases.append(Case("bmm", {"forward": (BatchedMatmul().eval(), (torch.randn(3, 5, 7), torch.randn(3, 7, 4)), None,
                                          lambda: (torch.randn(3, 5, 7), torch.randn(3, 7, 4)))}))
    cases.append(Case("embedding", {"forward": (Embedding().eval(), (torch.randint(0, 100, (4, 6)),), None,
                                                lambda: (torch.randint(0, 100, (4, 6)),))}))
    bf16_block = TransformerBlock(causal=True).eval().to(torch.bfloat16)
    seq_b = torch.export.Dim("seq_b", min=2, max=128)
    cases.append(Case("transformer_bf16",
                      {"forward": (bf16_block, (torch.randn(2, 16, 64, dtype=torch.bfloat16),), ({1: seq_b},),
                                   lambda: (torch.randn(2, 9, 64, dtype=torch.bfloat16),))},
                      dtype=torch.bfloat16, cli=False))

    def fallback_inputs(b, t):
        mask = (torch.rand(b, t) > 0.3).long()
        return torch.randn(b, t, 8), mask

    cases.append(Case("fallback_ops", {"forward": (FallbackOps().eval(), fallback_inputs(2, 6), None,
                                                   lambda: fallback_inputs(2, 6))}))
    shared = nn.Linear(16, 16)
    cases.append(Case("two_methods", {
        "forward": (SharedWeightForward(shared).eval(), (torch.randn(3, 16),), None, lambda: (torch.randn(3, 16),)),
        "score": (SharedWeightScore(shared).eval(), (torch.randn(3, 16),), None, lambda: (torch.randn(3, 16),)),
    }))
    return cases
