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
"""

from __future__ import annotations

import torch

__all__ = ["RMS_NORM_LINEAR", "c_shims", "c_shim_name"]

_DECLARATIONS = {
    "rms_norm_linear": (
        "AOTITorchError {name}(AtenTensorHandle x, AtenTensorHandle norm_weight, AtenTensorHandle weight, "
        "double eps, double weight_offset, AtenTensorHandle* ret0)"
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


def c_shim_name(op_name: str, device: str) -> str:
    """The function a library for ``device`` calls for Kiln op ``op_name``."""
    return f"aoti_torch_{device}_{op_name}"


def c_shims(device: str) -> dict:
    """``aot_inductor.custom_ops_to_c_shims`` for every Kiln op, on ``device``."""
    ops = {"rms_norm_linear": RMS_NORM_LINEAR}
    return {op: [_DECLARATIONS[name].format(name=c_shim_name(name, device))] for name, op in ops.items()}
