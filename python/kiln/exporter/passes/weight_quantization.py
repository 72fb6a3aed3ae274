"""Weight-only quantization of linear layers and embeddings (compile spec ``quantize``).

A decode step reads every weight once per token, so its speed is the weights' bytes over
the memory bandwidth: int8 weights halve those bytes of a bfloat16 model, int4 weights
(with a scale and zero per group of inputs) quarter them. The pass rewrites the
ExportedProgram before it is compiled:

* ``aten.linear(x, W, b)`` with ``W`` a 2-d parameter becomes Kiln's quantized linear
  (kiln_ops.py, a C shim on each device) plus the bias: ``kiln::int8_linear`` or
  ``kiln::int4_linear``;
* ``aten.embedding(W, ids)`` becomes a lookup of int8 rows and of their scales, multiplied
  in the weight's dtype (Inductor fuses the three into one kernel).

Codes and scales are new parameters named after the weight (``lm_head.weight`` becomes
``lm_head.weight_int4`` and ``lm_head.weight_int4_scale_zero``); the float weight leaves
the program when nothing else reads it, so the program stores the quantized bytes only.
A weight tied to an embedding and an output projection gets both forms. A layer the
scheme cannot hold (K not a multiple of the group, N not a multiple of 8 for CUDA's int4
layout, a non-float weight) stays as it is; the summary line says how many did.

Spec grammar (a string, comma-separated): the linear scheme ``int8`` | ``int4`` | ``none``,
then optionally ``group=32|64|128|256`` (default 128: the inputs sharing a scale; an int8
weight whose inputs the group does not divide takes one scale a row), ``embedding=int8|none``
(default none) and ``skip=<substring>`` (repeatable: weights whose name contains it stay
float, e.g. ``skip=lm_head``). Examples: ``"int8"``, ``"int4,group=64,embedding=int8"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["QuantizeSpec", "parse_quantize_spec", "quantize_weights"]

_GROUPS = (32, 64, 128, 256)


@dataclass
class QuantizeSpec:
    linear: str = "none"  # "int8" | "int4" | "none"
    group_size: int = 128
    embedding: str = "none"  # "int8" | "none"
    skip: list[str] = field(default_factory=list)

    def active(self) -> bool:
        return self.linear != "none" or self.embedding != "none"

    def skips(self, name: str) -> bool:
        return any(s in name for s in self.skip)


def parse_quantize_spec(value: Any) -> QuantizeSpec:
    """Reads compile spec ``quantize``; raises ValueError naming what is wrong."""
    text = str(value).strip().lower()
    spec = QuantizeSpec()
    if text in ("", "none", "off", "false", "0"):
        return spec
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if parts[0] in ("int8", "int4", "none"):
        spec.linear = parts.pop(0)
    for part in parts:
        key, _, val = part.partition("=")
        if key == "group" and val.isdigit() and int(val) in _GROUPS:
            spec.group_size = int(val)
        elif key == "embedding" and val in ("int8", "none"):
            spec.embedding = val
        elif key == "skip" and val:
            spec.skip.append(val)
        else:
            raise ValueError(
                f"compile spec 'quantize': {part!r} in {value!r} is not understood (expected int8|int4|none first, "
                f"then group={'|'.join(map(str, _GROUPS))}, embedding=int8|none, skip=<name part>)")
    return spec


class _Report:
    def __init__(self) -> None:
        self.done: dict[str, int] = {}
        self.kept: dict[str, int] = {}
        self.bytes_before = 0
        self.bytes_after = 0

    def summary(self, spec: QuantizeSpec) -> str:
        done = ", ".join(f"{n} {k}" for k, n in sorted(self.done.items())) or "nothing"
        kept = "; kept float: " + ", ".join(f"{n} ({why})" for why, n in sorted(self.kept.items())) if self.kept else ""
        size = ""
        if self.bytes_before:
            size = f"; weights {self.bytes_before / 2**20:.1f} MiB -> {self.bytes_after / 2**20:.1f} MiB"
        return f"weight quantization ({spec.linear}, embedding {spec.embedding}): {done}{kept}{size}"

    def keep(self, why: str) -> None:
        self.kept[why] = self.kept.get(why, 0) + 1


def quantize_weights(ep, spec: QuantizeSpec, log: Callable[[str], Any] | None = None):
    """Returns a new ExportedProgram with the linears and embeddings of ``spec`` quantized
    (``ep`` itself when nothing matches); the backend has checked that its runtime has
    kiln::int8_linear / kiln::int4_linear."""
    report = _Report()
    result = _quantize(ep, spec, report)
    if log is not None:
        log(report.summary(spec))
    return result


def _quantize(ep, spec, report):
    import copy

    import torch
    from torch._guards import detect_fake_mode
    from torch.export.graph_signature import ExportGraphSignature, InputKind, InputSpec, TensorArgument

    from kiln.exporter import kiln_ops
    from kiln.exporter import quantized_weights as qw

    aten = torch.ops.aten
    sig = ep.graph_signature
    params = {s.arg.name: s.target for s in sig.input_specs if s.kind == InputKind.PARAMETER}
    fake_mode = detect_fake_mode([n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"])
    gm = copy.deepcopy(ep.graph_module)  # the caller's program stays as it was
    state_dict = dict(ep.state_dict)
    specs = list(sig.input_specs)
    taken = set(state_dict) | set(ep.constants)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    changed = False
    removed: set[int] = set()  # storages of the float weights taken out

    def add_param(before, name: str, value: torch.Tensor):
        if name in taken:
            raise ValueError(f"quantize: parameter name {name!r} is already taken")
        taken.add(name)
        with gm.graph.inserting_before(before):
            holder = gm.graph.placeholder("p_" + name.replace(".", "_"))
        with fake_mode:
            holder.meta["val"] = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                                                     device=value.device)
        at = next(i for i, s in enumerate(specs) if s.arg.name == before.name)
        specs.insert(at, InputSpec(kind=InputKind.PARAMETER, arg=TensorArgument(name=holder.name), target=name,
                                   persistent=None))
        state_dict[name] = torch.nn.Parameter(value, requires_grad=False)
        report.bytes_after += value.numel() * value.element_size()
        return holder

    def replace(node, target, args, bias=None):
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(target, args)
            new.meta.update({k: v for k, v in node.meta.items() if k != "val"})
            out = new
            if bias is not None:
                out = gm.graph.call_function(aten.add.Tensor, (new, bias))
                out.meta.update({k: v for k, v in node.meta.items() if k != "val"})
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)

    for holder in placeholders:
        fqn = params.get(holder.name)
        val = holder.meta.get("val")
        if fqn is None or val is None or val.dim() != 2 or not val.dtype.is_floating_point or spec.skips(fqn):
            continue
        users = list(holder.users)
        linear_uses = [u for u in users if u.op == "call_function" and u.target is aten.linear.default
                       and len(u.args) >= 2 and u.args[1] is holder and u.args[0] is not holder]
        embedding_uses = [u for u in users if u.op == "call_function" and u.target is aten.embedding.default
                          and u.args[0] is holder and len(u.args) >= 2]
        if len(linear_uses) + len(embedding_uses) != len(users):
            if linear_uses or embedding_uses:
                report.keep("weight read by other ops")
            continue
        weight = state_dict[fqn].detach()
        n, k = weight.shape
        plans = []
        if linear_uses and spec.linear == "int8":
            plans.append("linear-int8")
        elif linear_uses and spec.linear == "int4":
            if k % spec.group_size:
                report.keep(f"K not a multiple of {spec.group_size}")
            else:
                plans.append("linear-int4")
        if embedding_uses and spec.embedding == "int8":
            plans.append("embedding-int8")
        if not plans:
            continue
        # A weight tied to an embedding that stays float keeps its float copy for that use.
        keeps_float = bool(embedding_uses and "embedding-int8" not in plans) or \
            bool(linear_uses and not any(p.startswith("linear") for p in plans))
        report.bytes_before += weight.numel() * weight.element_size()
        if keeps_float:
            report.keep("tied weight, float copy kept for its other use")
            report.bytes_after += weight.numel() * weight.element_size()
        int8: list = []  # (codes, scales) placeholders, shared by a tied linear and embedding

        def int8_params():
            if not int8:
                # Groups along the inputs where the group divides them, else one scale a row.
                q = qw.quantize_int8(weight, spec.group_size if k % spec.group_size == 0 else k)
                int8.extend((add_param(holder, fqn + "_int8", q.codes),
                             add_param(holder, fqn + "_int8_scale", q.scales), q.group_size))
            return int8

        for plan in plans:
            if plan == "linear-int8":
                codes, scales, group = int8_params()
                for use in linear_uses:
                    bias = use.args[2] if len(use.args) > 2 else None
                    replace(use, kiln_ops.INT8_LINEAR, (use.args[0], codes, scales, group), bias)
            elif plan == "linear-int4":
                q = qw.quantize_int4(weight, spec.group_size)
                packed = add_param(holder, fqn + "_int4", qw.pack_nibbles(q.codes))
                sz = add_param(holder, fqn + "_int4_scale_zero", q.scale_zero())
                for use in linear_uses:
                    bias = use.args[2] if len(use.args) > 2 else None
                    replace(use, kiln_ops.INT4_LINEAR, (use.args[0], packed, sz, spec.group_size), bias)
            else:
                codes, scales, group = int8_params()
                for use in embedding_uses:
                    ids = use.args[1]
                    # rows [..., D] as [..., groups, group] times their scales [..., groups, 1].
                    with gm.graph.inserting_before(use):
                        rows = gm.graph.call_function(aten.embedding.default, (codes, ids))
                        row_scales = gm.graph.call_function(aten.embedding.default, (scales, ids))
                        wide = gm.graph.call_function(aten._to_copy.default, (rows,), {"dtype": weight.dtype})
                        split = gm.graph.call_function(aten.unflatten.int, (wide, -1, [k // group, group]))
                        column = gm.graph.call_function(aten.unsqueeze.default, (row_scales, -1))
                        scaled = gm.graph.call_function(aten.mul.Tensor, (split, column))
                        out = gm.graph.call_function(aten.flatten.using_ints, (scaled, -2, -1))
                    for new in (rows, row_scales, wide, split, column, scaled, out):
                        new.meta.update({key: v for key, v in use.meta.items() if key != "val"})
                    use.replace_all_uses_with(out)
                    gm.graph.erase_node(use)
            report.done[plan] = report.done.get(plan, 0) + 1
        changed = True
        if not keeps_float:
            removed.add(weight.data_ptr())
            gm.graph.erase_node(holder)
            specs = [s for s in specs if s.arg.name != holder.name]
            del state_dict[fqn]

    # torch.export lists a tied weight once per name and reads it through one of them; the
    # other names, unread, go with the float weight they share.
    for holder in [n for n in gm.graph.nodes if n.op == "placeholder" and not n.users]:
        fqn = params.get(holder.name)
        if fqn in state_dict and state_dict[fqn].data_ptr() in removed:
            gm.graph.erase_node(holder)
            specs = [s for s in specs if s.arg.name != holder.name]
            del state_dict[fqn]

    if not changed:
        return ep
    gm.graph.lint()
    gm.recompile()
    _propagate_fake(gm, fake_mode)
    new_sig = ExportGraphSignature(input_specs=specs, output_specs=_renamed_outputs(gm, sig.output_specs))
    return ep._update(gm, new_sig, state_dict=state_dict)


def _renamed_outputs(gm, output_specs) -> list:
    """The output specs naming the nodes that now produce each output (a replaced linear
    that was a graph output has a new node)."""
    import dataclasses

    from torch.export.graph_signature import TensorArgument

    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    produced = output_node.args[0]
    specs = []
    for spec, node in zip(output_specs, produced):
        if isinstance(spec.arg, TensorArgument) and hasattr(node, "name") and node.name != spec.arg.name:
            spec = dataclasses.replace(spec, arg=TensorArgument(name=node.name))
        specs.append(spec)
    return specs


def _propagate_fake(gm, fake_mode) -> None:
    """Gives every node its fake value again (the new nodes have none)."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    with fake_mode, enable_python_dispatcher():
        FakeTensorProp(gm, mode=fake_mode).propagate_dont_convert_inputs(
            *[n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"])
