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


# Packed variable-length batches: three sequences of different lengths. The second has more
# queries than keys, so with a bottom-right causal mask its first rows see no key.
_VARLEN_Q = (5, 12, 3)
_VARLEN_K = (7, 7, 9)


def _offsets(lengths):
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return torch.tensor(out, dtype=torch.int32)


def _assert_lse(got, expected, what, valid=None):
    """Logsumexp rows against ATen's: finite where ATen's is, +inf (a row that sees no key)
    where ATen's is. `valid` masks the rows ATen defines (others are its uninitialised padding)."""
    from compare import assert_same
    got, expected = got.float().cpu(), expected.float().cpu()
    if valid is not None:
        got, expected = got[valid], expected[valid]
    inf = torch.isinf(expected)
    assert torch.equal(torch.isinf(got), inf), f"{what}: infinite entries differ from ATen's"
    assert torch.equal(got[inf], expected[inf]), f"{what}: infinities of the wrong sign"
    assert_same(got[~inf], expected[~inf], what, rtol=2e-3, atol=2e-3, strides=False)


def _check_flash(kwargs, ref_kwargs, got, expected):
    """Output (values and layout), logsumexp ([B, H, Sq] or [H, total_q]), and the shapes and
    dtypes of the philox state and the (empty) debug mask."""
    from compare import assert_same
    assert len(got) == 5
    assert_same(got[0], expected[0], "output", rtol=2e-2, atol=2e-2)
    assert got[1].dtype == torch.float32 and tuple(got[1].shape) == tuple(expected[1].shape), \
        f"logsumexp {got[1].dtype}{tuple(got[1].shape)}, ATen {expected[1].dtype}{tuple(expected[1].shape)}"
    _assert_lse(got[1], expected[1], "logsumexp")
    for i, what in ((2, "rng_state"), (3, "unused"), (4, "debug_attn_mask")):
        assert got[i].dtype == expected[i].dtype and tuple(got[i].shape) == tuple(expected[i].shape), \
            f"{what}: {got[i].dtype}{tuple(got[i].shape)}, ATen {expected[i].dtype}{tuple(expected[i].shape)}"


def _flash_kwargs(q, k, v, causal, cum_q=None, cum_k=None, max_q=0, max_k=0, left=None, right=None, scale=None,
                  dropout_p=0.0):
    return dict(query=q, key=k, value=v, cum_seq_q=cum_q, cum_seq_k=cum_k, max_q=max_q, max_k=max_k,
                dropout_p=dropout_p, is_causal=causal, return_debug_mask=False, scale=scale,
                window_size_left=left, window_size_right=right, seqused_k=None, alibi_slopes=None)


@cases("_flash_attention_forward")
def _flash_forward(g):
    for dt in (torch.float16, torch.bfloat16):
        name = str(dt)[6:]
        # Dense: square and non-square (causal aligned bottom-right), query in SDPA's transposed layout.
        for lq, lk in ((7, 7), (5, 9), (9, 5)):
            for causal in (False, True):
                q = g.tensor((2, 4, lq, 64), dt).transpose(1, 2)
                k, v = g.tensor((2, lk, 4, 64), dt), g.tensor((2, lk, 4, 64), dt)
                yield Case(_flash_kwargs(q, k, v, causal), check=_check_flash, layouts=False,
                           id=f"{name}-dense{lq}x{lk}-causal{int(causal)}")
        # Grouped-query attention (8 query heads on 2 key/value heads), and one query row (decode).
        for lq in (6, 1):
            q, k, v = g.tensor((2, lq, 8, 64), dt), g.tensor((2, 9, 2, 64), dt), g.tensor((2, 9, 2, 64), dt)
            yield Case(_flash_kwargs(q, k, v, True, scale=0.2), check=_check_flash, layouts=False,
                       id=f"{name}-gqa-q{lq}")
        # Sliding windows, dense square and non-square.
        for lq, lk, left, right, causal in ((16, 16, 4, 0, False), (16, 16, 3, 2, False), (12, 20, 5, None, True),
                                            (20, 12, None, 3, False)):
            q, k, v = g.tensor((1, lq, 4, 64), dt), g.tensor((1, lk, 4, 64), dt), g.tensor((1, lk, 4, 64), dt)
            yield Case(_flash_kwargs(q, k, v, causal, left=left, right=right), check=_check_flash, layouts=False,
                       id=f"{name}-window{left}-{right}-{lq}x{lk}-causal{int(causal)}")
        # Packed variable-length batches: causal or not, GQA, a window, head dim 128.
        cq, ck = _offsets(_VARLEN_Q), _offsets(_VARLEN_K)
        tq, tk = sum(_VARLEN_Q), sum(_VARLEN_K)
        for hq, hk, d, causal, left, right in ((4, 4, 64, False, None, None), (4, 4, 64, True, None, None),
                                               (8, 2, 64, True, None, None), (4, 4, 64, False, 2, 1),
                                               (4, 2, 128, True, 3, None)):
            q, k, v = g.tensor((tq, hq, d), dt), g.tensor((tk, hk, d), dt), g.tensor((tk, hk, d), dt)
            yield Case(_flash_kwargs(q, k, v, causal, cq, ck, max(_VARLEN_Q), max(_VARLEN_K), left, right),
                       check=_check_flash, layouts=False,
                       id=f"{name}-varlen-h{hq}x{hk}-d{d}-causal{int(causal)}-window{left}-{right}")
    q, k, v = g.tensor((2, 5, 4, 64), torch.float16), g.tensor((2, 7, 4, 64), torch.float16), \
        g.tensor((2, 7, 4, 64), torch.float16)
    yield Case(_flash_kwargs(q, k, v, False, dropout_p=0.5), error="dropout_p must be 0", id="dropout")
    q, k, v = g.tensor((2, 5, 4, 64)), g.tensor((2, 7, 4, 64)), g.tensor((2, 7, 4, 64))
    yield Case(_flash_kwargs(q, k, v, False), error="float16 and bfloat16", id="float32")
