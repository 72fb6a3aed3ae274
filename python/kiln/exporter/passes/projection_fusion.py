"""Fuses linear projections that read the same input into one wider projection.

A transformer layer projects its normalised hidden state three times for attention
(q, k, v) and twice for a gated MLP (gate, up). Each projection is its own matrix
product: at decode time (one token) each is a matrix-vector product whose speed is
bound by how fast its weight streams from memory, and small weights (k and v of a
grouped-query layer are a few MB) never reach full bandwidth before the kernel ends.
One product over the concatenated weights reads the same bytes in one launch instead of
three, and the outputs are column slices of its result, which the views that follow
(head splitting) read in place.

The pass works on the ExportedProgram, before anything is compiled, so every backend and
both of Kiln's CUDA modes benefit. It looks for ``aten.linear``, which ``torch.export``
keeps; a program already lowered to core ATen (``run_decompositions()``, where a linear
is a transpose and ``mm``/``addmm``) is left as it is. A group is fused when its ``aten.linear`` nodes share
the input node, their weights (and biases, all or none) are parameters used nowhere else
in the graph, with one dtype, device and input width, and no member is a graph output.
The fused parameter is named after its members (``model.layers.0.self_attn.q_proj.weight``
and siblings become ``model.layers.0.self_attn.q_proj__k_proj__v_proj.weight``), so two
methods of one program exported from the same model fuse to the same name and still
share their weights by name. The original parameters leave the program (the
concatenation is one copy of the fused weights, made at export; the caller's
ExportedProgram keeps its own).

The rewrite is checked by propagating fake tensors through the new graph; a group whose
output a consumer cannot read as a column slice (a ``view`` that merges the feature
dimension with another) stays unfused, and the summary says how many did.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from typing import Any, Callable

__all__ = ["fuse_projections", "FusionReport"]


class FusionReport:
    """What one run of the pass did: ``groups`` lists the fused parameter names with
    their members' names; ``skipped`` says why the pass kept the program, if it did."""

    def __init__(self) -> None:
        self.groups: list[tuple[str, list[str]]] = []
        self.skipped: str | None = None
        self.skipped_groups = 0

    def summary(self) -> str:
        if self.skipped:
            return f"projection fusion skipped: {self.skipped}"
        if not self.groups:
            return "projection fusion: no projections share an input"
        members = sum(len(m) for _, m in self.groups)
        left = (f"; {self.skipped_groups} groups left unfused (a consumer needs a contiguous output)"
                if self.skipped_groups else "")
        return f"projection fusion: {members} projections in {len(self.groups)} groups{left}"


def _fused_name(fqns: list[str], suffix: str) -> str:
    """``a.b.q_proj.weight, a.b.k_proj.weight`` -> ``a.b.q_proj__k_proj.weight``."""
    owners = [f[: -len(suffix) - 1].split(".") for f in fqns]
    common = 0
    while all(len(o) > common + 1 and o[common] == owners[0][common] for o in owners):
        common += 1
    prefix = owners[0][:common]
    parts = ["_".join(o[common:]) for o in owners]
    return ".".join(prefix + ["__".join(parts), suffix])


def _param_of(node, params: dict[str, str]) -> str | None:
    """The parameter FQN a placeholder node stands for, if it is one used by one node only."""
    if node is None or node.op != "placeholder" or node.name not in params or len(node.users) != 1:
        return None
    return params[node.name]


def _groups(graph, params: dict[str, str], output_nodes: set) -> list[list]:
    """Lists of >= 2 linear nodes that may be fused, each in graph order."""
    import torch

    linear = torch.ops.aten.linear.default
    by_key: dict[tuple, list] = defaultdict(list)
    for node in graph.nodes:
        if node.op != "call_function" or node.target is not linear or node.kwargs:
            continue
        x, weight = node.args[0], node.args[1]
        bias = node.args[2] if len(node.args) > 2 else None
        if _param_of(weight, params) is None or node in output_nodes:
            continue
        if bias is not None and _param_of(bias, params) is None:
            continue
        w = weight.meta.get("val")
        if w is None or w.dim() != 2:
            continue
        by_key[(x, w.dtype, str(w.device), int(w.shape[1]), bias is not None)].append(node)
    return [nodes for nodes in by_key.values() if len(nodes) >= 2]


def fuse_projections(ep, log: Callable[[str], Any] | None = None):
    """Returns a new ExportedProgram with shared-input projections fused (or ``ep`` itself
    if there is nothing to fuse or the rewrite does not trace). ``log`` receives a
    one-line summary."""
    report = FusionReport()
    result = _fuse(ep, report)
    if log is not None:
        log(report.summary())
    return result


def _fuse(ep, report: FusionReport):
    from torch._guards import detect_fake_mode
    from torch.export.graph_signature import ExportGraphSignature, InputKind

    sig = ep.graph_signature
    params = {s.arg.name: s.target for s in sig.input_specs if s.kind == InputKind.PARAMETER}
    output_node = next(n for n in ep.graph.nodes if n.op == "output")
    groups = _groups(ep.graph, params, set(output_node.all_input_nodes))
    if not groups:
        return ep
    fake_mode = detect_fake_mode([n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"])
    if fake_mode is None:
        report.skipped = "the program's placeholders carry no fake tensors"
        return ep
    taken = set(ep.state_dict) | set(ep.constants)

    rewritten = _rewrite(ep, groups, params, fake_mode, taken)
    if isinstance(rewritten, Exception):
        # Some consumer needs a contiguous projection output: keep the groups that trace.
        kept = []
        for group in groups:
            if not isinstance(_rewrite(ep, kept + [group], params, fake_mode, taken), Exception):
                kept.append(group)
        if not kept:
            report.skipped = f"no consumer accepts a column slice ({type(rewritten).__name__}: {str(rewritten)[:160]})"
            return ep
        report.skipped_groups = len(groups) - len(kept)
        rewritten = _rewrite(ep, kept, params, fake_mode, taken)
    gm, specs, fused = rewritten

    import torch

    state_dict = dict(ep.state_dict)
    for name, fqns in fused:
        value = torch.cat([state_dict[f].detach() for f in fqns], dim=0)
        state_dict[name] = torch.nn.Parameter(value, requires_grad=False)
        for f in fqns:
            del state_dict[f]
        if name.endswith(".weight"):
            report.groups.append((name, fqns))
    new_sig = ExportGraphSignature(input_specs=specs, output_specs=list(sig.output_specs))
    return ep._update(gm, new_sig, state_dict=state_dict)


def _rewrite(ep, groups, params, fake_mode, taken):
    """The graph module with `groups` fused, its input specs and the fused parameters
    [(name, member FQNs)]; or the exception that fake propagation raised."""
    import copy

    import torch
    from torch._dispatch.python import enable_python_dispatcher
    from torch.export.graph_signature import InputKind, InputSpec, TensorArgument
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    gm = copy.deepcopy(ep.graph_module)
    by_name = {n.name: n for n in gm.graph.nodes}
    specs = list(ep.graph_signature.input_specs)
    fused = []
    linear = torch.ops.aten.linear.default
    for group in groups:
        nodes = [by_name[n.name] for n in group]
        has_bias = len(nodes[0].args) > 2 and nodes[0].args[2] is not None
        new_args = []
        for index in (1, 2) if has_bias else (1,):
            holders = [n.args[index] for n in nodes]
            fqns = [params[h.name] for h in holders]
            name = _fused_name(fqns, fqns[0].rsplit(".", 1)[1])
            if name in taken:
                return ValueError(f"fused parameter name {name!r} is already taken")
            vals = [h.meta["val"] for h in holders]
            with fake_mode:
                val = torch.empty((sum(int(v.shape[0]) for v in vals), *vals[0].shape[1:]), dtype=vals[0].dtype,
                                  device=vals[0].device)
            # The fused placeholder takes the place of the members' first one, in the graph
            # and in the signature, so parameters keep their order before user inputs.
            order = [n for n in gm.graph.nodes if n.op == "placeholder"]
            first = min(holders, key=order.index)
            with gm.graph.inserting_before(first):
                holder = gm.graph.placeholder("p_" + name.replace(".", "_"))
            holder.meta["val"] = val
            drop = {h.name for h in holders}
            at = min(i for i, s in enumerate(specs) if s.arg.name in drop)
            specs = [s for s in specs if s.arg.name not in drop]
            specs.insert(at, InputSpec(kind=InputKind.PARAMETER, arg=TensorArgument(name=holder.name), target=name,
                                       persistent=None))
            fused.append((name, fqns))
            new_args.append((holder, holders))
        sizes = [int(h.meta["val"].shape[0]) for h in new_args[0][1]]
        with gm.graph.inserting_before(nodes[0]):
            product = gm.graph.call_function(linear, (nodes[0].args[0],) + tuple(h for h, _ in new_args))
            product.meta.update({k: v for k, v in nodes[0].meta.items() if k != "val"})
            split = gm.graph.call_function(torch.ops.aten.split_with_sizes.default, (product, sizes, -1))
            for i, node in enumerate(nodes):
                piece = gm.graph.call_function(operator.getitem, (split, i))
                piece.meta.update({k: v for k, v in node.meta.items() if k != "val"})
                node.replace_all_uses_with(piece)
        for node in nodes:
            gm.graph.erase_node(node)
        for _, holders in new_args:
            for h in holders:
                gm.graph.erase_node(h)
    gm.graph.lint()
    gm.recompile()
    try:
        # Recomputes every node's fake value (the slices' strides differ from the
        # contiguous outputs they replace) and proves each consumer accepts a slice.
        with fake_mode, enable_python_dispatcher():
            FakeTensorProp(gm, mode=fake_mode).propagate_dont_convert_inputs(
                *[n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"])
    except Exception as e:  # a view that needs a contiguous output: the caller drops the group
        return e
    return gm, specs, fused
