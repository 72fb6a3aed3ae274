"""Weight-only quantization of one weight matrix: the codes and scales Kiln's quantized
linears (kiln_ops.py) and 8-bit embeddings read.

int8, per group of ``group_size`` consecutive inputs of a row (or the whole row), symmetric:
``scale = max|w| / 127``, ``code = round(w / scale)`` in [-127, 127], ``w ~ code * scale``.
The scale is rounded to the weight's dtype before the codes are chosen, so the codes fit the
scale the program stores. Groups matter: one outlying weight sets the step of its whole
group, and a row-wide step loses all-MiniLM-L6-v2's 0.999 cosine (0.9985 per row, 0.9995 in
groups of 128).

int4, per group of ``group_size`` consecutive inputs of an output row, asymmetric (the
convention of torchao's int4 weight-only config and ATen's ``_weight_int4pack_mm``):
``scale = (max - min) / 15``, ``zero = min + 8 * scale``, ``code = round((w - zero) / scale) + 8``
in [0, 15], ``w ~ (code - 8) * scale + zero``. Both ends of a group are represented
exactly up to rounding; a constant group has scale 0 and every code 8.

``pack_nibbles`` lays int4 codes out as kiln::int4_linear reads them on every device: two
a byte along K.
"""

from __future__ import annotations

import torch

__all__ = ["Int4Weight", "Int8Weight", "quantize_int4", "quantize_int8", "pack_nibbles"]


class Int8Weight:
    """``codes`` int8 [N, K], ``scales`` [N, K / group_size] in the weight's dtype."""

    def __init__(self, codes: torch.Tensor, scales: torch.Tensor, group_size: int):
        self.codes, self.scales, self.group_size = codes, scales, group_size

    def dequantize(self) -> torch.Tensor:
        return self.codes.float() * self.scales.float().repeat_interleave(self.group_size, dim=1)


class Int4Weight:
    """``codes`` uint8 [N, K] in [0, 15]; ``scales``, ``zeros`` [N, K / group_size] in the
    weight's dtype."""

    def __init__(self, codes: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, group_size: int):
        self.codes, self.scales, self.zeros, self.group_size = codes, scales, zeros, group_size

    def dequantize(self) -> torch.Tensor:
        s = self.scales.float().repeat_interleave(self.group_size, dim=1)
        z = self.zeros.float().repeat_interleave(self.group_size, dim=1)
        return (self.codes.float() - 8.0) * s + z

    def scale_zero(self) -> torch.Tensor:
        """[N, groups, 2]: kiln::int4_linear's layout."""
        return torch.stack((self.scales, self.zeros), dim=-1).contiguous()


def quantize_int8(weight: torch.Tensor, group_size: int | None = None) -> Int8Weight:
    """Symmetric int8 with a scale per group of ``group_size`` inputs of a row (default: the
    whole row)."""
    n, k = weight.shape
    group = k if group_size is None else group_size
    if group <= 0 or k % group:
        raise ValueError(f"int8 group size {group} does not divide the weight's {k} inputs")
    w = weight.detach().float().reshape(n, k // group, group)
    scale = (w.abs().amax(dim=-1) / 127.0).clamp(min=torch.finfo(torch.float32).tiny).to(weight.dtype)
    codes = torch.round(w / scale.float()[..., None]).clamp(-127, 127).to(torch.int8).reshape(n, k)
    return Int8Weight(codes, scale, group)


def quantize_int4(weight: torch.Tensor, group_size: int) -> Int4Weight:
    n, k = weight.shape
    if group_size <= 0 or k % group_size:
        raise ValueError(f"int4 group size {group_size} does not divide the weight's {k} inputs")
    w = weight.detach().float().reshape(n, k // group_size, group_size)
    lo, hi = w.amin(dim=-1), w.amax(dim=-1)
    scale = ((hi - lo) / 15.0).to(weight.dtype)
    zero = (lo + 8.0 * scale.float()).to(weight.dtype)
    s, z = scale.float()[..., None], zero.float()[..., None]
    safe = torch.where(s > 0, s, torch.ones_like(s))
    codes = torch.where(s > 0, torch.round((w - z) / safe) + 8.0, torch.full_like(w, 8.0))
    codes = codes.clamp(0, 15).to(torch.uint8).reshape(n, k)
    return Int4Weight(codes, scale, zero, group_size)


def pack_nibbles(codes: torch.Tensor) -> torch.Tensor:
    """uint8 [N, K] codes -> [N, K / 2], input 2j in the low nibble of byte j."""
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).contiguous()
