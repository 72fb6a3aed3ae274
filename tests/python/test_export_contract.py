"""The method contract (names, dtypes, static/dynamic dims and bounds) read from
ExportedPrograms.  torch.export only: no AOTInductor compile, so these are fast."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

from kiln.exporter import metadata as md


def dims(spec):
    return [(d.size, d.dynamic, d.min, d.max) if d.dynamic else (d.size, False) for d in spec.dims]


class TwoInputs(torch.nn.Module):
    def forward(self, tokens, mask):
        # int64 tokens [b, t], bool mask [b, t] -> float32 [b, t, 3], int64 [b]
        emb = tokens.unsqueeze(-1).float().expand(-1, -1, 3) * mask.unsqueeze(-1)
        return emb, tokens.sum(dim=1)


def test_two_inputs_two_outputs_with_shared_and_unbounded_dims():
    b = Dim("b", min=1, max=8)
    t = Dim("t", min=2)  # no max: unbounded
    ep = torch.export.export(
        TwoInputs(),
        (torch.zeros(2, 5, dtype=torch.int64), torch.ones(2, 5, dtype=torch.bool)),
        dynamic_shapes={"tokens": {0: b, 1: t}, "mask": {0: b, 1: t}},
    )
    ins = md.input_specs(ep)
    assert [i.name for i in ins] == ["tokens", "mask"]
    assert [i.dtype for i in ins] == ["int64", "bool"]
    assert dims(ins[0]) == [(2, True, 1, 8), (5, True, 2, -1)]
    assert dims(ins[1]) == dims(ins[0])
    # The same symbol names the same dimension in both inputs.
    assert ins[0].dims[0].name == ins[1].dims[0].name
    assert ins[0].dims[1].name == ins[1].dims[1].name
    assert ins[0].dims[0].name != ins[0].dims[1].name

    outs = md.output_specs(ep)
    assert [o.dtype for o in outs] == ["float32", "int64"]
    assert dims(outs[0]) == [(2, True, 1, 8), (5, True, 2, -1), (3, False)]
    assert dims(outs[1]) == [(2, True, 1, 8)]
    assert outs[1].dims[0].name == ins[0].dims[0].name
    assert len({o.name for o in outs}) == 2


class Doubler(torch.nn.Module):
    def forward(self, x):
        return torch.cat([x, x], dim=0).to(torch.bfloat16)


def test_derived_output_dim_gets_bounds_of_its_expression():
    ep = torch.export.export(Doubler(), (torch.randn(3, 4),), dynamic_shapes=({0: Dim("n", min=2, max=10)},))
    (out,) = md.output_specs(ep)
    assert out.dtype == "bfloat16"
    d0 = out.dims[0]
    assert d0.dynamic and (d0.size, d0.min, d0.max) == (6, 4, 20)
    assert md.input_specs(ep)[0].dims[0].name in d0.name  # e.g. "2*s0"


def test_static_program_has_static_dims_and_constant_inputs_are_omitted():
    class WithFlag(torch.nn.Module):
        def forward(self, x, scale: float):
            return x * scale

    ep = torch.export.export(WithFlag(), (torch.randn(2, 3, dtype=torch.float64), 2.0))
    ins = md.input_specs(ep)
    assert [(i.name, i.dtype, dims(i)) for i in ins] == [("x", "float64", [(2, False), (3, False)])]
    vals = md.user_input_values(ep)
    assert len(vals) == 2 and vals[1] == 2.0
    assert tuple(vals[0].shape) == (2, 3)


def test_symint_inputs_are_refused_clearly():
    class Narrow(torch.nn.Module):
        def forward(self, x, n: int):
            return x[:n]

    ep = torch.export.export(Narrow(), (torch.randn(8, 2), 3), dynamic_shapes=({}, Dim.DYNAMIC))
    with pytest.raises(NotImplementedError, match="SymInt"):
        md.user_input_values(ep)


def test_program_metadata_keys_and_caller_overrides():
    import kiln

    meta = md.program_metadata({"model": "mlp", "kiln_exporter_version": "caller wins"})
    assert meta["torch_version"] == torch.__version__
    assert meta["model"] == "mlp" and meta["kiln_exporter_version"] == "caller wins"
    assert kiln.__version__ in md.program_metadata()["kiln_exporter_version"]
    assert "created_by" in meta and all(isinstance(v, str) for v in meta.values())


class CacheWriter(torch.nn.Module):
    """Writes one row of `cache` in place, the way an LLM decode step fills its KV cache."""

    def forward(self, x, pos, cache):
        cache.index_put_((pos,), x)
        return cache.sum(dim=0)


def test_inputs_written_in_place_are_named():
    ep = torch.export.export(CacheWriter(), (torch.randn(1, 4), torch.tensor([2]), torch.zeros(8, 4)))
    assert md.mutated_user_inputs(ep) == ["cache"]
    assert [i.name for i in md.input_specs(ep)] == ["x", "pos", "cache"]
    assert md.mutated_user_inputs(torch.export.export(Doubler(), (torch.randn(3, 4),))) == []
