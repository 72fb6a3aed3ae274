"""A model whose linear layer calls ATen's CPU int4 weight-only product on a weight packed by
_convert_weight_to_int4pack_for_cpu (what torchao's int4 layout for the CPU calls): exported for
the CPU, its library calls aoti_torch_cpu__weight_int4pack_mm_cpu_tensor (Inductor's lowering),
and Kiln runs it to eager PyTorch's result on fresh inputs, with a dynamic number of rows (one,
as a decode step, and many)."""

import os

import numpy as np
import pytest
import torch
import torch.nn as nn

import kiln
from kiln.runtime import Module

os.environ["KILN_POISON_ALLOCATIONS"] = "1"

K, N, GROUP = 256, 96, 64


class Int4Linear(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        codes = torch.randint(0, 16, (N, K), generator=g, dtype=torch.int32)
        self.register_buffer("packed", torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 2))
        scales = torch.rand(K // GROUP, N, generator=g) * 0.08 + 0.02
        zeros = torch.rand(K // GROUP, N, generator=g) - 0.5
        self.register_buffer("scale_zero", torch.stack([scales, zeros], dim=2).to(dtype))
        self.bias = nn.Parameter(torch.randn(N, generator=g).to(dtype))

    def forward(self, x):
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.packed, GROUP, self.scale_zero)
        return torch.relu(y + self.bias)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_cpu_int4pack_model_runs_as_eager(tmp_path, dtype):
    model = Int4Linear(dtype).eval()
    rows = torch.export.Dim("rows", min=1, max=64)
    ep = torch.export.export(model, (torch.randn(4, K, dtype=dtype),), dynamic_shapes=({0: rows},))
    program = kiln.export({"forward": ep}, backend="cpu", verbose=False)
    path = tmp_path / "int4pack.kiln"
    program.save(path)
    # The library imports the shim (under Kiln's renamed prefix, or torch's).
    assert b"_torch_cpu__weight_int4pack_mm_cpu_tensor" in path.read_bytes()
    m = Module(path)
    m.load()
    g = torch.Generator().manual_seed(7)
    for r in (1, 3, 33):
        x = torch.randn(r, K, generator=g).to(dtype)
        with torch.no_grad():
            want = model(x).float().numpy()
        (got,) = m.execute("forward", [x], output="torch")
        got = got.float().numpy()
        rel = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        assert rel <= (1e-5 if dtype == torch.float32 else 2e-2), f"{r} rows: rel err {rel:.2e}"
