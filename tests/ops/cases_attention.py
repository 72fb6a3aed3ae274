"""Scaled dot-product attention."""

import torch

from op_case import Case, cases


def _math_sdpa(query, key, value, dropout_p, is_causal, attn_mask, scale):
    """ATen's CPU flash kernel reads garbage unless the last dimension has stride 1 (Inductor
    always gives it that); the math path is the reference for every layout."""
    op = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    out, lse = op(query.contiguous(), key.contiguous(), value.contiguous(), dropout_p, is_causal,
                  attn_mask=None if attn_mask is None else attn_mask.contiguous(), scale=scale)
    return out.as_strided(out.shape, out.stride()), lse


@cases("_scaled_dot_product_flash_attention_for_cpu")
def _sdpa_cpu(g):
    for causal in (False, True):
        q, k, v = g.tensor((2, 3, 5, 8)), g.tensor((2, 3, 7, 8)), g.tensor((2, 3, 7, 8))
        yield Case(dict(query=q, key=k, value=v, dropout_p=0.0, is_causal=causal, attn_mask=None, scale=None),
                   rtol=1e-4, atol=1e-4, reference=_math_sdpa, id=f"causal{int(causal)}")
    q, k, v = g.tensor((1, 2, 4, 8)), g.tensor((1, 2, 6, 8)), g.tensor((1, 2, 6, 8))
    yield Case(dict(query=q, key=k, value=v, dropout_p=0.0, is_causal=False, attn_mask=g.tensor((1, 1, 4, 6)),
                    scale=0.3), rtol=1e-4, atol=1e-4, reference=_math_sdpa, id="mask")
