"""Convolutions as slices and matrix products, for libraries that must not call cuDNN.

Inductor's Triton convolution template covers only plain 2-d convolutions (one group,
not transposed); for every other convolution a Triton-only build has no choice and
AOTInductor gives up. Rewritten here as im2col (strided slices of the padded input,
stacked) followed by a grouped matrix product, every convolution becomes ops that
Inductor generates itself: its Triton matmul templates for the product, fused pointwise
and reduction kernels for the rest. Depthwise-like groups (one output channel per
group) are a multiply-and-sum instead, which Inductor fuses into one reduction kernel.

A transposed convolution is the plain convolution of the input with zeros inserted
between its elements (stride - 1 of them), padded by dilation * (kernel - 1) - padding,
with the kernel flipped and its in/out channels swapped within each group.

Used through :func:`convolution_decompositions`, a decomposition table (the CUDA backend's
``decomposition_table``, which Inductor applies while it compiles); correctness is checked
against eager convolutions in tests/python/test_conv_decomposition.py.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["convolution_decompositions", "convolution_as_matmul"]


def _tuple(value, n: int) -> list:
    if isinstance(value, (list, tuple)):
        return list(value) * n if len(value) == 1 else list(value)
    return [value] * n


def _zero_insert(x, dim: int, stride: int):
    """Inserts stride - 1 zeros between consecutive elements along `dim`."""
    import torch

    if stride == 1:
        return x
    size = x.shape[dim]
    moved = x.movedim(dim, -1).unsqueeze(-1)
    zeros = moved.new_zeros(*moved.shape[:-1], stride - 1)
    spread = torch.cat([moved, zeros], dim=-1).flatten(-2)
    return spread[..., : (size - 1) * stride + 1].movedim(-1, dim)


def _pad_or_crop(x, dim: int, before: int, after: int):
    """Zero-pads (positive) or crops (negative) `dim` on each side."""
    import torch

    if before < 0:
        x = x.narrow(dim, -before, x.shape[dim] + before)
        before = 0
    if after < 0:
        x = x.narrow(dim, 0, x.shape[dim] + after)
        after = 0
    if before == 0 and after == 0:
        return x
    parts = []
    if before:
        parts.append(x.new_zeros(*x.shape[:dim], before, *x.shape[dim + 1 :]))
    parts.append(x)
    if after:
        parts.append(x.new_zeros(*x.shape[:dim], after, *x.shape[dim + 1 :]))
    return torch.cat(parts, dim=dim)


def _forward_conv(x, weight, stride, padding, dilation, groups: int):
    """Plain (not transposed) N-d convolution without bias, as im2col + matmul."""
    import torch

    nd = x.dim() - 2
    n, c = x.shape[0], x.shape[1]
    out_channels, c_per_group = weight.shape[0], weight.shape[1]
    kernel = list(weight.shape[2:])
    for d in range(nd):
        x = _pad_or_crop(x, 2 + d, padding[d], padding[d])
    spatial = list(x.shape[2:])
    out_sizes = [(spatial[d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in range(nd)]

    # One strided view of the input per kernel position: [N, C, *out] each.
    patches = []

    def gather(prefix: list[int]):
        d = len(prefix)
        if d == nd:
            view = x
            for axis, k in enumerate(prefix):
                start = k * dilation[axis]
                view = view.narrow(2 + axis, start, (out_sizes[axis] - 1) * stride[axis] + 1)
                if stride[axis] != 1:
                    view = view[(slice(None),) * (2 + axis) + (slice(None, None, stride[axis]),)]
            patches.append(view)
            return
        for k in range(kernel[d]):
            gather(prefix + [k])

    gather([])
    positions = len(patches)
    cols = torch.stack(patches, dim=2)  # [N, C, K, *out]
    length = 1
    for s in out_sizes:
        length = length * s
    cols = cols.reshape(n, groups, c_per_group * positions, length)
    w = weight.reshape(groups, out_channels // groups, c_per_group * positions)
    if out_channels // groups == 1:
        # Depthwise-like: a reduction over the (small) window, no matrix product.
        out = (cols * w.unsqueeze(0).transpose(-1, -2)).sum(dim=2, keepdim=True)
    else:
        out = torch.matmul(w.unsqueeze(0), cols)  # [N, G, O/G, L]
    return out.reshape(n, out_channels, *out_sizes)


def convolution_as_matmul(
    x,
    weight,
    bias,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
):
    """aten.convolution with the same arguments and result, without a convolution op."""
    nd = x.dim() - 2
    stride, padding, dilation = _tuple(stride, nd), _tuple(padding, nd), _tuple(dilation, nd)
    output_padding = _tuple(output_padding, nd) if output_padding else [0] * nd
    if transposed:
        in_channels = weight.shape[0]
        out_per_group = weight.shape[1]
        kernel = list(weight.shape[2:])
        w = weight.reshape(groups, in_channels // groups, out_per_group, *kernel).transpose(1, 2)
        w = w.reshape(groups * out_per_group, in_channels // groups, *kernel)
        w = w.flip(list(range(2, 2 + nd)))
        for d in range(nd):
            x = _zero_insert(x, 2 + d, stride[d])
            edge = dilation[d] * (kernel[d] - 1) - padding[d]
            x = _pad_or_crop(x, 2 + d, edge, edge + output_padding[d])
        out = _forward_conv(x, w, [1] * nd, [0] * nd, dilation, groups)
    else:
        out = _forward_conv(x, weight, stride, padding, dilation, groups)
    if bias is not None:
        out = out + bias.reshape(1, -1, *([1] * nd))
    return out


def convolution_decompositions() -> dict:
    """A run_decompositions table: every convolution overload -> slices and matmuls."""
    import torch

    aten = torch.ops.aten

    def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
        return convolution_as_matmul(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)

    def conv_nd(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        unbatched = x.dim() == weight.dim() - 1
        if unbatched:
            x = x.unsqueeze(0)
        if isinstance(padding, str):  # the "padding" overloads: "valid" or "same" (stride 1)
            nd = x.dim() - 2
            if padding == "same":
                dil = _tuple(dilation, nd)
                for d in range(nd):
                    total = dil[d] * (weight.shape[2 + d] - 1)
                    x = _pad_or_crop(x, 2 + d, total // 2, total - total // 2)
            elif padding != "valid":
                raise ValueError(f"convolution padding {padding!r} is not 'same' or 'valid'")
            padding = 0
        out = convolution_as_matmul(x, weight, bias, stride, padding, dilation, False, [0], groups)
        return out.squeeze(0) if unbatched else out

    def conv_transpose_nd(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        unbatched = x.dim() == weight.dim() - 1
        if unbatched:
            x = x.unsqueeze(0)
        out = convolution_as_matmul(x, weight, bias, stride, padding, dilation, True, output_padding, groups)
        return out.squeeze(0) if unbatched else out

    table = {aten.convolution.default: convolution}
    for packet in (aten.conv1d, aten.conv2d, aten.conv3d):
        for overload in packet.overloads():
            table[getattr(packet, overload)] = conv_nd
    for packet in (aten.conv_transpose1d, aten.conv_transpose2d, aten.conv_transpose3d):
        for overload in packet.overloads():  # "default" or "input", by dimension
            table[getattr(packet, overload)] = conv_transpose_nd
    return table
