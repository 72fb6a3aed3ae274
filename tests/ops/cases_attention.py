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


def _output_only(kwargs, ref_kwargs, got, expected):
    """The attention output (result 0) against ATen's; the auxiliary results (logsumexp, philox
    state, debug mask) are the kernels' own and only feed a backward pass."""
    from compare import assert_same
    assert_same(got[0], expected[0], "output", rtol=2e-2, atol=2e-2)


def _cuda_attention_inputs(g, dtype, lq=5, lk=7):
    return g.tensor((2, 4, lq, 64), dtype), g.tensor((2, 4, lk, 64), dtype), g.tensor((2, 4, lk, 64), dtype)


@cases("_scaled_dot_product_flash_attention")
def _sdpa_flash(g):
    for dt in (torch.float16, torch.bfloat16):
        for causal in (False, True):
            # Causal on a square score matrix: ATen's flash kernel aligns a non-square one bottom-right.
            q, k, v = _cuda_attention_inputs(g, dt, lq=7 if causal else 5)
            yield Case(dict(query=q, key=k, value=v, dropout_p=0.0, is_causal=causal, return_debug_mask=False,
                            scale=None), check=_output_only, layouts=False, id=f"{str(dt)[6:]}-causal{int(causal)}")
        q, k, v = _cuda_attention_inputs(g, dt)
        yield Case(dict(query=q, key=k, value=v, dropout_p=0.0, is_causal=True, return_debug_mask=False, scale=None),
                   error="aligns that mask to the bottom right", id=f"{str(dt)[6:]}-causal-nonsquare")


@cases("_scaled_dot_product_efficient_attention")
def _sdpa_efficient(g):
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        q, k, v = _cuda_attention_inputs(g, dt)
        yield Case(dict(query=q, key=k, value=v, attn_bias=g.tensor((2, 4, 5, 7), dt), compute_log_sumexp=False,
                        dropout_p=0.0, is_causal=False, scale=0.2), check=_output_only, layouts=False,
                   id=f"{str(dt)[6:]}-bias")


@cases("_scaled_dot_product_cudnn_attention")
def _sdpa_cudnn(g):
    for dt in (torch.float16, torch.bfloat16):
        q, k, v = _cuda_attention_inputs(g, dt)
        yield Case(dict(query=q, key=k, value=v, attn_bias=None, compute_log_sumexp=False, dropout_p=0.0,
                        is_causal=True, return_debug_mask=False, scale=None), check=_output_only, layouts=False,
                   id=f"{str(dt)[6:]}-causal")
