"""Stores convolution weights in the layout Inductor's CPU code reads them in.

On the CPU, Inductor runs convolution models channels-last (its layout optimisation,
on whenever oneDNN is present at export) and hands each convolution a channels-last
weight. A parameter stored contiguous (OIHW) is therefore copied into a channels-last
buffer by the compiled code on every call: for ResNet-50, 45 MB of 3x3 weights per
call, and a weight that is a fresh buffer each call cannot be packed once and kept by
Kiln's convolution (src/shims/cpu/convolution.cpp). 1x1 weights are the same bytes
in both layouts, which is why only they escaped the copy.

This pass gives every 4-d and 5-d parameter that only convolutions read as their
weight the channels-last memory format in the program's state dict (same values, same
shape, other strides), so the compiled code reads the program's weight in place. The
caller's ExportedProgram keeps its own tensors.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["conv_weights_channels_last"]


def _is_convolution_weight_use(node, placeholder) -> bool:
    import torch

    convolutions = {
        torch.ops.aten.convolution.default,
        torch.ops.aten.conv1d.default,
        torch.ops.aten.conv2d.default,
        torch.ops.aten.conv3d.default,
        torch.ops.aten._convolution.default,
    }
    padding_overloads = {getattr(torch.ops.aten.conv2d, "padding", None), getattr(torch.ops.aten.conv3d, "padding", None)}
    if node.op != "call_function" or not (node.target in convolutions or node.target in padding_overloads):
        return False
    if len(node.args) < 2 or node.args[1] is not placeholder or node.args[0] is placeholder:
        return False
    # Transposed convolutions take their weight as [Cin, Cout/g, ...]; Inductor does not
    # ask for those channels-last.
    if node.target in (torch.ops.aten.convolution.default, torch.ops.aten._convolution.default):
        transposed = node.args[6] if len(node.args) > 6 else node.kwargs.get("transposed", False)
        if transposed:
            return False
    return True


def conv_weights_channels_last(ep, log: Callable[[str], None] | None = None):
    """The ExportedProgram with its convolution weights channels-last (see the module
    docstring); ``ep`` itself when there are none to change."""
    import torch

    sig = ep.graph_signature
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    changed: dict[str, torch.Tensor] = {}
    for name, fqn in sig.inputs_to_parameters.items():
        node = placeholders.get(name)
        value = ep.state_dict.get(fqn)
        if node is None or value is None or not isinstance(value, torch.Tensor):
            continue
        if value.dim() not in (4, 5) or value.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            continue
        users = list(node.users)
        if not users or not all(_is_convolution_weight_use(u, node) for u in users):
            continue
        fmt = torch.channels_last if value.dim() == 4 else torch.channels_last_3d
        if value.is_contiguous(memory_format=fmt):
            continue
        changed[fqn] = torch.nn.Parameter(value.detach().contiguous(memory_format=fmt), requires_grad=False)
    if not changed:
        return ep
    state_dict = dict(ep.state_dict)
    state_dict.update(changed)
    if log:
        log(f"convolution weights stored channels-last: {len(changed)}")
    return ep._update(ep.graph_module, ep.graph_signature, state_dict=state_dict)
