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
    # 16 query rows or more, with more scores than one block holds, run in row blocks over
    # packed k^T and v (sdpa.cpp): 1000 keys give blocks of 60 rows, so 130 rows end in a
    # partial block; 1000 keys and head size 40 end in partial 32-column panels; 4 query heads
    # over 2 key/value heads; causal blocks stop at their last row's key.
    q, k, v = g.tensor((1, 4, 130, 40)), g.tensor((1, 2, 1000, 40)), g.tensor((1, 2, 1000, 40))
    for causal in (False, True):
        yield Case(dict(query=q, key=k, value=v, dropout_p=0.0, is_causal=causal, attn_mask=None, scale=None),
                   rtol=1e-4, atol=1e-4, reference=_math_sdpa, id=f"blocked-causal{int(causal)}")
    yield Case(dict(query=q, key=k, value=v, dropout_p=0.0, is_causal=False,
                    attn_mask=g.tensor((1, 4, 130, 1000)), scale=0.2),
               rtol=1e-4, atol=1e-4, reference=_math_sdpa, id="blocked-mask")
    q, k, v = (g.tensor((1, 2, 40, 16), torch.bfloat16), g.tensor((1, 2, 2000, 16), torch.bfloat16),
               g.tensor((1, 2, 2000, 16), torch.bfloat16))
    yield Case(dict(query=q, key=k, value=v, dropout_p=0.0, is_causal=True, attn_mask=None, scale=None),
               rtol=2e-2, atol=2e-2, reference=_math_sdpa, id="blocked-bf16")


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


def _check_efficient(kwargs, ref_kwargs, got, expected):
    """Output, logsumexp on the rows ATen defines (each batch's queries; Kiln's padding is +inf),
    the philox seed/offset shapes and dtypes, and the max sequence lengths."""
    from compare import assert_same
    assert len(got) == 6
    assert_same(got[0], expected[0], "output", rtol=2e-2, atol=2e-2)
    lse, ref = got[1], expected[1]
    assert lse.dtype == torch.float32 and tuple(lse.shape) == tuple(ref.shape), \
        f"logsumexp {lse.dtype}{tuple(lse.shape)}, ATen {ref.dtype}{tuple(ref.shape)}"
    if lse.numel() > 0:
        cu = kwargs["cu_seqlens_q"]
        lengths = [int(cu[i + 1] - cu[i]) for i in range(len(cu) - 1)] if cu is not None \
            else [kwargs["query"].shape[1]] * lse.shape[0]
        valid = torch.zeros(lse.shape, dtype=torch.bool)
        for b, n in enumerate(lengths):
            valid[b, :, :n] = True
        _assert_lse(lse, ref, "logsumexp", valid)
        assert torch.isinf(lse.cpu()[~valid]).all() and (lse.cpu()[~valid] > 0).all(), "logsumexp padding is not +inf"
    for i, what in ((2, "philox_seed"), (3, "philox_offset")):
        assert got[i].dtype == expected[i].dtype and tuple(got[i].shape) == tuple(expected[i].shape), \
            f"{what}: {got[i].dtype}{tuple(got[i].shape)}, ATen {expected[i].dtype}{tuple(expected[i].shape)}"
    assert (int(got[4]), int(got[5])) == (int(expected[4]), int(expected[5])), \
        f"max lengths {got[4]}, {got[5]}; ATen {expected[4]}, {expected[5]}"


def _check_efficient_bottom_right(kwargs, ref_kwargs, got, expected):
    """A dense batch under the bottom-right causal mask against float64 math: row i sees keys
    j <= i + (keys - queries); a row that sees none gives zeros and a logsumexp of 0. ATen's
    result gives only the shapes and dtypes of the other outputs."""
    from compare import assert_same
    q, k, v = (kwargs[n].double().cpu() for n in ("query", "key", "value"))
    m, n = q.shape[1], k.shape[1]
    scale = kwargs["scale"] if kwargs["scale"] is not None else q.shape[-1] ** -0.5
    scores = torch.einsum("bmhd,bnhd->bhmn", q, k) * scale
    visible = torch.ones(m, n, dtype=torch.bool).tril(diagonal=n - m)
    scores = scores.masked_fill(~visible, float("-inf"))
    seen = visible.any(dim=1)
    probs = torch.where(seen[:, None], scores.softmax(-1).nan_to_num(0.0), torch.zeros(()))
    want = torch.einsum("bhmn,bnhd->bmhd", probs, v)
    assert len(got) == 6
    # ATen's meta function lays the output out contiguous [B, M, H, Kv], as Kiln does (ATen's
    # CUDA kernel returns another layout for this case, which its meta function does not state).
    assert got[0].is_contiguous(), f"output strides {got[0].stride()}"
    assert_same(got[0], want.to(got[0].dtype), "output", rtol=2e-2, atol=2e-2, strides=False)
    lse = got[1].float().cpu()[..., :m]
    want_lse = torch.where(seen, torch.logsumexp(scores, dim=-1), torch.zeros(()))
    assert_same(lse, want_lse.float(), "logsumexp", rtol=2e-3, atol=2e-3, strides=False)
    for i, what in ((2, "philox_seed"), (3, "philox_offset")):
        assert got[i].dtype == expected[i].dtype and tuple(got[i].shape) == tuple(expected[i].shape), what


def _efficient_kwargs(q, k, v, mask_type, bias=None, cu_q=None, cu_k=None, max_q=None, max_k=None, lse=True,
                      scale=None, dropout_p=0.0):
    return dict(query=q, key=k, value=v, bias=bias, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=max_q,
                max_seqlen_k=max_k, dropout_p=dropout_p, custom_mask_type=mask_type, compute_log_sumexp=lse,
                scale=scale, seqlen_k=None, window_size=None)


@cases("_efficient_attention_forward")
def _efficient_forward(g):
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        name = str(dt)[6:]
        # Dense, each mask type, keys at least as many as queries (no row without keys);
        # value head dim differing from query/key's; with and without logsumexp.
        for mask_type in (0, 1, 2):
            for lq, lk in ((5, 9), (33, 33)):
                q = g.tensor((2, 4, lq, 64), dt).transpose(1, 2)
                k, v = g.tensor((2, lk, 4, 64), dt), g.tensor((2, lk, 4, 32), dt)
                yield Case(_efficient_kwargs(q, k, v, mask_type, lse=mask_type != 1), check=_check_efficient,
                           layouts=False, id=f"{name}-dense{lq}x{lk}-mask{mask_type}")
        # More queries than keys, causal from the bottom right: the first 4 rows see no key.
        # Kiln gives them zeros and a logsumexp of 0; ATen 2.11's kernel masks nothing in its
        # first block of queries here (its negative diagonal offset wraps as an unsigned
        # index), so these rows are compared with the masked float64 reference instead.
        q, k, v = g.tensor((2, 9, 4, 64), dt), g.tensor((2, 5, 4, 64), dt), g.tensor((2, 5, 4, 64), dt)
        yield Case(_efficient_kwargs(q, k, v, 2), check=_check_efficient_bottom_right, layouts=False,
                   id=f"{name}-dense9x5-mask2")
        # A bias row of 8 keys: ATen's kernel wants its rows 16-byte aligned.
        q, k, v = g.tensor((2, 5, 4, 64), dt), g.tensor((2, 8, 4, 64), dt), g.tensor((2, 8, 4, 64), dt)
        yield Case(_efficient_kwargs(q, k, v, 0, bias=g.tensor((2, 4, 5, 8), dt), scale=0.2), check=_check_efficient,
                   layouts=False, id=f"{name}-bias")
        # Packed variable-length batches (batch 1, sequences along dim 1).
        lens_q, lens_k = (5, 12, 3), (7, 12, 9)
        cq, ck = _offsets(lens_q), _offsets(lens_k)
        for mask_type in (0, 1, 2):
            q = g.tensor((1, sum(lens_q), 4, 64), dt)
            k, v = g.tensor((1, sum(lens_k), 4, 64), dt), g.tensor((1, sum(lens_k), 4, 64), dt)
            yield Case(_efficient_kwargs(q, k, v, mask_type, cu_q=cq, cu_k=ck, max_q=max(lens_q),
                                         max_k=max(lens_k)), check=_check_efficient, layouts=False,
                       id=f"{name}-varlen-mask{mask_type}")
    q, k, v = g.tensor((2, 5, 4, 64)), g.tensor((2, 7, 4, 64)), g.tensor((2, 7, 4, 64))
    yield Case(_efficient_kwargs(q, k, v, 0, dropout_p=0.5), error="dropout_p must be 0", id="dropout")
    yield Case(_efficient_kwargs(q, k, v, 3), error="custom_mask_type must be", id="mask-type")
