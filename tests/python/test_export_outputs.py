"""The output contract: whatever a model returns, the program's outputs are exactly what the
compiled library returns, or the export is refused.

Three AOTInductor compiles in all (~20-60 s each on a small machine): one model returning
every kind of output at once (nested containers, None, constants, outputs aliasing inputs and
each other, parameters and buffers returned directly, a written buffer, a written input, an
RNN's (h, c)), a tiny Hugging Face RWKV (a ModelOutput with a state list, and parameters written
in place at its first inference call), and one compile with the parameter-write handling
turned off, which the final contract check must refuse. Each program is loaded with Kiln's
runtime and run on fresh inputs against eager PyTorch.
"""

from __future__ import annotations

import copy
import os

import pytest
import torch
from structure_check import assert_same_structure

import kiln
from kiln.exporter import (
    AotiBackend,
    CompiledMethod,
    ContractMismatchError,
    CpuBackend,
    ParameterWriteWarning,
    UnsupportedOutputError,
)
from kiln.exporter.passes import outputs as outputs_mod
from kiln.output_tree import rebuild
from kiln.program import DimSpec, TensorSpec

RTOL = 1e-5
ATOL = 1e-5


def _module(path):
    from kiln.runtime import Module

    module = Module(str(path))
    module.load()
    return module


# ---- every kind of output in one model --------------------------------------------------


class OutputZoo(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.cell = torch.nn.LSTMCell(4, 3)
        self.register_buffer("steps", torch.zeros(4))

    def forward(self, x, cache):
        self.steps.add_(1)  # a buffer written in place: state kept across calls
        cache.mul_(0.5).add_(x)  # an input written in place
        y = self.lin(x) + self.steps
        h = c = torch.zeros(x.shape[0], 3)
        for _ in range(2):
            h, c = self.cell(x, (h, c))
        return {
            "y": y,
            "same": (y, y),  # the same tensor twice more
            "y_t": y.t(),  # a view of another output
            "y_alias": y.detach(),  # the same view of y's storage
            "x": x,  # an input returned unchanged
            "x_row": x[1],  # a view of an input
            "x_again": x,  # the same input twice
            "none": None,
            "constants": (3, 0.5, True, "tag"),
            "bias": self.lin.bias,  # a parameter returned directly
            "steps": self.steps,  # the written buffer
            "cache": cache,  # the written input
            "state": (h, c),  # an RNN's (h, c)
            "nested": [x * 2, {"deep": (y.sum(0), None)}],
        }


ZOO_TENSOR_OUTPUTS = [
    "y", "same.0", "same.1", "y_t", "y_alias", "x", "x_row", "x_again", "bias", "steps", "cache",
    "state.0", "state.1", "nested.0", "nested.1.deep.0",
]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("zoo")
    model = OutputZoo().eval()
    reference = copy.deepcopy(model)
    ep = torch.export.export(model, (torch.randn(2, 4), torch.randn(2, 4)))
    result = kiln.export(ep, backend=CpuBackend(temp_dir=tmp), verbose=False)
    path = tmp / "zoo.kiln"
    result.save(path)
    return {"reference": reference, "result": result, "path": path, "module": _module(path)}


def test_zoo_contract_is_the_tensor_leaves_named_by_path(zoo):
    compiled = zoo["result"].methods["forward"]
    assert [o.name for o in compiled.outputs] == ZOO_TENSOR_OUTPUTS
    assert compiled.library_outputs == len(ZOO_TENSOR_OUTPUTS) and compiled.library_inputs == 2
    meta = zoo["module"].method_meta("forward")
    assert [o.name for o in meta.outputs] == ZOO_TENSOR_OUTPUTS
    assert [o.dtype for o in meta.outputs] == ["float32"] * len(ZOO_TENSOR_OUTPUTS)
    assert [o.shape for o in meta.outputs][:5] == [(2, 4), (2, 4), (2, 4), (4, 2), (2, 4)]
    assert meta.metadata["mutated_inputs"] == "cache"


def test_zoo_runs_like_eager_on_fresh_inputs(zoo):
    module, reference = zoo["module"], zoo["reference"]
    tree = module.method_meta("forward").metadata["output_tree"]
    torch.manual_seed(1)
    for call in range(2):  # twice: the written buffer keeps its state between calls
        x, cache = torch.randn(2, 4), torch.randn(2, 4)
        kiln_x, kiln_cache = x.clone(), cache.clone()
        outs = module.forward(kiln_x, kiln_cache, output="torch")
        assert len(outs) == len(ZOO_TENSOR_OUTPUTS)
        with torch.no_grad():
            want = reference(x.clone(), cache)  # writes `cache` and reference.steps
        assert_same_structure(rebuild(tree, outs), want, f"call {call}")
        # The caller's input was written in place, as eager writes it.
        torch.testing.assert_close(kiln_cache, cache, rtol=RTOL, atol=ATOL)
        # Repeated tensors come back as distinct tensors (the runtime owns each handle once);
        # an input returned, or a view of it, shares the caller's memory.
        by_name = dict(zip(ZOO_TENSOR_OUTPUTS, outs))
        pointers = [by_name[n].data_ptr() for n in ("y", "same.0", "same.1", "y_alias")]
        assert len(set(pointers)) == 4
        assert by_name["x"].data_ptr() == kiln_x.data_ptr() != by_name["x_again"].data_ptr()
        assert by_name["x_row"].data_ptr() == kiln_x[1].data_ptr()
        assert by_name["cache"].data_ptr() == kiln_cache.data_ptr()
        assert by_name["y_t"].data_ptr() == by_name["y"].data_ptr()


def test_zoo_output_tree_keeps_none_and_constants(zoo):
    import json

    tree = json.loads(zoo["result"].methods["forward"].metadata["output_tree"])
    assert tree["outputs"] == ZOO_TENSOR_OUTPUTS
    rebuilt = rebuild(tree, list(range(len(ZOO_TENSOR_OUTPUTS))))
    assert rebuilt["none"] is None and rebuilt["constants"] == (3, 0.5, True, "tag")
    assert rebuilt["nested"] == [13, {"deep": (14, None)}]
    assert rebuilt["state"] == (11, 12)


# ---- Hugging Face RWKV: a ModelOutput with a state list, parameters written in place ---------


@pytest.fixture(scope="module")
def rwkv(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("rwkv")
    # rescale_every=1: the first inference call divides block 1's output weights by 2, a write
    # to parameters that torch.export records in the graph (and AOTInductor would return as
    # extra outputs).
    config = transformers.RwkvConfig(
        vocab_size=64, context_length=16, hidden_size=32, num_hidden_layers=2,
        attention_hidden_size=32, intermediate_size=64, rescale_every=1,
    )
    model = transformers.RwkvForCausalLM(config).eval()
    reference = copy.deepcopy(model)  # export flips the model's "already rescaled" flag
    ids = torch.randint(0, 64, (1, 5))
    ep = torch.export.export(model, (ids,))
    with pytest.warns(ParameterWriteWarning, match="rwkv.blocks.1.attention.output.weight"):
        result = kiln.export({"forward": ep}, backend=CpuBackend(temp_dir=tmp), verbose=False)
    path = tmp / "rwkv.kiln"
    result.save(path)
    return {"reference": reference, "result": result, "path": path, "module": _module(path)}


def test_rwkv_loads_and_matches_eager(rwkv):
    module, reference = rwkv["module"], rwkv["reference"]
    meta = module.method_meta("forward")
    assert [o.name for o in meta.outputs] == ["logits"] + [f"state.{i}" for i in range(5)]
    assert meta.metadata["written_parameters"].split(",") == [
        f"rwkv.blocks.{b}.{w}" for b in (0, 1) for w in ("attention.output.weight", "feed_forward.value.weight")
    ]
    torch.manual_seed(2)
    for call in range(2):  # eager rescales once; the method recomputes it from the stored weights
        ids = torch.randint(0, 64, (1, 5))
        outs = module.forward(ids, output="torch")
        with torch.no_grad():
            want = reference(ids)
        got = rebuild(meta.metadata["output_tree"], outs)
        assert list(got) == ["logits", "state"]
        assert_same_structure(got, want, f"call {call}")


# ---- refused at export ------------------------------------------------------------------------


class ReturnsSize(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.shape[0]


def test_symint_output_is_refused_before_compiling(tmp_path, monkeypatch):
    def no_compile(*args, **kwargs):
        raise AssertionError("compiled a program whose outputs were refused")

    monkeypatch.setattr(torch._inductor, "aot_compile", no_compile)
    ep = torch.export.export(ReturnsSize(), (torch.randn(3, 2),), dynamic_shapes=({0: torch.export.Dim("n", max=8)},))
    with pytest.raises(UnsupportedOutputError, match=r"output 'output\.1' is a SymInt.*dynamic input sizes") as info:
        kiln.export(ep, backend=CpuBackend(temp_dir=tmp_path), verbose=False)
    assert info.value.output == "output.1"
    # A static size is a constant: kept in the output tree, not returned.
    static = outputs_mod.plan_outputs(torch.export.export(ReturnsSize(), (torch.randn(3, 2),)))
    assert [s.name for s in static.specs] == ["output.0"]
    assert rebuild(static.tree, ["t"]) == ("t", 3)


class WritesItsWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        with torch.no_grad():
            self.w.mul_(0.5)
        return x @ self.w


def test_library_disagreeing_with_the_contract_is_refused_before_packing(tmp_path, monkeypatch):
    """With parameter writes left in the program, AOTInductor's library returns the written
    weight as an extra output (the RWKV failure at load); the final check must catch it."""
    monkeypatch.setattr(outputs_mod, "strip_parameter_writes", lambda ep, *a, **k: (ep, []))
    ep = torch.export.export(WritesItsWeight(), (torch.randn(2, 4),))
    expected = r"returns 2 output\(s\), but the contract lists 1 input\(s\) \(x\) and 1 output\(s\) \(output\)"
    with pytest.raises(ContractMismatchError, match=expected):
        kiln.export(ep, backend=CpuBackend(temp_dir=tmp_path), verbose=False)
    assert os.listdir(tmp_path) == []  # the compile's scratch directory is gone too


class _CannedBackend(AotiBackend):
    def __init__(self, library_outputs):
        super().__init__()
        self.library_outputs = library_outputs

    def preprocess(self, method_name, exported_program, compile_specs=None):
        spec = TensorSpec(name="x", dtype="float32", dims=[DimSpec(size=2)])
        return CompiledMethod(
            name=method_name, device="cpu", library=b"\x7fELF" + b"A" * 64, weights=b"",
            inputs=[spec], outputs=[TensorSpec(name="y", dtype="float32", dims=[DimSpec(size=2)])],
            library_inputs=None if self.library_outputs is None else 1, library_outputs=self.library_outputs,
        )


@pytest.mark.parametrize("library_outputs,match", [(3, "returns 3 output"), (None, "did not report")])
def test_export_checks_every_method_before_writing(library_outputs, match):
    ep = torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    with pytest.raises(ContractMismatchError, match=match):
        kiln.export(ep, backend=_CannedBackend(library_outputs), verbose=False)


# ---- reading the compiled library's interface from its generated source ---------------------

_WRAPPER = """
AOTInductorModel::AOTInductorModel(std::shared_ptr<ConstantMap> constants_map,
                                   const std::string& device_str)
    : AOTInductorModelBase(2,
                           3,
                           1,
                           device_str) {
    inputs_info_[0].name = "arg0_1";
    inputs_info_[1].name = "arg1_1";
    outputs_info_[0].name = "output0";
    outputs_info_[1].name = "output1";
    outputs_info_[2].name = "output2";
}
void AOTInductorModel::_const_run_impl(std::vector<AtenTensorHandle>& output_handles) {
    output_handles[0] = constants_->at(0);
}
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles, AtenTensorHandle* output_handles) {
%s
} // AOTInductorModel::run_impl
"""


def _spec(name):
    return TensorSpec(name=name, dtype="float32", dims=[])


def test_wrapper_interface_counts_and_slots():
    full = outputs_mod.read_library_interface(
        _WRAPPER % "output_handles[0] = buf0.release();\naoti_torch_clone(w, &output_handles[1]);\n"
        "output_handles[2] = var_0.release();"
    )
    assert (full.num_inputs, full.num_outputs, full.slots_known, full.unset, full.aliased) == (2, 3, True, [], [])
    outputs_mod.check_library_interface("m", [_spec("a"), _spec("b")], [_spec(n) for n in "xyz"], full)

    expected = r"returns 3 output\(s\), but the contract lists 2 input\(s\) \(a, b\) and 2"
    with pytest.raises(ContractMismatchError, match=expected):
        outputs_mod.check_library_interface("m", [_spec("a"), _spec("b")], [_spec("x"), _spec("y")], full)

    holes = outputs_mod.read_library_interface(
        _WRAPPER % "output_handles[0] = buf0.release();\noutput_handles[2] = output_handles[0];"
    )
    assert holes.unset == [1] and holes.aliased == [(2, 0)]
    with pytest.raises(ContractMismatchError, match=r"output 2 \('z'\) is output 0 \('x'\)"):
        outputs_mod.check_library_interface("m", [_spec("a"), _spec("b")], [_spec(n) for n in "xyz"], holes)
    holes.aliased = []
    with pytest.raises(ContractMismatchError, match=r"never fills output\(s\) 1 \('y'\)"):
        outputs_mod.check_library_interface("m", [_spec("a"), _spec("b")], [_spec(n) for n in "xyz"], holes)

    assert outputs_mod.read_library_interface("int main() {}") is None
    with pytest.raises(ContractMismatchError, match="states no input/output counts"):
        outputs_mod.check_library_interface("m", [], [], None)


# ---- names and structure, read from the program alone (no compile) --------------------------


def test_output_names_follow_the_model_structure():
    import collections

    Pair = collections.namedtuple("Pair", "first second")

    class Structured(torch.nn.Module):
        def forward(self, x):
            return {"a": x + 1, "b": [Pair(x * 2, x * 3), None], 7: x - 1}

    plan = outputs_mod.plan_outputs(torch.export.export(Structured(), (torch.randn(2),)))
    assert [s.name for s in plan.specs] == ["a", "b.0.first", "b.0.second", "7"]
    got = rebuild(plan.tree_json(), ["A", "F", "S", "Z"])
    assert got == {"a": "A", "b": [{"first": "F", "second": "S"}, None], 7: "Z"}

    class Bare(torch.nn.Module):
        def forward(self, x):
            return x.float()

    (only,) = outputs_mod.plan_outputs(torch.export.export(Bare(), (torch.ones(2, dtype=torch.int32),))).specs
    assert (only.name, only.dtype) == ("output", "float32")
