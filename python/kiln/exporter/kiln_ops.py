"""Kiln's own fused ops: torch custom ops that export passes put into a graph and that
Kiln's runtime implements as C shims.

AOTInductor turns a call to a custom op into a call through libtorch's proxy executor,
which Kiln does not have, unless the op is listed in ``aot_inductor.custom_ops_to_c_shims``
with a C declaration: then the library calls ``aoti_torch_<device>_<op name>`` directly
with the op's arguments (tensors as ``AtenTensorHandle``, floats as ``double``, the
result through ``AtenTensorHandle*``). That is how a fused op reaches a kernel of Kiln's.

``kiln::rms_norm_linear(x, norm_weight, weight, eps, weight_offset)`` is
``linear(rms_norm(x) * (norm_weight + weight_offset), weight)`` with the norm computed in
float32 and its result rounded to x's dtype, as Gemma's RMSNorm (weight_offset 1) and
the plain one (0) do before the projection that follows them.

``kiln::grouped_mm(input, weight, offs)`` is the experts' product of a Mixture-of-Experts
layer: ``input`` [S, K] holds rows sorted by expert, ``offs`` [G] (int32 or int64) the
cumulative end row of each expert's group, ``weight`` [G, K, N] (any strides: models
pass a transposed view of [G, N, K]); row r of group g gives ``input[r] @ weight[g]``,
and rows past ``offs[-1]`` are zero. It is what ``transformers::grouped_mm_fallback``
computes and what ``aten._grouped_mm`` does for a 2-d input and 3-d weight with offsets
(passes/grouped_mm.py puts it in place of both).

The weight-only quantized linears (passes/weight_quantization.py puts them in place of
``aten.linear``; quantized_weights.py makes their weights):

``kiln::int8_linear(x, weight, scales, group_size)``: ``x [..., K] @ W.T`` with ``W[n, k] =
weight[n, k] * scales[n, k // group_size]`` (int8 codes, ``scales [N, K / group_size]`` in x's
dtype), accumulated in float32 and rounded once to x's dtype; with ``group_size == K`` it is
``aten._weight_int8pack_mm`` over x's rows. A C shim on each device, so that Inductor calls
it as it is in every mode (its own lowering of ``_weight_int8pack_mm`` has no Triton template
and fails when GEMMs may come only from Triton).

``kiln::int4_linear(x, qweight, scale_zero, group_size)``: ``x [..., K] @ W.T`` with
``W[n, k] = (code - 8) * scale + zero``, the codes two per byte in ``qweight [N, K / 2]``
uint8 (k even in the low nibble), ``(scale, zero) = scale_zero[n, k // group_size]``, in
float32, rounded once to x's dtype. A C shim on each device
(``aoti_torch_<device>_int4_linear``): one layout whose rows a decode kernel streams in
16-byte loads on either device.
"""

from __future__ import annotations

import torch

__all__ = ["GROUPED_MM", "INT4_LINEAR", "INT8_LINEAR", "RMS_NORM_LINEAR", "c_shims",
           "c_shim_name"]

_DECLARATIONS = {
    "rms_norm_linear": (
        "AOTITorchError {name}(AtenTensorHandle x, AtenTensorHandle norm_weight, AtenTensorHandle weight, "
        "double eps, double weight_offset, AtenTensorHandle* ret0)"
    ),
    "grouped_mm": (
        "AOTITorchError {name}(AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle offs, "
        "AtenTensorHandle* ret0)"
    ),
    "int8_linear": (
        "AOTITorchError {name}(AtenTensorHandle x, AtenTensorHandle weight, AtenTensorHandle scales, "
        "int64_t group_size, AtenTensorHandle* ret0)"
    ),
    "int4_linear": (
        "AOTITorchError {name}(AtenTensorHandle x, AtenTensorHandle qweight, AtenTensorHandle scale_zero, "
        "int64_t group_size, AtenTensorHandle* ret0)"
    ),
}


@torch.library.custom_op("kiln::rms_norm_linear", mutates_args=())
def _rms_norm_linear(x: torch.Tensor, norm_weight: torch.Tensor, weight: torch.Tensor, eps: float,
                     weight_offset: float) -> torch.Tensor:
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    normed = normed * (norm_weight.float() + weight_offset)
    return torch.nn.functional.linear(normed.to(x.dtype), weight)


@_rms_norm_linear.register_fake
def _(x, norm_weight, weight, eps, weight_offset):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


RMS_NORM_LINEAR = torch.ops.kiln.rms_norm_linear.default


@torch.library.custom_op("kiln::grouped_mm", mutates_args=())
def _grouped_mm(input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    out = input.new_zeros((input.shape[0], weight.shape[2]))
    start = 0
    for g, end in enumerate(offs.tolist()):
        if end < start or end > input.shape[0]:
            raise ValueError(f"kiln::grouped_mm: offs[{g}] = {end} is not in [{start}, {input.shape[0]}]")
        if end > start:
            out[start:end] = input[start:end] @ weight[g]
        start = end
    return out


@_grouped_mm.register_fake
def _(input, weight, offs):
    torch._check(input.dim() == 2 and weight.dim() == 3 and offs.dim() == 1,
                 lambda: "kiln::grouped_mm: expected input [S, K], weight [G, K, N], offs [G]")
    torch._check(input.shape[1] == weight.shape[1] and offs.shape[0] == weight.shape[0],
                 lambda: "kiln::grouped_mm: input, weight and offs disagree in K or G")
    return input.new_empty((input.shape[0], weight.shape[2]))


GROUPED_MM = torch.ops.kiln.grouped_mm.default


def dequantize_int8(weight: torch.Tensor, scales: torch.Tensor, group_size: int) -> torch.Tensor:
    """The float32 weight [N, K] that kiln::int8_linear's codes and scales stand for."""
    return weight.float() * scales.float().repeat_interleave(group_size, dim=1)


@torch.library.custom_op("kiln::int8_linear", mutates_args=())
def _int8_linear(x: torch.Tensor, weight: torch.Tensor, scales: torch.Tensor, group_size: int) -> torch.Tensor:
    return (x.float() @ dequantize_int8(weight, scales, group_size).T).to(x.dtype)


@_int8_linear.register_fake
def _(x, weight, scales, group_size):
    torch._check(weight.dtype == torch.int8 and weight.dim() == 2 and x.shape[-1] == weight.shape[1],
                 lambda: "kiln::int8_linear: expected x [..., K] and an int8 weight [N, K]")
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


INT8_LINEAR = torch.ops.kiln.int8_linear.default


def dequantize_int4(qweight: torch.Tensor, scale_zero: torch.Tensor, group_size: int) -> torch.Tensor:
    """The float32 weight [N, K] that kiln::int4_linear's codes and scales stand for."""
    codes = torch.stack((qweight & 0xF, qweight >> 4), dim=-1).reshape(qweight.shape[0], -1).float()
    sz = scale_zero.float().repeat_interleave(group_size, dim=1)
    return (codes - 8.0) * sz[..., 0] + sz[..., 1]


@torch.library.custom_op("kiln::int4_linear", mutates_args=())
def _int4_linear(x: torch.Tensor, qweight: torch.Tensor, scale_zero: torch.Tensor, group_size: int) -> torch.Tensor:
    w = dequantize_int4(qweight, scale_zero, group_size)
    return (x.float() @ w.T).to(x.dtype)


@_int4_linear.register_fake
def _(x, qweight, scale_zero, group_size):
    torch._check(qweight.dtype == torch.uint8 and qweight.dim() == 2 and x.shape[-1] == 2 * qweight.shape[1],
                 lambda: "kiln::int4_linear: expected x [..., K] and a uint8 qweight [N, K / 2]")
    return x.new_empty((*x.shape[:-1], qweight.shape[0]))


INT4_LINEAR = torch.ops.kiln.int4_linear.default


def c_shim_name(op_name: str, device: str) -> str:
    """The function a library for ``device`` calls for Kiln op ``op_name``."""
    return f"aoti_torch_{device}_{op_name}"


def c_shims(device: str, names=None) -> dict:
    """``aot_inductor.custom_ops_to_c_shims`` for Kiln's ops ``names`` (default: every
    one), on ``device``."""
    ops = {"rms_norm_linear": RMS_NORM_LINEAR, "grouped_mm": GROUPED_MM, "int8_linear": INT8_LINEAR,
           "int4_linear": INT4_LINEAR}
    names = list(ops) if names is None else names
    return {ops[name]: [_DECLARATIONS[name].format(name=c_shim_name(name, device))] for name in names}
