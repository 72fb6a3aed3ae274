"""A method's input/output contract, read from an ExportedProgram, and program metadata.

The runtime checks callers' tensors against this contract (dtype, rank, static sizes and
the bounds of dynamic sizes) before handing them to the compiled library, which itself
performs no such checks.  Everything here is read from the ExportedProgram as it will
be compiled; what the library returns is planned in kiln.exporter.passes.outputs, and the
library is checked against the contract before anything is packed.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import (
    ConstantArgument,
    InputKind,
    OutputKind,
    SymIntArgument,
    TensorArgument,
)

from kiln.exporter.tree_record import fill_leaves
from kiln.spec import DimSpec, TensorSpec

__all__ = [
    "INPUT_TREE_KEY",
    "InputPlan",
    "dtype_name",
    "input_specs",
    "plan_inputs",
    "output_specs",
    "user_input_values",
    "program_metadata",
    "EXPORTER_VERSION",
]

from kiln import __version__ as EXPORTER_VERSION  # noqa: E402  (one version for the package)


def dtype_name(dtype: torch.dtype) -> str:
    """torch.float32 -> "float32" (the names kiln.program uses)."""
    return str(dtype).removeprefix("torch.")


def _finite_int(value: Any) -> int | None:
    """An int for a finite bound, None for an infinite one.

    torch's int_oo claims ``is_finite`` (it models "unbounded integer"), so it is
    recognised by type; sympy's oo/-oo/zoo by ``is_infinite``.
    """
    from torch.utils._sympy.numbers import IntInfinity, NegativeIntInfinity

    if isinstance(value, (IntInfinity, NegativeIntInfinity)):
        return None
    if getattr(value, "is_infinite", False) or getattr(value, "is_number", True) is False:
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def _dim_spec(size: Any, ranges: dict) -> DimSpec:
    if isinstance(size, int):
        return DimSpec(size=size)
    if not isinstance(size, torch.SymInt):
        raise TypeError(f"unexpected tensor size entry {size!r} ({type(size).__name__})")
    expr = size.node.expr
    if expr.is_number:
        return DimSpec(size=int(expr))
    from torch.utils._sympy.value_ranges import bound_sympy

    # Bounds of the whole expression (e.g. 2*s0 for an output), from the symbols' ranges.
    vr = bound_sympy(expr, {s: r for s, r in ranges.items() if s in expr.free_symbols})
    lower = _finite_int(vr.lower)
    upper = _finite_int(vr.upper)
    hint = size.node.hint
    example = int(hint) if hint is not None else -1
    return DimSpec(
        size=example,
        dynamic=True,
        min=max(lower, 0) if lower is not None else 0,
        max=upper if upper is not None else -1,
        name=str(expr),
    )


def _tensor_spec(name: str, val: Any, ranges: dict, what: str) -> TensorSpec:
    if not isinstance(val, torch.Tensor):
        raise NotImplementedError(
            f"{what} {name!r} is a {type(val).__name__}, not a tensor; Kiln methods take and "
            "return tensors only"
        )
    return TensorSpec(name=name, dtype=dtype_name(val.dtype), dims=[_dim_spec(s, ranges) for s in val.shape])


def _placeholders(ep: ExportedProgram) -> dict[str, torch.fx.Node]:
    return {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}


def user_input_values(ep: ExportedProgram) -> list[Any]:
    """The flattened user inputs as compile-time example values: fake tensors from the
    placeholders' meta["val"] (dynamic dims stay symbolic) and constants as recorded."""
    nodes = _placeholders(ep)
    values: list[Any] = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind != InputKind.USER_INPUT:
            continue
        arg = spec.arg
        if isinstance(arg, TensorArgument):
            values.append(nodes[arg.name].meta["val"])
        elif isinstance(arg, ConstantArgument):
            values.append(arg.value)
        elif isinstance(arg, SymIntArgument):
            raise NotImplementedError(
                f"user input {arg.name!r} is a SymInt; Kiln methods take tensor inputs only "
                "(pass the size as part of a tensor's shape instead)"
            )
        else:
            raise NotImplementedError(f"unsupported user input kind {type(arg).__name__}")
    return values


#: Method metadata key: the model's input structure as JSON (see kiln.input_tree).
INPUT_TREE_KEY = "input_tree"

#: Constants an input tree holds as JSON values; any other constant is kept as its repr.
_JSON_CONSTANTS = (type(None), bool, int, float, str)


@dataclasses.dataclass
class InputPlan:
    """How the caller's arguments map to the method's inputs: ``names`` (one per tensor input,
    in order: the input's path in the arguments, "input_ids", "past_key_values.0.1"),
    ``placeholders`` (the graph's name for each of them, "past_key_values_0_1") and ``tree``
    (the JSON record of kiln.input_tree)."""

    names: list[str]
    placeholders: list[str]
    tree: dict

    def tree_json(self) -> str:
        return json.dumps(self.tree, separators=(",", ":"), allow_nan=False)


def _argument_names(ep: ExportedProgram, arg_specs: list, kwarg_names: list, user: list) -> list[str]:
    """Names of the positional arguments. torch.export records the forward's parameter names
    (positional ones, then the keyword ones as passed); where that record is missing or does
    not fit the call (a program serialized by an older torch), a positional argument that is
    one tensor takes its placeholder's name and any other "arg<i>"."""
    n_args = len(arg_specs)
    try:
        recorded = [str(n) for n in ep.module_call_graph[0].signature.forward_arg_names or []]
    except (AttributeError, IndexError):
        recorded = []
    if (len(recorded) == n_args + len(kwarg_names) and recorded[n_args:] == [str(k) for k in kwarg_names]
            and len(set(recorded)) == len(recorded)):
        return recorded[:n_args]
    names, offset = [], 0
    for i, spec in enumerate(arg_specs):
        arg = user[offset] if offset < len(user) else None
        names.append(arg.name if spec.is_leaf() and isinstance(arg, TensorArgument) else f"arg{i}")
        offset += spec.num_leaves
    return names


def _children(spec) -> list:
    # children() is torch >= 2.10's accessor; children_specs the older (now deprecated) one.
    return list(spec.children() if callable(getattr(spec, "children", None)) else spec.children_specs)


def plan_inputs(ep: ExportedProgram, method: str = "forward") -> InputPlan:
    """The method's input structure, read from the program's ``call_spec.in_spec``: the
    positional and keyword arguments, each a tree whose leaves are the method's tensor inputs
    (``{"input": i}``) or the constants export compiled in (``{"constant": value}``: None, an
    int, a flag), in the containers they were passed in (list, tuple, dict)."""
    import math

    from kiln.exporter.passes.outputs import _walk

    user = [s.arg for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    root = ep.call_spec.in_spec
    if root is None or root.num_children != 2:  # no structure recorded: the inputs as positional arguments
        from torch.utils import _pytree as pytree

        root = pytree.tree_structure(((0,) * len(user), {}))
    args_spec, kwargs_spec = _children(root)
    kwarg_names = list(kwargs_spec.context) if kwargs_spec.num_children else []
    arg_specs, kw_specs = _children(args_spec), _children(kwargs_spec)
    arg_names = _argument_names(ep, arg_specs, kwarg_names, user)

    paths: list[tuple] = []
    arg_nodes = [[str(n), _walk(s, (str(n),), paths)] for n, s in zip(arg_names, arg_specs)]
    kw_nodes = [[str(k), _walk(s, (str(k),), paths)] for k, s in zip(kwarg_names, kw_specs)]
    if len(paths) != len(user):
        raise RuntimeError(
            f"method {method!r}: the program's input structure has {len(paths)} leaves but its graph "
            f"takes {len(user)} user inputs"
        )
    leaf_nodes: list[dict] = []
    names: list[str] = []
    placeholders: list[str] = []
    seen: set[str] = set()
    for path, arg in zip(paths, user):
        if isinstance(arg, TensorArgument):
            # Metadata mutated_inputs lists input names separated by commas, so a key holding
            # one is spelt with "_" in the name (the tree still matches the caller's key).
            name = ".".join(str(k) for k in path).replace(",", "_")
            if name in seen:  # keys holding "." could make two paths read alike
                name = f"{name}#{len(names)}"
            seen.add(name)
            leaf_nodes.append({"input": len(names)})
            names.append(name)
            placeholders.append(arg.name)
        elif isinstance(arg, ConstantArgument):
            v = arg.value
            if isinstance(v, float) and not math.isfinite(v):
                leaf_nodes.append({"constant": repr(v), "float": True})  # JSON has no inf/nan
            elif isinstance(v, _JSON_CONSTANTS):
                leaf_nodes.append({"constant": v})
            else:
                leaf_nodes.append({"constant": repr(v), "repr": True})
        else:
            leaf_nodes.append({"unsupported": type(arg).__name__})  # refused by user_input_values

    def fill(node: dict) -> dict:
        return fill_leaves(node, leaf_nodes.__getitem__)

    tree = {
        "version": 1,
        "inputs": names,
        "args": [[n, fill(c)] for n, c in arg_nodes],
        "kwargs": [[n, fill(c)] for n, c in kw_nodes],
    }
    return InputPlan(names=names, placeholders=placeholders, tree=tree)


def input_specs(ep: ExportedProgram, plan: InputPlan | None = None) -> list[TensorSpec]:
    """Contract of the user inputs, in call order (constants are baked in and omitted), each
    named by its path in the arguments (see plan_inputs) and with the layout the library is
    compiled for (``dim_order``, see input_dim_order)."""
    nodes = _placeholders(ep)
    ranges = dict(ep.range_constraints)
    plan = plan if plan is not None else plan_inputs(ep)
    names = dict(zip(plan.placeholders, plan.names))
    specs = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind != InputKind.USER_INPUT or isinstance(spec.arg, ConstantArgument):
            continue
        if not isinstance(spec.arg, TensorArgument):
            raise NotImplementedError(f"user input {spec.arg!r} is not a tensor")
        val = nodes[spec.arg.name].meta.get("val")
        name = names.get(spec.arg.name, spec.arg.name)
        tensor_spec = _tensor_spec(name, val, ranges, "input")
        specs.append(dataclasses.replace(tensor_spec, dim_order=input_dim_order(name, val)))
    return specs


def _sym(value: Any):
    """A size or stride as a sympy expression (ints become sympy Integers)."""
    import sympy

    if isinstance(value, torch.SymInt):
        return value.node.expr
    return sympy.Integer(int(value))


def input_dim_order(name: str, val: Any) -> list[int]:
    """The layout AOTInductor compiles an input for, as a dim order (outermost dimension
    first; [] for row-major): the strides of the example input (the placeholder's
    meta["val"]), symbolic where a dimension is dynamic, e.g. (60, 1, 15, 3) for a
    channels_last [s0, 3, 4, 5] or (1, s0) for a transposed [s0, 4].

    The compiled kernels index the input with exactly these strides and never look at a
    caller's, so the runtime copies every input into this layout unless it already has it.
    That needs the layout to be dense: an example that is a slice or an expanded view
    (strides that fit no dense order) is refused here. Static size-1 dimensions are ignored
    (nothing ever multiplies their stride by anything but 0)."""
    import sympy

    if not isinstance(val, torch.Tensor) or val.dim() == 0:
        return []
    sizes = [_sym(s) for s in val.shape]
    strides = [_sym(s) for s in val.stride()]
    if any(s == 0 for s in sizes):
        return []  # always empty: the kernels read nothing
    trivial = {d for d, s in enumerate(sizes) if s == 1}
    left = [d for d in range(len(sizes)) if d not in trivial]
    inner_to_outer: list[int] = []
    expected = sympy.Integer(1)
    while left:
        # The dimension whose stride is the product of the sizes inside it (the highest
        # index on a tie, as row-major orders them).
        fits = [d for d in left if sympy.expand(strides[d] - expected) == 0]
        if not fits:
            shown_sizes = tuple(int(s) if s.is_number else str(s) for s in sizes)
            shown_strides = tuple(int(s) if s.is_number else str(s) for s in strides)
            raise ValueError(
                f"input {name!r}: the example tensor has sizes {shown_sizes} and strides {shown_strides}, "
                "which is not a dense layout (a slice, a strided or an expanded view). AOTInductor "
                "compiles the method for exactly the example's strides, so export with a dense example "
                "instead, e.g. x.contiguous() (or x.contiguous(memory_format=torch.channels_last) for "
                "channels_last); Kiln then accepts inputs of any layout at run time."
            )
        d = max(fits)
        inner_to_outer.append(d)
        left.remove(d)
        expected = expected * sizes[d]
    outer_to_inner = inner_to_outer[::-1]
    if outer_to_inner == sorted(outer_to_inner):
        return []  # row-major, once the size-1 dimensions are left aside
    return sorted(trivial) + outer_to_inner


def output_specs(ep: ExportedProgram) -> list[TensorSpec]:
    """Contract of the outputs: the tensor leaves of the model's output in pytree order, named
    by their path in it ("logits", "state.0"); None and constants are not returned (see
    kiln.exporter.passes.outputs, which also refuses outputs no method can return)."""
    from kiln.exporter.passes.outputs import plan_outputs

    return plan_outputs(ep).specs


def mutated_user_inputs(ep: ExportedProgram, plan: InputPlan | None = None) -> list[str]:
    """Names of the user inputs the graph writes in place (in input order; the names of the
    method's inputs, see plan_inputs). AOTInductor
    compiles such writes into the caller's input buffers, so the runtime must pass those
    inputs as they are (metadata ``mutated_inputs``). A functional graph records them as
    USER_INPUT_MUTATION outputs; export's default IR keeps the in-place ops instead, so
    those are found by walking each written argument back through views to its input."""
    written = {spec.target for spec in ep.graph_signature.output_specs
               if spec.kind == OutputKind.USER_INPUT_MUTATION}
    for node in ep.graph.nodes:
        schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        if schema is None:
            continue
        for i, arg in enumerate(schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            root = _view_root(value)
            if root is not None and root.op == "placeholder":
                written.add(root.name)
    names = dict(zip(plan.placeholders, plan.names)) if plan is not None else {}
    return [names.get(spec.arg.name, spec.arg.name) for spec in ep.graph_signature.input_specs
            if spec.kind == InputKind.USER_INPUT and isinstance(spec.arg, TensorArgument)
            and spec.arg.name in written]


def _view_root(value: Any) -> torch.fx.Node | None:
    """The node whose storage `value` aliases, following ops whose output aliases their
    first argument (views, and in-place ops, which return what they wrote)."""
    while isinstance(value, torch.fx.Node) and value.op == "call_function":
        schema = getattr(value.target, "_schema", None)
        returns = schema.returns if schema is not None else []
        if not returns or returns[0].alias_info is None or not value.args:
            return value
        value = value.args[0]
    return value if isinstance(value, torch.fx.Node) else None


def program_metadata(extra: dict[str, Any] | None = None) -> dict[str, str]:
    """Metadata every exported program holds; ``extra`` (the caller's) wins on conflicts."""
    meta = {
        "kiln_exporter_version": EXPORTER_VERSION,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "created_by": f"kiln.export {EXPORTER_VERSION} (torch {torch.__version__}, "
        f"python {platform.python_version()}, {sys.platform}-{platform.machine()})",
    }
    for k, v in (extra or {}).items():
        meta[str(k)] = str(v)
    return meta
