"""Puts Kiln's op ``kiln::grouped_mm`` (kiln_ops.py) in place of the grouped products of
Mixture-of-Experts layers.

transformers' default experts implementation ("grouped_mm") sorts the routed rows by
expert and multiplies each expert's rows with its weight in one call: under
``torch.export`` that call is ``aten._grouped_mm`` for bfloat16 weights and transformers'
custom op ``transformers::grouped_mm_fallback`` for any other dtype. AOTInductor has no C
shim for either, so it would run them through libtorch's proxy executor, which Kiln
does not have, and the model could not run. Both compute, for input [S, K], weight
[G, K, N] and offs [G] (cumulative end rows), what ``kiln::grouped_mm`` does, which the
library calls as ``aoti_torch_<device>_grouped_mm``.

The routing before the products counts each expert's rows with ``histc``, on integer
expert ids when the model was exported on CUDA; Kiln's histc counts floats (as ATen's
CPU kernel does), so such a histc is rewritten to count float32 copies of the ids.

``aten._grouped_mm`` has other forms, rewritten or refused here by name:

  2-d input x 3-d weight, offs         kiln::grouped_mm (the MoE form)
  3-d x 3-d, no offs                   aten.bmm (a plain batched product)
  2-d x 2-d, 3-d x 2-d (offs split K   refused: no model Kiln runs uses them
  or N), a bias, an out_dtype other
  than the input's

(torch 2.11's own checks already refuse a bias and an out_dtype other than bfloat16
when the program is exported; the pass refuses them too, for a torch that accepts them.)
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["GroupedMmError", "rewrite_grouped_mm", "source_ops"]

FALLBACK = "transformers::grouped_mm_fallback"
ATEN = "aten::_grouped_mm"


class GroupedMmError(ValueError):
    """A grouped product in a form Kiln does not run (named in the message)."""


def _op_name(target) -> str | None:
    schema = getattr(target, "_schema", None)
    return schema.name if schema is not None else None


def source_ops(ep) -> list:
    """The nodes of ``ep`` the pass rewrites (or refuses)."""
    return [n for n in ep.graph.nodes if n.op == "call_function" and _op_name(n.target) in (FALLBACK, ATEN)]


def _arg(node, index: int, name: str, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _plan(node):
    """("grouped", (input, weight, offs)) or ("bmm", (a, b)); raises GroupedMmError."""
    a, b = _arg(node, 0, "self" if _op_name(node.target) == ATEN else "input"), _arg(node, 1, "mat2")
    if _op_name(node.target) == FALLBACK:
        return "grouped", (a, _arg(node, 1, "weight"), _arg(node, 2, "offs"))
    offs, bias, out_dtype = _arg(node, 2, "offs"), _arg(node, 3, "bias"), _arg(node, 4, "out_dtype")
    a_val, b_val = a.meta["val"], b.meta["val"]
    form = f"{a_val.dim()}-d x {b_val.dim()}-d{' with offs' if offs is not None else ''}"
    where = f"aten._grouped_mm ({form}, node {node.name})"
    if bias is not None:
        raise GroupedMmError(f"{where}: a bias is not supported by Kiln; add it after the product")
    if out_dtype is not None and out_dtype != a_val.dtype:
        raise GroupedMmError(f"{where}: out_dtype {out_dtype} differs from the input's {a_val.dtype}; "
                             "Kiln's grouped product returns the input's dtype")
    if a_val.dtype != b_val.dtype:
        raise GroupedMmError(f"{where}: the operands' dtypes differ ({a_val.dtype}, {b_val.dtype})")
    if a_val.dim() == 2 and b_val.dim() == 3 and offs is not None:
        return "grouped", (a, b, offs)
    if a_val.dim() == 3 and b_val.dim() == 3 and offs is None:
        return "bmm", (a, b)
    raise GroupedMmError(f"{where}: Kiln runs the 2-d x 3-d form with offs (Mixture-of-Experts layers) "
                         "and 3-d x 3-d without; this form is not supported")


def _count_in_float(gm, torch) -> int:
    """Makes every histc of integers count float32 copies of them, cast back after.

    The routing counts each expert's rows with histc, on integer expert ids on CUDA
    (float ones on the CPU). Kiln's histc takes floating inputs only, as ATen's CPU
    kernel does; for ids below 2^24 the float32 histogram is the same, count for count.
    Returns how many were changed."""
    aten = torch.ops.aten
    changed = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.histc.default:
            continue
        x = node.args[0]
        dtype = x.meta["val"].dtype
        if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
            continue
        if any(user.op == "output" for user in node.users):
            continue  # the program returns it by its node's name: left as it is
        with gm.graph.inserting_before(node):
            xf = gm.graph.call_function(aten._to_copy.default, (x,), {"dtype": torch.float32})
        node.replace_input_with(x, xf)
        with gm.graph.inserting_after(node):
            back = gm.graph.call_function(aten._to_copy.default, (node,), {"dtype": dtype})
        node.replace_all_uses_with(back, delete_user_cb=lambda user: user is not back)
        changed += 1
    return changed


def rewrite_grouped_mm(ep, log: Callable[[str], Any] | None = None, available: bool = True):
    """Returns a new ExportedProgram with every grouped product rewritten (or ``ep`` itself
    if there is none). ``available``: whether the target device's runtime implements
    kiln::grouped_mm; when it does not, a graph that needs it raises GroupedMmError naming
    the shim. ``log`` receives a one-line summary."""
    import copy

    import torch
    from torch._dispatch.python import enable_python_dispatcher
    from torch._guards import detect_fake_mode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    from kiln.exporter.kiln_ops import GROUPED_MM

    nodes = source_ops(ep)
    if not nodes:
        return ep
    plans = {n.name: _plan(n) for n in nodes}  # refuses an unsupported form before anything changes
    grouped = sum(1 for kind, _ in plans.values() if kind == "grouped")
    if grouped and not available:
        raise GroupedMmError(f"{grouped} grouped product(s) need Kiln's op kiln::grouped_mm, which this device's "
                             "runtime does not implement (no aoti_torch_<device>_grouped_mm)")
    gm = copy.deepcopy(ep.graph_module)
    by_name = {n.name: n for n in gm.graph.nodes}
    histograms = _count_in_float(gm, torch)
    for name, (kind, args) in plans.items():
        # Retargeted in place: the node keeps its name, which the graph signature uses
        # when the product is an output of the program.
        node = by_name[name]
        node.target = GROUPED_MM if kind == "grouped" else torch.ops.aten.bmm.default
        node.args = tuple(by_name[a.name] for a in args)
        node.kwargs = {}
    gm.graph.lint()
    gm.recompile()
    fake_mode = detect_fake_mode([n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"])
    if fake_mode is not None:
        with fake_mode, enable_python_dispatcher():
            FakeTensorProp(gm, mode=fake_mode).propagate_dont_convert_inputs(
                *[n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"])
    if log is not None:
        log(f"grouped mm: {grouped} grouped product(s) now kiln::grouped_mm"
            + (f", {len(plans) - grouped} batched one(s) aten.bmm" if len(plans) > grouped else "")
            + (f", {histograms} integer histc(s) counted in float32" if histograms else ""))
    return ep._update(gm, ep.graph_signature)
