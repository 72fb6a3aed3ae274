"""What a compiled method returns: the output contract, and the graph that makes the library
return exactly that.

A method's outputs are the tensor leaves of the model's output, flattened in pytree order and
named by their path in it ("logits", "state.0", "output.1.d"). AOTInductor does not compile the
ExportedProgram as it is: it re-traces and functionalizes it, and what its library then returns
differs from the program's user outputs in ways that would make a program fail at load or at
run time:

* a parameter the model writes in place (Hugging Face RWKV rescales weights on its first
  inference call) becomes an extra leading output, which nothing writes back;
* a None leaf leaves its output slot null;
* a Python constant (int, float, bool, str) in the output fails the compile;
* a tensor returned twice (or two leaves that are the same view of one storage) comes back as
  one handle in two slots, which the caller would release twice.

So the exporter decides what the library returns (:func:`plan_outputs`), removes parameter
writes from the program (:func:`strip_parameter_writes`), compiles a graph whose outputs are
exactly the planned ones (:func:`module_to_compile`), and checks the generated wrapper source
against the contract before anything is packed (:func:`read_library_interface`,
:func:`check_library_interface`). None and constants are kept in the method's output tree
(metadata ``output_tree``, rebuilt by :mod:`kiln.output_tree`); outputs that cannot be served
are refused with :class:`UnsupportedOutputError`.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from kiln.exporter.tree_record import fill_leaves

__all__ = [
    "ContractMismatchError",
    "LibraryInterface",
    "OUTPUT_TREE_KEY",
    "OutputLeaf",
    "OutputPlan",
    "ParameterWriteWarning",
    "UnsupportedOutputError",
    "WRITTEN_PARAMETERS_KEY",
    "check_library_interface",
    "module_to_compile",
    "plan_outputs",
    "read_library_interface",
    "strip_parameter_writes",
]

#: Method metadata key: the model's output structure as JSON (see kiln.output_tree).
OUTPUT_TREE_KEY = "output_tree"
#: Method metadata key: parameters the model writes in place, recomputed in every call.
WRITTEN_PARAMETERS_KEY = "written_parameters"

#: Constants an output tree can hold (JSON values).
_CONSTANT_TYPES = (type(None), bool, int, float, str)


class UnsupportedOutputError(NotImplementedError):
    """An output of the model that a Kiln method cannot return; ``output`` is its path."""

    def __init__(self, method: str, output: str, message: str):
        super().__init__(message)
        self.method = method
        self.output = output


class ContractMismatchError(RuntimeError):
    """The compiled library's inputs/outputs disagree with the contract the program would record."""

    def __init__(self, method: str, message: str):
        super().__init__(message)
        self.method = method


class ParameterWriteWarning(UserWarning):
    """The model writes parameters in place; the compiled method recomputes them in every call."""


@dataclass
class OutputLeaf:
    """One leaf of the model's output: a tensor the library returns, or a constant (None, a
    number, a string) kept in the output tree only."""

    path: str
    kind: str  # "tensor" or "constant"
    value: Any = None  # the constant
    returned: int = -1  # index among the library's outputs (tensors)
    copy: bool = False  # returned as a copy: it is the same tensor as an earlier output


@dataclass
class OutputPlan:
    """The library's outputs (``specs``, in order) and how they map back to the model's output."""

    leaves: list[OutputLeaf] = field(default_factory=list)
    specs: list = field(default_factory=list)  # list[kiln.spec.TensorSpec], one per returned tensor
    tree: dict = field(default_factory=dict)

    @property
    def needs_rewrite(self) -> bool:
        """Whether the compiled graph's outputs must differ from the program's user outputs."""
        return any(leaf.kind != "tensor" or leaf.copy for leaf in self.leaves)

    def tree_json(self) -> str:
        return json.dumps(self.tree, separators=(",", ":"), allow_nan=False)


# ---- output structure ---------------------------------------------------------------------


def _child_keys(spec) -> list:
    """The keys of a pytree node's children: dict keys, namedtuple/dataclass field names, or
    positions. Types registered by other libraries (Hugging Face ModelOutput) flatten with
    their keys as the context."""
    import collections

    n = spec.num_children
    ctx = spec.context
    if isinstance(ctx, type) and hasattr(ctx, "_fields"):  # namedtuple: the context is the class
        return list(ctx._fields)
    if spec.type is collections.defaultdict and isinstance(ctx, (list, tuple)) and len(ctx) == 2:
        ctx = ctx[1]  # (default factory, keys)
    if isinstance(ctx, (list, tuple)) and len(ctx) == n and all(isinstance(k, (str, int)) for k in ctx):
        return list(ctx)
    if isinstance(ctx, (list, tuple)) and ctx and isinstance(ctx[0], (list, tuple)) and len(ctx[0]) == n:
        return list(ctx[0])  # (field names, ...) contexts, e.g. registered dataclasses
    return list(range(n))


def _type_name(t: Any) -> str:
    return f"{getattr(t, '__module__', '')}.{getattr(t, '__qualname__', getattr(t, '__name__', str(t)))}"


def _keyed(spec) -> bool:
    """Whether a node's children are named (rebuilt as a dict) rather than positional."""
    import collections

    if spec.type in (list, tuple):
        return False
    if spec.type in (dict, collections.OrderedDict, collections.defaultdict):
        return True
    return any(isinstance(k, str) for k in _child_keys(spec))


def _walk(spec, prefix: tuple, paths: list[tuple]) -> dict:
    """Collects the leaves' key paths in order and returns the JSON tree with placeholders
    {"leaf": i} that plan_outputs fills in."""
    if spec.is_leaf():
        paths.append(prefix)
        return {"leaf": len(paths) - 1}
    keys = _child_keys(spec)
    # children() is torch >= 2.10's accessor; children_specs the older (now deprecated) one.
    specs = spec.children() if callable(getattr(spec, "children", None)) else spec.children_specs
    children = [_walk(c, prefix + (k,), paths) for k, c in zip(keys, specs)]
    if spec.type is list:
        return {"list": children}
    if spec.type is tuple:
        return {"tuple": children}
    node: dict[str, Any] = {"type": _type_name(spec.context if isinstance(spec.context, type) else spec.type)}
    if _keyed(spec):
        node["dict"] = [[k, c] for k, c in zip(keys, children)]
    else:
        node["tuple"] = children
    return node


def _path_name(path: tuple, keyed_root: bool) -> str:
    """("state", 0) -> "state.0"; a bare tensor is "output", a top-level tuple's items "output.<i>"."""
    if not path:
        return "output"
    text = ".".join(str(k) for k in path)
    return text if keyed_root else f"output.{text}"


def _user_outputs(ep) -> list[tuple[Any, Any]]:
    """(output spec argument, graph value) of each user output, in order."""
    from torch.export.graph_signature import OutputKind

    out_node = ep.graph.output_node()
    values = list(out_node.args[0])
    specs = ep.graph_signature.output_specs
    if len(values) != len(specs):
        raise RuntimeError(
            f"the exported graph returns {len(values)} values but its signature lists {len(specs)} outputs"
        )
    return [(s.arg, v) for s, v in zip(specs, values) if s.kind == OutputKind.USER_OUTPUT]


def _alias_key(val: Any, node: Any) -> Any:
    """Equal for two outputs the compiled library would return as one handle: the same tensor,
    or views of one storage with the same layout (alias, detach, a same-shape view)."""
    try:
        storage = val.untyped_storage()._cdata
        return (
            storage,
            str(val.dtype),
            tuple(str(s) for s in val.shape),
            tuple(str(s) for s in val.stride()),
            str(val.storage_offset()),
        )
    except Exception:  # no storage on this fake tensor: the node's identity is what is known
        return ("node", id(node))


def plan_outputs(ep, method: str = "forward") -> OutputPlan:
    """The outputs the compiled library returns for ``ep`` (one TensorSpec per tensor leaf, in
    pytree order, named by path), the constants kept in the output tree, and which outputs are
    returned as copies. Raises UnsupportedOutputError for an output no method can return."""
    import torch
    from torch.export.graph_signature import ConstantArgument, TensorArgument

    from kiln.exporter.metadata import _tensor_spec

    user = _user_outputs(ep)
    paths: list[tuple] = []
    root = ep.call_spec.out_spec
    if root is None:  # no structure recorded: the user outputs as a flat tuple
        from torch.utils import _pytree as pytree

        root = pytree.tree_structure(tuple(range(len(user))))
    tree = _walk(root, (), paths)
    if len(paths) != len(user):
        raise RuntimeError(
            f"method {method!r}: the program's output structure has {len(paths)} leaves but its graph "
            f"returns {len(user)} user outputs"
        )
    keyed_root = not root.is_leaf() and _keyed(root)
    names = [_path_name(p, keyed_root) for p in paths]
    seen_names: dict[str, int] = {}
    for i, n in enumerate(names):  # keys holding "." could make two paths read alike
        if n in seen_names:
            names[i] = f"{n}#{i}"
        seen_names[names[i]] = i

    ranges = dict(ep.range_constraints)
    plan = OutputPlan()
    seen_tensors: set = set()
    for name, (arg, value) in zip(names, user):
        if isinstance(arg, TensorArgument) and isinstance(value, torch.fx.Node):
            val = value.meta.get("val")
            leaf = OutputLeaf(path=name, kind="tensor", returned=len(plan.specs))
            key = _alias_key(val, value)
            leaf.copy = key in seen_tensors
            seen_tensors.add(key)
            plan.specs.append(_tensor_spec(name, val, ranges, "output"))
        elif isinstance(arg, ConstantArgument) or not isinstance(value, torch.fx.Node):
            constant = arg.value if isinstance(arg, ConstantArgument) else value
            if not isinstance(constant, _CONSTANT_TYPES):
                raise UnsupportedOutputError(
                    method, name,
                    f"method {method!r}: output {name!r} is a constant {type(constant).__name__} "
                    f"({constant!r}); a Kiln method returns tensors, and keeps only None, bool, int, "
                    "float and str constants in its output tree. Return a tensor instead, or leave it "
                    "out of the model's output",
                )
            leaf = OutputLeaf(path=name, kind="constant", value=constant)
        else:
            what = type(arg).__name__.removesuffix("Argument")
            hint = (
                "it is computed from dynamic input sizes at run time. Return it as a tensor "
                "(torch.tensor(n)), or read it from an output's shape"
                if what.startswith("Sym")
                else "only tensors and constants can be returned"
            )
            raise UnsupportedOutputError(
                method, name,
                f"method {method!r}: output {name!r} is a {what}, which a Kiln method cannot return: {hint}",
            )
        plan.leaves.append(leaf)

    def leaf_node(index: int) -> dict:
        leaf = plan.leaves[index]
        if leaf.kind == "tensor":
            return {"output": leaf.returned}
        v = leaf.value
        if isinstance(v, float) and not math.isfinite(v):
            return {"constant": repr(v), "float": True}  # JSON has no inf/nan
        return {"constant": v}

    plan.tree = {"version": 1, "tree": fill_leaves(tree, leaf_node), "outputs": [s.name for s in plan.specs]}
    return plan


# ---- parameter writes ---------------------------------------------------------------------


def _written_values(node) -> list:
    """The arguments an in-place or out= op writes."""
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    if schema is None:
        return []
    written = []
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            written.append(node.args[i] if i < len(node.args) else node.kwargs.get(arg.name))
    return written


def may_write_parameters(ep) -> bool:
    """Cheap structural test: whether any op might write a parameter. True for a write whose
    target is a parameter placeholder, or a placeholder of a nested graph (the body of
    torch.no_grad() and similar blocks, whose arguments may be parameters). Only then is the
    program functionalized to find out (which re-traces it)."""
    import torch
    from torch.export.graph_signature import InputKind

    from kiln.exporter.metadata import _view_root

    params = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.PARAMETER}
    top = ep.graph_module
    for gm in top.modules():
        if not isinstance(gm, torch.fx.GraphModule):
            continue
        for node in gm.graph.nodes:
            for value in _written_values(node):
                root = _view_root(value)
                if root is None or root.op != "placeholder":
                    continue
                if gm is not top or root.name in params:
                    return True
    return False


def strip_parameter_writes(ep, method: str = "forward", progress=None) -> tuple[Any, list[str]]:
    """``ep`` without its in-place writes to parameters, and the parameters' names.

    AOTInductor never stores a written parameter back: it returns the new value as an extra
    output before the user outputs (and so disagrees with the program's contract). Here the
    program is functionalized and those outputs are dropped, so the written value is still
    computed from the stored weights and used in every call, and the library returns the user
    outputs only. That matches eager PyTorch for a write done once (Hugging Face RWKV's
    inference-time rescale, guarded by a flag the traced graph no longer sees), not a model
    that accumulates writes call after call: hence the ParameterWriteWarning. ``progress``
    (a kiln.exporter.progress.Progress) reports the re-trace and the warning."""
    import contextlib

    from torch.export.graph_signature import ExportGraphSignature, OutputKind

    if not may_write_parameters(ep):
        return ep, []
    stage = progress.stage(f"{method}: functionalize (in-place writes)") if progress else contextlib.nullcontext()
    with stage:
        functional = ep.run_decompositions({})
    sig = functional.graph_signature
    written = [s.target for s in sig.output_specs if s.kind == OutputKind.PARAMETER_MUTATION]
    if not written:
        return ep, []
    gm = functional.graph_module
    out_node = gm.graph.output_node()
    kept_specs, kept_values = [], []
    for spec, value in zip(sig.output_specs, out_node.args[0]):
        if spec.kind != OutputKind.PARAMETER_MUTATION:
            kept_specs.append(spec)
            kept_values.append(value)
    out_node.args = (tuple(kept_values),)
    gm.recompile()
    stripped = functional._update(gm, ExportGraphSignature(input_specs=list(sig.input_specs), output_specs=kept_specs))
    shown = ", ".join(written[:6]) + (f" and {len(written) - 6} more" if len(written) > 6 else "")
    message = (
        f"method {method!r} writes {len(written)} parameter(s) in place ({shown}). The compiled method "
        "computes the written values from the stored weights in every call and does not keep them "
        "between calls: the same as eager PyTorch for a write made once (such as an inference-time "
        "rescale), not for a model that changes its parameters call after call"
    )
    warnings.warn(message, ParameterWriteWarning, stacklevel=3)
    if progress is not None:
        progress.note(message)
    return stripped, written


# ---- the graph AOTInductor compiles -------------------------------------------------------


def module_to_compile(ep, plan: OutputPlan):
    """``ep.module()`` returning exactly the planned outputs, as a flat tuple: constants and
    None left out, and a copy for each output that is the same tensor as an earlier one."""
    import torch
    from torch.utils import _pytree as pytree

    gm = ep.module()
    if not plan.needs_rewrite:
        return gm
    out_node = gm.graph.output_node()
    values = list(out_node.args[0])
    if len(values) != len(plan.leaves):
        raise RuntimeError(
            f"the unlifted module returns {len(values)} values but the program has {len(plan.leaves)} outputs"
        )
    returned = []
    for leaf, value in zip(plan.leaves, values):
        if leaf.kind != "tensor":
            continue
        if leaf.copy:
            with gm.graph.inserting_before(out_node):
                value = gm.graph.call_function(torch.ops.aten.clone.default, (value,))
        returned.append(value)
    out_node.args = (tuple(returned),)
    codegen = gm.graph._codegen
    info = getattr(codegen, "pytree_info", None)
    if info is not None:
        codegen.pytree_info = info._replace(out_spec=pytree.tree_structure(tuple(range(len(returned)))))
    gm.recompile()
    return gm


# ---- what the compiled library returns ----------------------------------------------------

_MODEL_BASE = re.compile(r"AOTInductorModelBase\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")
_INFO_NAME = r"{}\[(\d+)\]\.name\s*="
_SLOT_ALIAS = re.compile(r"output_handles\[(\d+)\]\s*=\s*output_handles\[(\d+)\]\s*;")
_SLOT_SET = re.compile(r"output_handles\[(\d+)\]\s*=(?!=)")
_SLOT_OUT_PARAM = re.compile(r"&output_handles\[(\d+)\]")
_RUN_IMPL_START = re.compile(r"AOTInductorModel::run_impl\s*\(")
_RUN_IMPL_END = "// AOTInductorModel::run_impl"


@dataclass
class LibraryInterface:
    """The inputs and outputs of a compiled library, as its generated wrapper source states them.

    ``unset`` are output slots the model's run never fills (a None output); ``aliased`` pairs
    (slot, earlier slot) that receive the same handle. Both are empty when the run's body
    could not be located (``slots_known`` False)."""

    num_inputs: int
    num_outputs: int
    slots_known: bool = False
    unset: list[int] = field(default_factory=list)
    aliased: list[tuple[int, int]] = field(default_factory=list)


def _info_count(source: str, array: str) -> int | None:
    indices = {int(m) for m in re.findall(_INFO_NAME.format(re.escape(array)), source)}
    return max(indices) + 1 if indices else None


def read_library_interface(source: str) -> LibraryInterface | None:
    """Reads the input/output counts AOTInductor compiled into the model (the arguments of the
    AOTInductorModelBase constructor, cross-checked with the inputs_info_/outputs_info_ names)
    and how the run fills its output slots. None if the source states no counts."""
    m = _MODEL_BASE.search(source)
    in_names = _info_count(source, "inputs_info_")
    out_names = _info_count(source, "outputs_info_")
    if m:
        num_inputs, num_outputs = int(m.group(1)), int(m.group(2))
        # The names list may be shorter (no inputs), never longer than the constructor's count.
        if (in_names or 0) > num_inputs or (out_names or 0) > num_outputs:
            return None
    elif in_names is not None or out_names is not None:
        num_inputs, num_outputs = in_names or 0, out_names or 0
    else:
        return None
    iface = LibraryInterface(num_inputs=num_inputs, num_outputs=num_outputs)
    start = _RUN_IMPL_START.search(source)
    end = source.find(_RUN_IMPL_END, start.end()) if start else -1
    if start and end > 0:
        body = source[start.end():end]
        iface.slots_known = True
        iface.aliased = [(int(a), int(b)) for a, b in _SLOT_ALIAS.findall(body)]
        filled = {int(i) for i in _SLOT_SET.findall(body)} | {int(i) for i in _SLOT_OUT_PARAM.findall(body)}
        iface.unset = [i for i in range(num_outputs) if i not in filled]
    return iface


def check_library_interface(method: str, inputs: list, outputs: list, iface: LibraryInterface | None) -> None:
    """Raises ContractMismatchError unless the library takes len(inputs) inputs and returns
    len(outputs) distinct, non-null outputs."""
    if iface is None:
        raise ContractMismatchError(
            method,
            f"method {method!r}: the generated wrapper source states no input/output counts this "
            "exporter can read consistently (AOTInductorModelBase(...), inputs_info_/outputs_info_), so the "
            "contract cannot be checked against the compiled library; refusing to write a program "
            "that might not load (a torch version whose AOTInductor output this exporter does not know?)",
        )
    names = [getattr(o, "name", str(i)) for i, o in enumerate(outputs)]

    def label(i: int) -> str:
        return f"{i} ({names[i]!r})" if 0 <= i < len(names) else str(i)

    if iface.num_inputs != len(inputs) or iface.num_outputs != len(outputs):
        raise ContractMismatchError(
            method,
            f"method {method!r}: the compiled library takes {iface.num_inputs} input(s) and returns "
            f"{iface.num_outputs} output(s), but the contract lists {len(inputs)} input(s) "
            f"({', '.join(getattr(i, 'name', '?') for i in inputs) or 'none'}) and {len(outputs)} "
            f"output(s) ({', '.join(names) or 'none'}); the program would fail at load",
        )
    if iface.aliased:
        pairs = ", ".join(f"output {label(a)} is output {label(b)}" for a, b in iface.aliased)
        raise ContractMismatchError(
            method,
            f"method {method!r}: the compiled library returns one tensor handle in two output slots "
            f"({pairs}), which the runtime would release twice; return a .clone() of one of them",
        )
    if iface.unset:
        slots = ", ".join(label(i) for i in iface.unset)
        raise ContractMismatchError(
            method,
            f"method {method!r}: the compiled library never fills output(s) {slots}; the method "
            "would fail at run time",
        )
