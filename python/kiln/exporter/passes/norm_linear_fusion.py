"""Replaces an RMSNorm followed by a bias-free linear with Kiln's fused op
``kiln::rms_norm_linear`` (kiln_ops.py).

In a decoder layer the hidden state is normalised, then projected (q/k/v after the input
norm, gate/up after the pre-MLP norm). Unfused, the norm is a kernel of its own that
writes the normalised row for the projection to read back. Fused, the projection's
kernel normalises its input as it loads it, one launch fewer per norm; at decode time
those small kernels cost about as much as their bytes.

The pass matches the RMSNorm that ``torch.export`` leaves of Gemma's and of the plain
float32 form, on the ExportedProgram:

    xf = to(x, float32)                                   (or x itself when it is float32)
    normed = mul(xf, rsqrt(add(mean(pow(xf, 2), [-1], keepdim=True), eps)))
    scaled = mul(normed, add(to(g, float32), offset))     (or to(g, float32), or g)
    y = type_as(scaled, x) | to(scaled, x.dtype)          (optional when x is float32)
    out = linear(y, W)

with ``g`` a 1-d parameter, ``W`` a 2-d weight, ``x`` float32, bfloat16 or float16, and
the norm's intermediate results read by nothing else (otherwise the norm has to run
anyway and the rewrite would save nothing). Run it after projection fusion, which
leaves one projection per norm. Other norms (Llama's multiplies by its weight after the
cast) are left as they are; the summary says how many linears were fused.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["fuse_norm_linear"]

_DTYPES = ("float32", "bfloat16", "float16")


def _call(node, *targets) -> bool:
    return getattr(node, "op", None) == "call_function" and node.target in targets


def _only_user(node, user) -> bool:
    return set(node.users) == {user}


def _rows_at_most(val, max_rows: int | None) -> bool:
    """Whether a [..., K] tensor has at most max_rows rows whatever its dynamic dims."""
    if max_rows is None:
        return True
    rows = 1
    for d in val.shape[:-1]:
        if not isinstance(d, int):
            return False  # a dynamic dim (prefill length): may exceed it
        rows *= d
    return rows <= max_rows


def _match(linear_node, params: set[str], max_rows: int | None = None):
    """(x, g, W, eps, offset, nodes the rewrite makes dead) for a matching linear, or None."""
    import torch

    aten = torch.ops.aten
    if len(linear_node.args) > 2 and linear_node.args[2] is not None:
        return None
    y, weight = linear_node.args[0], linear_node.args[1]
    if weight.op != "placeholder" or weight.name not in params:
        return None
    dead = []
    scaled = y
    if _call(y, aten.type_as.default, aten.to.dtype, aten._to_copy.default):
        if not _only_user(y, linear_node):
            return None
        dead.append(y)
        scaled = y.args[0]
    if not _call(scaled, aten.mul.Tensor) or not _only_user(scaled, dead[-1] if dead else linear_node):
        return None
    for normed, gain in (scaled.args, scaled.args[::-1]):
        found = _match_norm(normed, scaled)
        if found is None:
            continue
        g_and_offset = _match_gain(gain, scaled, params)
        if g_and_offset is None:
            continue
        xf, eps, norm_nodes = found
        g, offset, gain_nodes = g_and_offset
        x = xf.args[0] if _call(xf, aten.to.dtype, aten._to_copy.default) else xf
        x_val, out_val = x.meta.get("val"), linear_node.meta.get("val")
        if x_val is None or out_val is None or str(x_val.dtype).replace("torch.", "") not in _DTYPES:
            return None
        if out_val.dtype != x_val.dtype or weight.meta["val"].dtype != x_val.dtype:
            return None  # the projection runs in another dtype than x: not this pattern
        if not _rows_at_most(x_val, max_rows):
            return None
        return x, g, weight, eps, offset, dead + [scaled] + norm_nodes + gain_nodes
    return None


def _match_norm(normed, scaled):
    """(xf, eps, nodes) for normed = mul(xf, rsqrt(add(mean(pow(xf, 2), [-1], True), eps)))."""
    import torch

    aten = torch.ops.aten
    if not _call(normed, aten.mul.Tensor) or not _only_user(normed, scaled):
        return None
    for xf, r in (normed.args, normed.args[::-1]):
        if not _call(r, aten.rsqrt.default) or not _only_user(r, normed):
            continue
        add = r.args[0]
        if not _call(add, aten.add.Tensor, aten.add.Scalar) or not _only_user(add, r):
            continue
        mean, eps = add.args[0], add.args[1]
        if not isinstance(eps, (int, float)) or not _call(mean, aten.mean.dim) or not _only_user(mean, add):
            continue
        dims = list(mean.args[1]) if len(mean.args) > 1 else None
        keepdim = mean.args[2] if len(mean.args) > 2 else mean.kwargs.get("keepdim", False)
        if dims not in ([-1], [xf.meta["val"].dim() - 1]) or not keepdim or mean.kwargs.get("dtype") is not None:
            continue
        square = mean.args[0]
        if not _call(square, aten.pow.Tensor_Scalar) or square.args[0] is not xf or square.args[1] != 2:
            continue
        if not _only_user(square, mean) or str(xf.meta["val"].dtype) != "torch.float32":
            continue
        return xf, float(eps), [normed, r, add, mean, square]
    return None


def _match_gain(gain, scaled, params: set[str]):
    """(g, offset, nodes) for gain = add(to(g, float32), offset) | to(g, float32) | g."""
    import torch

    aten = torch.ops.aten
    nodes, offset = [], 0.0
    if _call(gain, aten.add.Tensor, aten.add.Scalar) and isinstance(gain.args[1], (int, float)):
        if not _only_user(gain, scaled):
            return None
        nodes.append(gain)
        offset = float(gain.args[1])
        gain = gain.args[0]
    if _call(gain, aten.to.dtype, aten._to_copy.default):
        if not _only_user(gain, nodes[-1] if nodes else scaled):
            return None
        nodes.append(gain)
        gain = gain.args[0]
    if gain.op != "placeholder" or gain.name not in params or gain.meta["val"].dim() != 1:
        return None
    return gain, offset, nodes


def fuse_norm_linear(ep, log: Callable[[str], Any] | None = None, max_rows: int | None = None):
    """Returns a new ExportedProgram with RMSNorm + linear pairs fused (or ``ep`` itself if
    none matches). ``max_rows``: fuse only where x has at most that many rows for every
    value of its dynamic dims (the CUDA op is a GEMV: decode steps). ``log`` receives a
    one-line summary."""
    import copy

    import torch
    from torch._dispatch.python import enable_python_dispatcher
    from torch._guards import detect_fake_mode
    from torch.export.graph_signature import InputKind
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    from kiln.exporter.kiln_ops import RMS_NORM_LINEAR

    params = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.PARAMETER}
    linears = [n for n in ep.graph.nodes if _call(n, torch.ops.aten.linear.default)]
    matches = {n.name: m for n in linears if (m := _match(n, params, max_rows)) is not None}
    if not matches:
        if log is not None:
            log(f"norm-linear fusion: none of {len(linears)} linears follows a matching RMSNorm")
        return ep
    gm = copy.deepcopy(ep.graph_module)
    by_name = {n.name: n for n in gm.graph.nodes}
    for name, (x, g, weight, eps, offset, dead) in matches.items():
        node = by_name[name]
        with gm.graph.inserting_before(node):
            fused = gm.graph.call_function(
                RMS_NORM_LINEAR, (by_name[x.name], by_name[g.name], by_name[weight.name], eps, offset))
        fused.meta.update(node.meta)
        node.replace_all_uses_with(fused)
        gm.graph.erase_node(node)
        for d in dead:  # users first: the match lists each node before the ones it reads
            gm.graph.erase_node(by_name[d.name])
    gm.graph.lint()
    gm.recompile()
    fake_mode = detect_fake_mode([n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"])
    if fake_mode is not None:
        with fake_mode, enable_python_dispatcher():
            FakeTensorProp(gm, mode=fake_mode).propagate_dont_convert_inputs(
                *[n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"])
    if log is not None:
        log(f"norm-linear fusion: {len(matches)} of {len(linears)} linears fused with the RMSNorm before them")
    return ep._update(gm, ep.graph_signature)
