"""The Triton-only convolution rewrite (kiln.exporter.passes.conv_decomposition) computes
what aten.convolution computes, for every kind of convolution, and leaves no
convolution op in an exported program."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from kiln.exporter.passes.conv_decomposition import convolution_as_matmul, convolution_decompositions

CONFIGS = [  # groups, stride, padding, dilation, output_padding (transposed only)
    (1, 1, 0, 1, 0),
    (2, 2, 1, 1, 1),
    (4, 1, 2, 2, 0),
    (1, 3, 1, 2, 2),
    (8, 1, 1, 1, 0),  # depthwise
]


@pytest.mark.parametrize("nd,transposed,config", list(itertools.product((1, 2, 3), (False, True), CONFIGS)))
def test_matches_aten_convolution(nd, transposed, config):
    groups, stride, padding, dilation, output_padding = config
    torch.manual_seed(nd * 100 + groups * 10 + stride)
    channels, kernel = 8, 3
    x = torch.randn(2, channels, *([9] * nd), dtype=torch.float64)
    if transposed:
        weight = torch.randn(channels, 12 // groups if groups < 8 else 1, *([kernel] * nd), dtype=torch.float64)
        out_channels = weight.shape[1] * groups
    else:
        out_channels = 12 if groups < 8 else 8
        weight = torch.randn(out_channels, channels // groups, *([kernel] * nd), dtype=torch.float64)
        output_padding = 0
    bias = torch.randn(out_channels, dtype=torch.float64)
    args = ([stride] * nd, [padding] * nd, [dilation] * nd, transposed, [output_padding] * nd, groups)
    want = torch.ops.aten.convolution(x, weight, bias, *args)
    got = convolution_as_matmul(x, weight, bias, *args)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-10, atol=1e-10)


class Convs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.same = nn.Conv2d(8, 8, 4, padding="same", dilation=2, bias=False)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.c1d = nn.Conv1d(4, 6, 5, stride=2, padding=2)
        self.up1d = nn.ConvTranspose1d(6, 6, 3, stride=2, padding=1, output_padding=1, groups=3)

    def forward(self, image, signal):
        y = self.up(self.same(F.relu(self.dw(self.c(image)))))
        return y, self.up1d(self.c1d(signal)), self.c1d(signal[0])  # the last one unbatched


def test_exported_program_has_no_convolution_left_and_matches_eager():
    torch.manual_seed(0)
    model = Convs().eval()
    inputs = (torch.randn(2, 3, 16, 16), torch.randn(2, 4, 20))
    ep = torch.export.export(model, inputs).run_decompositions(convolution_decompositions())
    ops = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert not [op for op in ops if "conv" in op], ops
    fresh = (torch.randn(2, 3, 16, 16), torch.randn(2, 4, 20))
    with torch.no_grad():
        want = model(*fresh)
        got = ep.module()(*fresh)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert ((g - w).abs().max() / w.abs().max()).item() < 1e-5


def _position_index(h: int, w: int):
    """BEiT's relative position index: a new tensor filled by writes, the pattern that a
    re-trace of the exported program (run_decompositions) turns into a graph Inductor
    cannot lower (torch 2.11: "'Constant' object has no attribute 'data'")."""
    coords = torch.flatten(torch.stack(torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")), 1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += h - 1
    rel[:, :, 1] += w - 1
    rel[:, :, 0] *= 2 * w - 1
    n = (2 * h - 1) * (2 * w - 1) + 3
    index = torch.zeros(size=(h * w + 1,) * 2, dtype=rel.dtype)
    index[1:, 1:] = rel.sum(-1)
    index[0, 0:] = n - 3
    index[0:, 0] = n - 2
    index[0, 0] = n - 1
    return index


class PatchesWithRelativeBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.patches = nn.Conv2d(3, 4, 2, stride=2)
        self.grouped = nn.Conv2d(4, 4, 1, groups=2)
        self.table = nn.Parameter(torch.randn(3 * 3 + 3, 4))

    def forward(self, image):
        y = self.grouped(self.patches(image)).flatten(2).transpose(1, 2)  # [B, 4 patches, 4]
        y = torch.cat([y.mean(1, keepdim=True), y], 1)
        bias = self.table[_position_index(2, 2).view(-1)].view(5, 5, -1).permute(2, 0, 1)
        return torch.einsum("bsc,cst->bct", y, bias)


def test_backend_decomposes_convolutions_in_inductors_trace(tmp_path):
    """A backend's decomposition table reaches the library without a re-trace of the program:
    no convolution fallback is left, the BEiT index pattern compiles, and Kiln matches eager
    at another batch size."""
    import kiln
    from kiln.exporter.backends.cpu import CpuBackend
    from kiln.runtime import Module

    class ConvFreeCpu(CpuBackend):
        def decomposition_table(self, compile_specs):
            return convolution_decompositions()

    from torch._inductor.decomposition import select_decomp_table

    select_decomp_table()  # Inductor caches its table at the first compile of a process
    torch.manual_seed(0)
    model = PatchesWithRelativeBias().eval()
    ep = torch.export.export(model, (torch.randn(2, 3, 4, 4),),
                             dynamic_shapes=({0: torch.export.Dim("batch", max=16)},))
    program = kiln.export(ep, ConvFreeCpu(), verbose=False)
    imports = dict(program.methods["forward"].metadata)["shim_imports"].split(",")
    assert not [name for name in imports if "convolution" in name], imports
    path = tmp_path / "patches.kiln"
    program.save(str(path))
    fresh = torch.randn(5, 3, 4, 4)
    with torch.no_grad():
        want = model(fresh)
    module = Module(str(path))
    module.load()
    try:
        (got,) = module.execute("forward", [fresh], output="torch")
    finally:
        module.close()
    assert got.shape == want.shape
    assert ((got - want).abs().max() / want.abs().max()).item() < 1e-5
