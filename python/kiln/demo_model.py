"""The built-in default model for `scripts/demo.sh`: a small pre-norm
transformer block (LayerNorm, causal multi-head attention, GELU MLP) with a
dynamic sequence length, exported for CPU.

    python3 -m kiln.demo_model out.kiln
"""

from __future__ import annotations

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln


class DemoBlock(nn.Module):
    def __init__(self, dim: int = 128, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def export_demo(path: str) -> None:
    torch.manual_seed(0)
    model = DemoBlock().eval()
    seq = torch.export.Dim("seq", min=2, max=512)
    ep = torch.export.export(model, (torch.randn(1, 64, 128),), dynamic_shapes=({1: seq},))
    kiln.export({"forward": ep}, backend="cpu", metadata={"model": "kiln demo transformer block"}).save(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    export_demo(sys.argv[1] if len(sys.argv) > 1 else "demo.kiln")
