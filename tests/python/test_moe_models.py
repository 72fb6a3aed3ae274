"""Mixture-of-Experts models of transformers through kiln.export on the CPU: their grouped
expert products (transformers::grouped_mm_fallback in float32, aten._grouped_mm in
bfloat16) become Kiln's op kiln::grouped_mm (passes/grouped_mm.py), which the library
calls as aoti_torch_cpu_grouped_mm instead of libtorch's proxy executor. Each tiny model
(random weights) is exported once and compared with eager on fresh inputs of several
lengths. Also: the pass's handling of aten._grouped_mm's other forms."""

from __future__ import annotations

import os

import pytest
import torch

import kiln
from kiln.exporter.kiln_ops import GROUPED_MM
from kiln.exporter.passes.grouped_mm import GroupedMmError, rewrite_grouped_mm, source_ops
from kiln.runtime import Module

pytest.importorskip("transformers")

from moe_models import MODELS, VOCAB, export_moe, relative_error, tiny_moe  # noqa: E402

# Kiln's allocations start as NaN, so an output element the op leaves unwritten fails.
os.environ["KILN_POISON_ALLOCATIONS"] = "1"


def _count(ep, target) -> int:
    return sum(1 for n in ep.graph.nodes if n.op == "call_function" and n.target is target)


@pytest.mark.parametrize("name", MODELS)
def test_moe_model_matches_eager(tmp_path, name):
    model = tiny_moe(name)
    ep = export_moe(model)
    assert len(source_ops(ep)) == 4  # two layers, up and down projections
    program = kiln.export(ep, backend="cpu", verbose=False)
    imports = dict(program.methods["forward"].metadata)["shim_imports"].split(",")
    assert "aoti_torch_cpu_grouped_mm" in imports
    assert "aoti_torch_proxy_executor_call_function" not in imports
    path = tmp_path / f"{name}.kiln"
    program.save(str(path))
    module = Module(str(path))
    module.load({})
    gen = torch.Generator().manual_seed(11)
    try:
        for length in (2, 5, 37):  # decode-sized, a short prompt, more rows than experts x 4
            ids = torch.randint(0, VOCAB, (1, length), generator=gen)
            (out,) = module.execute("forward", [ids.numpy()])
            with torch.no_grad():
                want = model(ids)
            err = relative_error(torch.from_numpy(out), want)
            assert err <= 1e-4, f"{name}, {length} tokens: relative error {err:.2e}"
    finally:
        module.close()


# ---- the pass on aten._grouped_mm's forms ------------------------------------------------


class Grouped(torch.nn.Module):
    def __init__(self, form: str):
        super().__init__()
        self.form = form

    def forward(self, a, b, offs):
        if self.form == "2d3d":
            return torch._grouped_mm(a, b, offs=offs)
        if self.form == "3d3d":
            return torch._grouped_mm(a, b)
        return torch._grouped_mm(a, b, offs=offs)  # 2d x 2d: offs split K


def _inputs(form: str):
    g = torch.Generator().manual_seed(3)
    bf = torch.bfloat16
    offs = torch.tensor([3, 3, 8], dtype=torch.int32)
    if form == "3d3d":
        return torch.randn(3, 5, 16, generator=g).to(bf), torch.randn(3, 16, 8, generator=g).to(bf), offs
    if form == "2d2d":
        return (torch.randn(5, 8, generator=g).to(bf), torch.randn(8, 16, generator=g).to(bf).t().contiguous().t(),
                offs)
    return torch.randn(10, 16, generator=g).to(bf), torch.randn(3, 8, 16, generator=g).to(bf).transpose(1, 2), offs


def test_the_pass_rewrites_the_moe_form_and_batched_products():
    for form, target in (("2d3d", GROUPED_MM), ("3d3d", torch.ops.aten.bmm.default)):
        args = _inputs(form)
        ep = torch.export.export(Grouped(form), args)
        notes = []
        out = rewrite_grouped_mm(ep, log=notes.append)
        assert not source_ops(out) and _count(out, target) == 1, form
        assert len(source_ops(ep)) == 1  # the caller's program is left as it was
        with torch.no_grad():
            got, want = out.module()(*args), Grouped(form)(*args)
        end = int(args[2][-1]) if form == "2d3d" else None
        torch.testing.assert_close(got[:end], want[:end], rtol=1e-2, atol=1e-2)
        assert notes


def test_the_pass_refuses_other_forms_by_name():
    ep = torch.export.export(Grouped("2d2d"), _inputs("2d2d"))
    with pytest.raises(GroupedMmError, match=r"aten._grouped_mm \(2-d x 2-d with offs.*this form is not supported"):
        rewrite_grouped_mm(ep)


class IntegerRouting(torch.nn.Module):
    """The routing as transformers exports it on CUDA: histc over integer expert ids."""

    def forward(self, x, w, expert_ids):
        ids, perm = torch.sort(expert_ids)
        counts = torch.histc(ids.int(), bins=w.shape[0], min=0, max=w.shape[0] - 1)
        offs = torch.cumsum(counts, dim=0, dtype=torch.int32)
        return torch._grouped_mm(x[perm], w, offs=offs)


def test_integer_histc_of_the_routing_counts_in_float():
    x = torch.randn(9, 16).to(torch.bfloat16)
    w = torch.randn(4, 8, 16).to(torch.bfloat16).transpose(1, 2)
    ids = torch.tensor([3, 0, 3, 1, 3, 0, 0, 3, 1])
    # Traced on the meta device: ATen's CPU histc refuses integers even for shapes.
    ep = torch.export.export(IntegerRouting(), tuple(t.to("meta") for t in (x, w, ids)))
    out = rewrite_grouped_mm(ep)
    histc = [n for n in out.graph.nodes if n.op == "call_function" and n.target is torch.ops.aten.histc.default]
    assert len(histc) == 1 and histc[0].args[0].meta["val"].dtype == torch.float32
    (back,) = histc[0].users
    assert back.meta["val"].dtype == torch.int32  # cast back: the cumsum after it sees what it saw before
    assert _count(out, GROUPED_MM) == 1


def test_a_device_without_the_shim_refuses_a_grouped_product():
    ep = torch.export.export(Grouped("2d3d"), _inputs("2d3d"))
    with pytest.raises(GroupedMmError, match="aoti_torch_<device>_grouped_mm"):
        rewrite_grouped_mm(ep, available=False)
    plain = torch.export.export(torch.nn.Linear(4, 4), (torch.randn(2, 4),))
    assert rewrite_grouped_mm(plain, available=False) is plain  # nothing to rewrite: nothing needed


def test_the_pass_is_on_by_default_and_can_be_turned_off():
    from kiln.exporter.backends.cpu import CpuBackend

    backend = CpuBackend()
    assert len(backend.custom_passes({})) == len(backend.custom_passes({"grouped_mm": "off"})) + 1
    shims = backend.aoti_compile_options({})["aot_inductor.custom_ops_to_c_shims"]
    assert GROUPED_MM in shims
    assert "aot_inductor.custom_ops_to_c_shims" not in backend.aoti_compile_options({"grouped_mm": "off"})
