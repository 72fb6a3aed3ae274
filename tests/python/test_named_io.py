"""A method is called the way the model was: arguments by name and in their structure
(metadata input_tree), outputs by name or in the structure the model returned.

Two AOTInductor compiles (~20-60 s each on a small machine): a tiny Hugging Face BERT exported
with keyword inputs (a ModelOutput result), and a model taking a list, a dict, a keyword-only
tensor and compiled-in constants. Every call is checked against eager PyTorch on fresh inputs.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
from structure_check import assert_same_structure

import kiln
from kiln.exporter import CpuBackend
from kiln.exporter import metadata as md

RTOL = 1e-5
ATOL = 1e-5
REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("KILN_CLI", str(REPO / "build" / "kiln"))


def _close(got, want, where):
    assert_same_structure(got, want, where, RTOL, ATOL)


def _module(path):
    from kiln.runtime import Module

    module = Module(str(path))
    module.load()
    return module


# ---- a tiny BERT exported with keyword inputs -------------------------------------------------


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("bert")
    config = transformers.BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=32,
    )
    model = transformers.BertModel(config).eval()
    reference = copy.deepcopy(model)
    ids = torch.randint(0, 64, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    ep = torch.export.export(model, (), {"input_ids": ids, "attention_mask": mask})
    result = kiln.export({"forward": ep}, backend=CpuBackend(temp_dir=tmp), verbose=False)
    path = tmp / "bert.kiln"
    result.save(path)
    return {"reference": reference, "path": path, "module": _module(path)}


def _bert_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 64, (2, 8), generator=g)
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 5:] = 0  # padding, so the mask changes the result
    return ids, mask


def test_bert_inputs_and_outputs_are_named_as_the_model_names_them(bert):
    meta = bert["module"].method_meta("forward")
    assert [i.name for i in meta.inputs] == ["input_ids", "attention_mask"]
    assert [o.name for o in meta.outputs] == ["last_hidden_state", "pooler_output"]
    tree = json.loads(meta.metadata["input_tree"])
    assert tree == {
        "version": 1,
        "inputs": ["input_ids", "attention_mask"],
        "args": [],
        "kwargs": [["input_ids", {"input": 0}], ["attention_mask", {"input": 1}]],
    }


def test_bert_keyword_and_positional_calls_match_eager(bert):
    module, reference = bert["module"], bert["reference"]
    for seed in (1, 2):  # fresh inputs, not the export's
        ids, mask = _bert_inputs(seed)
        with torch.no_grad():
            want = reference(input_ids=ids, attention_mask=mask)
        by_keyword = module.forward(input_ids=ids, attention_mask=mask, output="torch")
        reordered = module.forward(attention_mask=mask, input_ids=ids, output="torch")
        positional = module.forward(ids, mask, output="torch")  # the method's inputs in order
        numpy_in = module.execute("forward", kwargs={"input_ids": ids.numpy(), "attention_mask": mask.numpy()})
        for got in (by_keyword, reordered, positional):
            assert len(got) == 2
            _close(got[0], want.last_hidden_state, f"seed {seed}: last_hidden_state")
            _close(got[1], want.pooler_output, f"seed {seed}: pooler_output")
        _close(torch.from_numpy(numpy_in[0].copy()), want.last_hidden_state, "numpy last_hidden_state")


def test_bert_outputs_by_name_and_in_the_model_structure(bert):
    module, reference = bert["module"], bert["reference"]
    ids, mask = _bert_inputs(3)
    with torch.no_grad():
        want = reference(input_ids=ids, attention_mask=mask)
    named = module.forward(input_ids=ids, attention_mask=mask, output="torch", structure="names")
    assert list(named) == ["last_hidden_state", "pooler_output"]
    _close(named["last_hidden_state"], want.last_hidden_state, "names: last_hidden_state")
    _close(named["pooler_output"], want.pooler_output, "names: pooler_output")
    tree = module.forward(input_ids=ids, attention_mask=mask, output="torch", structure="tree")
    assert_same_structure(tree, want)  # a ModelOutput comes back as a dict of its fields


def test_bert_call_errors_name_the_argument(bert):
    module = bert["module"]
    ids, mask = _bert_inputs(4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'token_type_ids'"):
        module.forward(input_ids=ids, attention_mask=mask, token_type_ids=ids)
    with pytest.raises(TypeError, match="missing 1 required argument.*'attention_mask'"):
        module.forward(input_ids=ids)
    # Passed by keyword at export: a positional argument beside a keyword is refused, naming them.
    with pytest.raises(TypeError, match="takes 0 positional argument.*'input_ids', 'attention_mask'.*by name"):
        module.forward(ids, attention_mask=mask)
    with pytest.raises(ValueError, match="structure must be"):
        module.forward(input_ids=ids, attention_mask=mask, structure="nested")


def test_inspect_shows_the_names(bert):
    if not os.path.isfile(CLI):
        pytest.fail(f"kiln CLI not found at {CLI} (build it or set KILN_CLI)")
    text = subprocess.run([CLI, "inspect", str(bert["path"])], capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stderr
    for line in ("0 input_ids: int64[2, 8]", "1 attention_mask: int64[2, 8]",
                 "0 last_hidden_state: float32[2, 8, 32]", "1 pooler_output: float32[2, 32]"):
        assert line in text.stdout, text.stdout
    as_json = subprocess.run([CLI, "inspect", "--json", str(bert["path"])], capture_output=True, text=True,
                             timeout=60)
    assert as_json.returncode == 0, as_json.stderr
    (method,) = json.loads(as_json.stdout)["methods"]
    assert [i["name"] for i in method["inputs"]] == ["input_ids", "attention_mask"]
    assert [o["name"] for o in method["outputs"]] == ["last_hidden_state", "pooler_output"]
    assert json.loads(method["metadata"]["input_tree"])["inputs"] == ["input_ids", "attention_mask"]


# ---- nested inputs: a list, a dict, a keyword-only tensor, compiled-in constants --------------


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, pair, extras, mask=None, *, repeats=2, gate):
        h = self.lin(x)
        if mask is not None:
            h = h * mask
        for _ in range(repeats):
            h = torch.tanh(h * extras["scale"] + extras["bias"])
        a = h + pair[0]
        b = h * pair[1] * gate
        return a, {"sum": a + b, "parts": [a - b, None]}


def _nested_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
    return {"x": r(3, 4), "pair": [r(3, 4), r(3, 4)], "extras": {"scale": r(4), "bias": r(4)}, "gate": r(3, 4)}


@pytest.fixture(scope="module")
def nested(tmp_path_factory):
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("nested")
    model = Nested().eval()
    reference = copy.deepcopy(model)
    a = _nested_inputs(0)
    ep = torch.export.export(model, (a["x"], a["pair"], a["extras"]),
                             {"mask": None, "repeats": 3, "gate": a["gate"]})
    result = kiln.export({"forward": ep}, backend=CpuBackend(temp_dir=tmp), verbose=False)
    path = tmp / "nested.kiln"
    result.save(path)
    return {"reference": reference, "path": path, "module": _module(path), "tmp": tmp}


NESTED_INPUTS = ["x", "pair.0", "pair.1", "extras.scale", "extras.bias", "gate"]
NESTED_OUTPUTS = ["output.0", "output.1.sum", "output.1.parts.0"]


def _eager(reference, a):
    with torch.no_grad():
        return reference(a["x"], a["pair"], a["extras"], repeats=3, gate=a["gate"])


def test_nested_names_and_input_tree(nested):
    meta = nested["module"].method_meta("forward")
    assert [i.name for i in meta.inputs] == NESTED_INPUTS
    assert [o.name for o in meta.outputs] == NESTED_OUTPUTS
    tree = json.loads(meta.metadata["input_tree"])
    assert tree["inputs"] == NESTED_INPUTS
    assert [name for name, _ in tree["args"]] == ["x", "pair", "extras"]
    assert tree["args"][1][1] == {"list": [{"input": 1}, {"input": 2}]}
    assert tree["args"][2][1]["dict"] == [["scale", {"input": 3}], ["bias", {"input": 4}]]
    assert tree["kwargs"] == [["mask", {"constant": None}], ["repeats", {"constant": 3}],
                              ["gate", {"input": 5}]]


def test_nested_calls_in_every_form_match_eager(nested):
    module, reference = nested["module"], nested["reference"]
    for seed in (1, 2):
        a = _nested_inputs(seed)
        want = _eager(reference, a)
        flat = [a["x"], *a["pair"], a["extras"]["scale"], a["extras"]["bias"], a["gate"]]
        calls = {
            "structured": module.forward(a["x"], a["pair"], a["extras"], gate=a["gate"], output="torch"),
            "keywords": module.forward(gate=a["gate"], extras=a["extras"], pair=a["pair"], x=a["x"],
                                       output="torch"),
            "tuple for list, constants repeated": module.forward(
                a["x"], tuple(a["pair"]), a["extras"], mask=None, repeats=3, gate=a["gate"], output="torch"),
            "flat": module.forward(*flat, output="torch"),
            "execute": module.execute("forward", [a["x"], a["pair"]], "torch",
                                      kwargs={"extras": a["extras"], "gate": a["gate"]}),
        }
        expected = [want[0], want[1]["sum"], want[1]["parts"][0]]
        for how, got in calls.items():
            assert len(got) == len(expected), how
            for name, g, w in zip(NESTED_OUTPUTS, got, expected):
                _close(g, w, f"seed {seed}, {how}: {name}")


def test_nested_outputs_by_name_and_structure(nested):
    module, reference = nested["module"], nested["reference"]
    a = _nested_inputs(3)
    want = _eager(reference, a)
    named = module.forward(a["x"], a["pair"], a["extras"], gate=a["gate"], output="torch", structure="names")
    assert list(named) == NESTED_OUTPUTS
    _close(named["output.1.sum"], want[1]["sum"], "names: output.1.sum")
    tree = module.forward(a["x"], a["pair"], a["extras"], gate=a["gate"], output="torch", structure="tree")
    assert_same_structure(tree, want)  # (tensor, {"sum": tensor, "parts": [tensor, None]})


@pytest.mark.parametrize("call, match", [
    (lambda m, a: m.forward(a["x"], a["pair"], a["extras"], x=a["x"], gate=a["gate"]),
     "multiple values for argument 'x'"),
    (lambda m, a: m.forward(a["x"], a["pair"], a["extras"]),
     "missing 1 required argument.*'gate'"),
    (lambda m, a: m.forward(a["x"], a["pair"], a["extras"], gate=a["gate"], scale=a["gate"]),
     "unexpected keyword argument 'scale'"),
    (lambda m, a: m.forward(a["x"], a["pair"] + [a["x"]], a["extras"], gate=a["gate"]),
     "argument 'pair' must be a list or tuple of 2 item.*list of 3"),
    (lambda m, a: m.forward(a["x"], a["pair"][0], a["extras"], gate=a["gate"]),
     "argument 'pair' must be a list or tuple"),
    (lambda m, a: m.forward(a["x"], a["pair"], {"scale": a["x"]}, gate=a["gate"]),
     r"argument 'extras' must be a dict with keys \['scale', 'bias'\].*missing \['bias'\]"),
    (lambda m, a: m.forward(a["pair"], a["pair"], a["extras"], gate=a["gate"]),
     "argument 'x' is one tensor, but a list of 2"),
    (lambda m, a: m.forward(a["x"], [a["x"], [a["x"]]], a["extras"], gate=a["gate"]),
     "argument 'pair.1' is one tensor"),
    (lambda m, a: m.forward(a["x"], a["pair"], a["extras"], repeats=4, gate=a["gate"]),
     "argument 'repeats' was 3 at export and is compiled into the method"),
    (lambda m, a: m.forward(a["x"], a["pair"], a["extras"], mask=a["x"], gate=a["gate"]),
     "argument 'mask' was None at export"),
    (lambda m, a: m.forward(a["x"], a["pair"], a["extras"], None, 3, a["gate"]),
     "takes 3 positional argument.*'mask', 'repeats', 'gate' were passed by keyword"),
])
def test_nested_call_errors_name_the_argument(nested, call, match):
    with pytest.raises(TypeError, match=match) as err:
        call(nested["module"], _nested_inputs(4))
    assert str(err.value).startswith("forward()")


def test_program_without_input_tree_is_called_by_input_names(nested):
    """A program written before input trees were recorded: its inputs are positional arguments
    named as the inputs are, and its output tree still gives the structure."""
    from kiln.runtime import Module

    loaded = kiln.program.load(str(nested["path"]))
    method = next(m for m in loaded.methods if m.name == "forward")
    del method.metadata["input_tree"]
    old = nested["tmp"] / "old.kiln"
    loaded.save(str(old))
    module = Module(str(old))
    a = _nested_inputs(5)
    want = _eager(nested["reference"], a)
    flat = [a["x"], *a["pair"], a["extras"]["scale"], a["extras"]["bias"], a["gate"]]
    positional = module.forward(*flat, output="torch")
    by_name = module.execute("forward", flat[:2], "torch", kwargs=dict(zip(NESTED_INPUTS[2:], flat[2:])))
    for got in (positional, by_name):
        _close(got[0], want[0], "output.0")
        _close(got[1], want[1]["sum"], "output.1.sum")
    assert_same_structure(module.forward(*flat, output="torch", structure="tree"), want)
    with pytest.raises(TypeError, match="argument 'x' is one tensor"):
        module.forward(a["pair"], a["pair"][0], *flat[2:])

    # A record that does not fit the method (not what an exporter writes) leaves flat calls
    # working and refuses calls that need it, saying why.
    for bad_tree in ("{", json.dumps({"version": 1, "inputs": ["x"], "args": [["x", {"input": 7}]], "kwargs": []})):
        method.metadata["input_tree"] = bad_tree
        bad = nested["tmp"] / "bad_tree.kiln"
        loaded.save(str(bad))
        module = Module(str(bad))
        _close(module.forward(*flat, output="torch")[0], want[0], "flat call, unusable input_tree")
        with pytest.raises(ValueError, match="metadata input_tree is unusable"):
            module.forward(x=a["x"])


# ---- the record, without compiling ------------------------------------------------------------


def test_input_plan_of_varargs_and_unrecorded_names():
    class Varargs(torch.nn.Module):
        def forward(self, *xs, **kw):
            return xs[0] + xs[1] * kw["z"]

    t = torch.randn(2)
    ep = torch.export.export(Varargs(), (t, t), {"z": t})
    plan = md.plan_inputs(ep)
    assert plan.names == ["xs_0", "xs_1", "z"]  # torch.export's names for *args items
    assert [s.name for s in md.input_specs(ep, plan)] == plan.names

    a = _nested_inputs(0)
    ep = torch.export.export(Nested(), (a["x"], a["pair"], a["extras"]), {"gate": a["gate"]})
    ep.module_call_graph[0].signature.forward_arg_names = None  # as a program that never recorded them
    plan = md.plan_inputs(ep)
    # A positional tensor keeps its placeholder's name; a container is named by its position.
    assert plan.names == ["x", "arg1.0", "arg1.1", "arg2.scale", "arg2.bias", "gate"]
