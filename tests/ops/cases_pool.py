"""Pooling (avg, max, adaptive, fractional, unpool) and the products CNNs and recommenders hit:
baddbmm, addbmm, addmv, _addmm_activation, _int_mm, _weight_int8pack_mm, _weight_int4pack_mm,
_weight_int4pack_mm_cpu_tensor, _fused_rms_norm,
_cdist_forward, _pdist_forward, _trilinear."""

import torch

from op_case import COMPLEX, FLOATS, INTS, Case, cases

NARROW = (torch.float16, torch.bfloat16)


def _tol(dt, narrow=None, wide=None):
    if dt in NARROW:
        return narrow or {}
    return wide or {}


def _cl(t):
    return t.contiguous(memory_format=torch.channels_last)


def _cl3d(t):
    return t.contiguous(memory_format=torch.channels_last_3d)


# ---------------------------------------------------------------- avg pooling

@cases("avg_pool2d")
def _avg_pool2d(g):
    def c(x, k, s=(), p=0, ceil=False, cip=True, div=None, **kw):
        return Case(dict(self=x, kernel_size=list(k), stride=list(s), padding=[p] if isinstance(p, int) else list(p),
                         ceil_mode=ceil, count_include_pad=cip, divisor_override=div), **kw)
    for dt in FLOATS + (torch.int64,):
        yield c(g.tensor((2, 3, 7, 8), dt), (3, 2), (2, 2), (1, 1), id=f"{str(dt)[6:]}", **_tol(dt, dict(rtol=1e-2, atol=1e-2)))
    yield c(g.tensor((3, 7, 8)), (3, 3), (2, 1), 1, id="unbatched")
    yield c(g.tensor((2, 3, 7, 8)), (3,), (), 1, ceil=True, cip=False, id="ceil-exclude-pad")
    yield c(g.tensor((2, 3, 6, 6)), (2, 2), (3, 3), 1, ceil=True, id="ceil-window-in-padding")
    yield c(g.tensor((2, 3, 7, 8)), (2, 3), (1, 2), (1, 1), div=5, id="divisor")
    yield c(_cl(g.tensor((2, 5, 7, 8))), (3, 3), (2, 2), 1, id="channels-last")
    yield c(g.tensor((0, 3, 4, 4)), (2, 2), id="empty-batch")
    yield c(g.tensor((2, 3, 5, 5), torch.int64, low=-20, high=20), (2, 2), (1, 1), 1, cip=False, id="int-trunc")
    yield c(g.tensor((2, 3, 4, 4)), (2, 2), (2, 2), 2, error="padding", id="bad-padding")
    yield c(g.tensor((2, 3, 2, 2)), (3, 3), error="too small", id="too-small")
    yield c(g.tensor((3, 4)), (2, 2), error="3-d or 4-d", id="bad-rank")
    yield c(g.tensor((2, 3, 4, 4)), (2, 2), div=0, error="divisor_override", id="divisor-zero")
    yield c(g.tensor((2, 3, 4, 4), torch.complex64), (2, 2), error="dtype", id="complex")
    # Windows of more than 25 elements (what makes Inductor fall back to the op).
    yield c(g.tensor((2, 4, 17, 15)), (7, 6), (3, 2), (3, 2), ceil=True, cip=False, id="large-window", rtol=1e-5, atol=1e-5)
    yield c(_cl(g.tensor((2, 8, 12, 12))), (5, 5), (1, 1), 2, div=7, id="channels-last-large-window", rtol=1e-5, atol=1e-5)


@cases("avg_pool3d")
def _avg_pool3d(g):
    def c(x, k, s=(), p=0, ceil=False, cip=True, div=None, **kw):
        return Case(dict(self=x, kernel_size=list(k), stride=list(s), padding=[p] if isinstance(p, int) else list(p),
                         ceil_mode=ceil, count_include_pad=cip, divisor_override=div), **kw)
    for dt in (torch.float32, torch.float64, torch.int64):
        yield c(g.tensor((2, 3, 5, 6, 7), dt), (3, 2, 2), (2, 2, 1), (1, 1, 0), id=f"{str(dt)[6:]}")
    yield c(g.tensor((3, 5, 6, 7)), (2,), (), 1, ceil=True, cip=False, id="unbatched-ceil")
    yield c(g.tensor((2, 3, 5, 6, 7)), (3, 3, 3), (2, 2, 2), 1, div=7, id="divisor")
    yield c(_cl3d(g.tensor((2, 4, 5, 6, 7))), (2, 2, 2), id="channels-last-3d")
    yield c(g.tensor((2, 3, 4, 4, 4)), (2, 2, 2), (1, 1, 1), (2, 0, 0), error="padding", id="bad-padding")
    yield c(g.tensor((1, 2, 8, 9, 10)), (3, 4, 5), (2, 3, 2), (1, 2, 2), ceil=True, cip=False, id="large-window",
            rtol=1e-5, atol=1e-5)


@cases("_adaptive_avg_pool2d")
def _adaptive_avg_pool2d(g):
    for dt in FLOATS:
        yield Case(dict(self=g.tensor((2, 3, 7, 9), dt), output_size=[3, 4]), id=str(dt)[6:],
                   **_tol(dt, dict(rtol=1e-2, atol=1e-2)))
    yield Case(dict(self=g.tensor((3, 10, 5)), output_size=[4, 7]), id="unbatched-upsample")
    yield Case(dict(self=_cl(g.tensor((2, 6, 7, 7))), output_size=[1, 1]), id="channels-last-global")
    yield Case(dict(self=_cl(g.tensor((2, 6, 7, 7))), output_size=[3, 2]), id="channels-last")
    yield Case(dict(self=g.tensor((0, 3, 4, 4)), output_size=[2, 2]), id="empty-batch")
    yield Case(dict(self=g.tensor((1, 3, 4, 4)), output_size=[0, 2]), id="empty-output")
    yield Case(dict(self=g.tensor((2, 3, 4, 4)), output_size=[2]), error="output_size", id="bad-output-size")
    yield Case(dict(self=g.tensor((2, 0, 4, 4)), output_size=[2, 2]), error="empty", id="empty-channels")
    yield Case(dict(self=g.tensor((2, 3, 37, 29)), output_size=[3, 2]), id="large-windows", rtol=1e-5, atol=1e-5)
    yield Case(dict(self=_cl(g.tensor((2, 5, 23, 31))), output_size=[2, 3]), id="channels-last-large-windows", rtol=1e-5, atol=1e-5)


@cases("_adaptive_avg_pool3d")
def _adaptive_avg_pool3d(g):
    for dt in FLOATS:
        yield Case(dict(self=g.tensor((2, 3, 5, 7, 6), dt), output_size=[2, 3, 4]), id=str(dt)[6:],
                   **_tol(dt, dict(rtol=1e-2, atol=1e-2)))
    yield Case(dict(self=g.tensor((3, 5, 7, 6)), output_size=[1, 1, 1]), id="unbatched-global")
    yield Case(dict(self=_cl3d(g.tensor((2, 3, 5, 7, 6))), output_size=[2, 2, 2]), id="channels-last-3d")
    yield Case(dict(self=g.tensor((3, 4, 4)), output_size=[2, 2, 2]), error="4-d or 5-d", id="bad-rank")
    yield Case(dict(self=g.tensor((1, 2, 11, 13, 9)), output_size=[2, 3, 2]), id="large-windows", rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- max pooling

@cases("max_pool2d_with_indices")
def _max_pool2d(g):
    def c(x, k, s=(), p=0, d=1, ceil=False, **kw):
        return Case(dict(self=x, kernel_size=list(k), stride=list(s), padding=[p] if isinstance(p, int) else list(p),
                         dilation=[d] if isinstance(d, int) else list(d), ceil_mode=ceil), **kw)
    for dt in FLOATS + (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        x = g.distinct((2, 3, 7, 8), dt) if dt.is_floating_point else g.distinct((2, 3, 7, 8), torch.int64).to(dt)
        if dt in (torch.int8, torch.uint8):
            x = g.distinct((1, 2, 8, 8), torch.int64).remainder(120).to(dt)
            yield c(x, (2, 2), (2, 2), id=str(dt)[6:])
            continue
        if dt in NARROW:
            x = g.distinct((2, 3, 6, 6), torch.float64).to(dt)
        yield c(x, (3, 2), (2, 1), (1, 1), id=str(dt)[6:])
    yield c(g.distinct((3, 9, 8)), (3, 3), (2, 2), 1, 2, id="unbatched-dilation")
    yield c(g.distinct((2, 3, 9, 8)), (3, 2), (2, 2), (1, 0), (2, 1), ceil=True, id="ceil-dilation")
    yield c(g.distinct((2, 3, 6, 6)), (2, 2), (3, 3), 1, ceil=True, id="ceil-window-in-padding")
    yield c(_cl(g.distinct((2, 5, 7, 8))), (3, 3), (2, 2), 1, id="channels-last")
    yield c(g.distinct((1, 1, 4, 4)), (4, 4), id="global")
    yield c(g.tensor((0, 3, 4, 4)), (2, 2), id="empty-batch")
    x = g.distinct((1, 2, 4, 4))
    x[0, 0, 1, 1] = float("nan")
    x[0, 1, 2, 3] = float("inf")
    yield c(x, (2, 2), (2, 2), id="nan-inf", layouts=False)
    yield c(g.tensor((2, 3, 4, 4)), (3, 3), (1, 1), 2, error="padding", id="bad-padding")
    yield c(g.tensor((2, 3, 4, 4)), (2, 2), (0, 1), error="stride", id="zero-stride")
    yield c(g.tensor((2, 3, 4, 4)), (2, 2), d=0, error="dilation", id="zero-dilation")
    yield c(g.tensor((2, 3, 4, 4)), (2, 2, 2), error="kernel_size", id="bad-kernel-len")
    yield c(g.tensor((2, 3, 4, 4), torch.bool), (2, 2), error="dtype", id="bool")
    yield c(g.distinct((2, 3, 20, 19)), (6, 5), (2, 3), (3, 2), (2, 3), ceil=True, id="large-window-dilation")
    yield c(_cl(g.distinct((2, 6, 11, 10))), (3, 3), (2, 2), 1, 2, id="channels-last-dilation")
    yield c(_cl(g.distinct((1, 4, 6, 7), torch.int64).to(torch.int32)), (3, 2), (1, 2), 1, id="channels-last-int32")


@cases("max_pool3d_with_indices")
def _max_pool3d(g):
    def c(x, k, s=(), p=0, d=1, ceil=False, **kw):
        return Case(dict(self=x, kernel_size=list(k), stride=list(s), padding=[p] if isinstance(p, int) else list(p),
                         dilation=[d] if isinstance(d, int) else list(d), ceil_mode=ceil), **kw)
    for dt in FLOATS + (torch.int64,):
        x = g.distinct((2, 3, 5, 6, 5), torch.float64 if dt in NARROW else dt)
        if dt in NARROW:
            x = g.distinct((1, 2, 4, 5, 5), torch.float64).to(dt)
        yield c(x, (2, 3, 2), (2, 2, 1), (1, 1, 0), id=str(dt)[6:])
    yield c(g.distinct((3, 7, 6, 5)), (3,), (2,), 1, 2, ceil=True, id="unbatched-dilation-ceil")
    yield c(_cl3d(g.distinct((2, 4, 5, 6, 5))), (2, 2, 2), id="channels-last-3d")
    yield c(g.tensor((3, 4, 4)), (2, 2, 2), error="4-d or 5-d", id="bad-rank")
    yield c(_cl3d(g.distinct((1, 3, 9, 8, 7))), (3, 3, 3), (2, 2, 2), 1, (2, 1, 2), ceil=True,
            id="channels-last-dilation-ceil")


@cases("adaptive_max_pool2d")
def _adaptive_max_pool2d(g):
    for dt in FLOATS:
        x = g.distinct((2, 3, 7, 9), dt) if dt not in NARROW else g.distinct((1, 2, 5, 7), torch.float64).to(dt)
        yield Case(dict(self=x, output_size=[3, 4]), id=str(dt)[6:])
    yield Case(dict(self=g.distinct((3, 10, 5)), output_size=[4, 7]), id="unbatched-upsample")
    yield Case(dict(self=_cl(g.distinct((2, 6, 7, 7))), output_size=[3, 2]), id="channels-last")
    yield Case(dict(self=g.tensor((0, 3, 4, 4)), output_size=[2, 2]), id="empty-batch")
    yield Case(dict(self=g.tensor((2, 3, 4, 4)), output_size=[2, 2, 2]), error="output_size", id="bad-output-size")
    yield Case(dict(self=g.tensor((2, 3, 4, 4), torch.int64), output_size=[2, 2]), error="dtype", id="int")
    yield Case(dict(self=g.distinct((2, 3, 37, 29)), output_size=[3, 2]), id="large-windows")


@cases("adaptive_max_pool3d")
def _adaptive_max_pool3d(g):
    for dt in FLOATS:
        x = g.distinct((2, 3, 5, 7, 6), dt) if dt not in NARROW else g.distinct((1, 2, 3, 5, 6), torch.float64).to(dt)
        yield Case(dict(self=x, output_size=[2, 3, 4]), id=str(dt)[6:])
    yield Case(dict(self=g.distinct((3, 5, 7, 6)), output_size=[1, 1, 1]), id="unbatched-global")
    yield Case(dict(self=_cl3d(g.distinct((2, 3, 5, 7, 6))), output_size=[2, 2, 2]), id="channels-last-3d")
    yield Case(dict(self=g.distinct((1, 2, 11, 13, 9)), output_size=[2, 3, 2]), id="large-windows")


@cases("fractional_max_pool2d")
def _fractional_max_pool2d(g):
    for dt in FLOATS:
        shape = (2, 3, 9, 10) if dt not in NARROW else (1, 2, 7, 8)
        x = g.distinct(shape, torch.float64).to(dt)
        u = g.tensor((shape[0], shape[1], 2), dt, low=0.0, high=0.99)
        yield Case(dict(self=x, kernel_size=[2, 3], output_size=[4, 5], random_samples=u), id=str(dt)[6:])
    yield Case(dict(self=g.distinct((3, 9, 9)), kernel_size=[3, 3], output_size=[5, 3],
                    random_samples=g.tensor((1, 3, 2), low=0.0, high=0.99)), id="unbatched")
    yield Case(dict(self=g.distinct((2, 3, 6, 6)), kernel_size=[2, 2], output_size=[1, 5],
                    random_samples=g.tensor((2, 3, 2), low=0.0, high=0.99)), id="output-1")
    yield Case(dict(self=g.distinct((2, 3, 9, 10)), kernel_size=[2, 2], output_size=[4, 5],
                    random_samples=g.tensor((1, 3, 2), low=0.0, high=0.99)), error="random_samples",
               id="few-samples")
    yield Case(dict(self=g.distinct((2, 3, 5, 5)), kernel_size=[3, 3], output_size=[4, 4],
                    random_samples=g.tensor((2, 3, 2), low=0.0, high=0.99)), error="kernel_size", id="too-large")
    yield Case(dict(self=g.tensor((0, 3, 6, 6)), kernel_size=[2, 2], output_size=[3, 4],
                    random_samples=g.tensor((0, 3, 2), low=0.0, high=0.99)), id="empty-batch")
    yield Case(dict(self=_cl(g.distinct((2, 3, 9, 10))), kernel_size=[3, 2], output_size=[5, 6],
                    random_samples=g.tensor((4, 3, 2), low=0.0, high=0.99)), id="channels-last-more-samples")
    yield Case(dict(self=g.distinct((2, 3, 9, 10)), kernel_size=[2, 2], output_size=[4, 5],
                    random_samples=g.tensor((2, 4, 2), low=0.0, high=0.99)), error="random_samples",
               id="sample-channels")


@cases("fractional_max_pool3d")
def _fractional_max_pool3d(g):
    for dt in FLOATS:
        shape = (2, 3, 7, 8, 9) if dt not in NARROW else (1, 2, 6, 7, 8)
        x = g.distinct(shape, torch.float64).to(dt)
        u = g.tensor((shape[0], shape[1], 3), dt, low=0.0, high=0.99)
        yield Case(dict(self=x, kernel_size=[2, 2, 3], output_size=[3, 4, 5], random_samples=u), id=str(dt)[6:])
    yield Case(dict(self=g.distinct((3, 6, 7, 8)), kernel_size=[2, 2, 2], output_size=[4, 5, 3],
                    random_samples=g.tensor((1, 3, 3), low=0.0, high=0.99)), id="unbatched")
    yield Case(dict(self=g.distinct((1, 2, 4, 4, 4)), kernel_size=[2, 2, 2], output_size=[3, 3, 3],
                    random_samples=g.tensor((1, 2, 3), low=0.0, high=0.99)), error="kernel_size", id="too-large")
    yield Case(dict(self=_cl3d(g.distinct((2, 3, 7, 8, 9))), kernel_size=[3, 2, 2], output_size=[4, 1, 6],
                    random_samples=g.tensor((2, 3, 3), low=0.0, high=0.99)), id="channels-last-output-1")
    yield Case(dict(self=g.distinct((1, 2, 6, 7, 8)), kernel_size=[2, 2, 2], output_size=[3, 3, 3],
                    random_samples=g.tensor((1, 2, 2), low=0.0, high=0.99)), error="random_samples", id="two-samples")


def _pooled(g, shape, dt, kernel, spatial):
    """A max_pool result and its indices (distinct values, so indices are unique)."""
    x = g.distinct(shape, torch.float64)
    fn = torch.nn.functional.max_pool2d if spatial == 2 else torch.nn.functional.max_pool3d
    y, i = fn(x, kernel, return_indices=True)
    return y.to(dt), i


@cases("max_unpool2d")
def _max_unpool2d(g):
    for dt in FLOATS:
        y, i = _pooled(g, (2, 3, 8, 9), dt, 2, 2)
        yield Case(dict(self=y, indices=i, output_size=[8, 9]), id=str(dt)[6:])
    y, i = _pooled(g, (3, 6, 6), torch.float32, 3, 2)
    yield Case(dict(self=y, indices=i, output_size=[7, 7]), id="unbatched-larger")
    y, i = _pooled(g, (2, 5, 6, 6), torch.float32, 2, 2)
    yield Case(dict(self=_cl(y), indices=_cl(i), output_size=[6, 6]), id="channels-last")
    yield Case(dict(self=y, indices=i + 100, output_size=[6, 6]), error="indices", id="index-out-of-range")
    yield Case(dict(self=y, indices=-i - 1, output_size=[6, 6]), error="indices", id="negative-index")
    yield Case(dict(self=y, indices=i[:1], output_size=[6, 6]), error="indices", id="indices-shape")
    yield Case(dict(self=y, indices=i.int(), output_size=[6, 6]), error="indices", id="indices-dtype")


@cases("max_unpool3d")
def _max_unpool3d(g):
    for dt in FLOATS:
        y, i = _pooled(g, (2, 3, 4, 6, 6), dt, 2, 3)
        yield Case(dict(self=y, indices=i, output_size=[4, 6, 6], stride=[2, 2, 2], padding=[0, 0, 0]),
                   id=str(dt)[6:])
    y, i = _pooled(g, (3, 4, 4, 6), torch.float32, 2, 3)
    yield Case(dict(self=y, indices=i, output_size=[5, 4, 6], stride=[2, 2, 2], padding=[0, 0, 0]), id="unbatched")
    yield Case(dict(self=y, indices=i + 1000, output_size=[5, 4, 6], stride=[2, 2, 2], padding=[0, 0, 0]),
               error="indices", id="index-out-of-range")


# ---------------------------------------------------------------- products

MM = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
MM_TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: {}, torch.bfloat16: dict(rtol=3e-2, atol=3e-2),
          torch.float16: dict(rtol=1e-2, atol=1e-2)}


def _mm_tol(dt):
    return MM_TOL.get(dt, {})


@cases("baddbmm_out")
def _baddbmm(g):
    for dt in MM + (torch.int64, torch.int32, torch.complex64):
        yield Case(dict(out=torch.empty(3, 4, 5, dtype=dt), self=g.tensor((4, 5), dt), batch1=g.tensor((3, 4, 6), dt),
                        batch2=g.tensor((3, 6, 5), dt), beta=0.5 if not dt.is_floating_point and not dt.is_complex else 0.5,
                        alpha=2.0), id=str(dt)[6:], **_mm_tol(dt))
    nan_self = torch.full((3, 4, 5), float("nan"))
    yield Case(dict(out=torch.empty(3, 4, 5), self=nan_self, batch1=g.tensor((3, 4, 6)), batch2=g.tensor((3, 6, 5)),
                    beta=0.0, alpha=1.0), id="beta0-nan-self", rtol=1e-4, atol=1e-4)
    yield Case(dict(out=torch.empty(2, 3, 4), self=g.tensor((2, 1, 4)), batch1=g.tensor((2, 3, 0)),
                    batch2=g.tensor((2, 0, 4)), beta=1.5, alpha=1.0), id="empty-k")
    yield Case(dict(out=torch.empty(3, 4, 5), self=g.tensor((3, 4, 5)), batch1=g.tensor((3, 4, 6)),
                    batch2=g.tensor((3, 7, 5)), beta=1.0, alpha=1.0), error="shape", id="mismatch")
    yield Case(dict(out=torch.empty(3, 4, 5), self=g.tensor((3, 4)), batch1=g.tensor((3, 4, 6)),
                    batch2=g.tensor((3, 6, 5)), beta=1.0, alpha=1.0), error="broadcast", id="bad-self")


@cases("addbmm")
def _addbmm(g):
    for dt in MM + (torch.int64, torch.complex128):
        yield Case(dict(self=g.tensor((4, 5), dt), batch1=g.tensor((3, 4, 6), dt), batch2=g.tensor((3, 6, 5), dt),
                        beta=0.5, alpha=2.0), id=str(dt)[6:], **_mm_tol(dt))
    yield Case(dict(self=g.tensor((5,)), batch1=g.tensor((2, 4, 3)), batch2=g.tensor((2, 3, 5)), beta=1.0, alpha=1.0),
               id="broadcast-self", rtol=1e-4, atol=1e-4)
    yield Case(dict(self=torch.full((4, 5), float("nan")), batch1=g.tensor((2, 4, 3)), batch2=g.tensor((2, 3, 5)),
                    beta=0.0, alpha=1.0), id="beta0-nan-self", rtol=1e-4, atol=1e-4)
    yield Case(dict(self=g.tensor((4, 5)), batch1=g.tensor((0, 4, 3)), batch2=g.tensor((0, 3, 5)), beta=2.0, alpha=1.0),
               id="no-batches")
    yield Case(dict(self=g.tensor((4, 5)), batch1=g.tensor((2, 4, 3)), batch2=g.tensor((3, 3, 5)), beta=1.0,
                    alpha=1.0), error="shape", id="mismatch")


@cases("addmv")
def _addmv(g):
    for dt in MM + (torch.int64, torch.complex64):
        yield Case(dict(self=g.tensor((6,), dt), mat=g.tensor((6, 5), dt), vec=g.tensor((5,), dt), beta=0.5, alpha=2.0),
                   id=str(dt)[6:], **_mm_tol(dt))
    yield Case(dict(self=g.tensor(()), mat=g.tensor((6, 5)), vec=g.tensor((5,)), beta=1.0, alpha=1.0),
               id="scalar-self", rtol=1e-4, atol=1e-4)
    yield Case(dict(self=torch.full((6,), float("nan")), mat=g.tensor((6, 5)), vec=g.tensor((5,)), beta=0.0,
                    alpha=1.0), id="beta0-nan-self", rtol=1e-4, atol=1e-4)
    yield Case(dict(self=g.tensor((3,)), mat=g.tensor((3, 0)), vec=g.tensor((0,)), beta=1.0, alpha=1.0), id="empty-k")
    yield Case(dict(self=g.tensor((6,)), mat=g.tensor((6, 5)), vec=g.tensor((4,)), beta=1.0, alpha=1.0),
               error="shape", id="mismatch")


def _activation_tol(dt, gelu):
    """cuBLASLt's GELU epilogue evaluates the tanh form about 3e-9 (relative) away from a float64
    kernel's; ATen's CUDA kernel and Kiln's may take different routes for the same inputs (ATen
    does not require the bias to be 16-byte aligned, Kiln does), so float64 GELU compares within
    that."""
    return dict(rtol=1e-8, atol=1e-8) if gelu and dt == torch.float64 else _mm_tol(dt)


@cases("_addmm_activation")
def _addmm_activation(g):
    for dt in MM:
        for gelu in (False, True):
            yield Case(dict(self=g.tensor((6,), dt), mat1=g.tensor((4, 5), dt), mat2=g.tensor((5, 6), dt), beta=0.5,
                            alpha=2.0, use_gelu=gelu), id=f"{str(dt)[6:]}-{'gelu' if gelu else 'relu'}",
                       **_activation_tol(dt, gelu))
    # beta 1 and a contiguous bias row, every size above 1: ATen's CUDA kernel adds the bias and applies the
    # activation in cuBLASLt's epilogue (Kiln's too); M = 1 takes addmm and then the activation.
    for dt in MM:
        for gelu in (False, True):
            act = "gelu" if gelu else "relu"
            yield Case(dict(self=g.tensor((24,), dt), mat1=g.tensor((8, 16), dt), mat2=g.tensor((16, 24), dt),
                            beta=1.0, alpha=1.5, use_gelu=gelu), id=f"{str(dt)[6:]}-{act}-bias-epilogue",
                       **_activation_tol(dt, gelu))
            yield Case(dict(self=g.tensor((24,), dt), mat1=g.tensor((1, 16), dt), mat2=g.tensor((16, 24), dt),
                            beta=1.0, alpha=1.0, use_gelu=gelu), id=f"{str(dt)[6:]}-{act}-one-row",
                       **_activation_tol(dt, gelu))
    # self broadcast over rows, over columns, from a scalar, and a full matrix.
    for shape in ((1, 6), (4, 1), (), (4, 6)):
        for gelu in (False, True):
            yield Case(dict(self=g.tensor(shape), mat1=g.tensor((4, 5)), mat2=g.tensor((5, 6)), beta=1.0, alpha=1.0,
                            use_gelu=gelu), id=f"self{list(shape)}-{'gelu' if gelu else 'relu'}", rtol=1e-4, atol=1e-4)
    yield Case(dict(self=g.tensor((4, 6), torch.int64), mat1=g.tensor((4, 5), torch.int64),
                    mat2=g.tensor((5, 6), torch.int64), beta=1.0, alpha=1.0, use_gelu=False), id="int64-relu")
    yield Case(dict(self=torch.full((4, 6), float("nan")), mat1=g.tensor((4, 5)), mat2=g.tensor((5, 6)), beta=0.0,
                    alpha=1.0, use_gelu=False), id="beta0-nan-self", rtol=1e-4, atol=1e-4)
    yield Case(dict(self=g.tensor((6,)), mat1=g.tensor((4, 5)), mat2=g.tensor((4, 6)), beta=1.0, alpha=1.0,
                    use_gelu=True), error="shape", id="mismatch")


def _int8(g, shape):
    return g.tensor(shape, torch.int64, low=-128, high=128).to(torch.int8)


def _int_mm_reference(out, self, mat2):
    # ATen's CPU kernel refuses a non-contiguous out, and its CUDA kernel refuses few rows, sizes that are not
    # multiples of 8 and a non-contiguous out; the product is the same, computed on the host (no int32 matmul on CUDA).
    out.copy_(self.cpu().int() @ mat2.cpu().int())
    return out


@cases("_int_mm_out")
def _int_mm(g):
    yield Case(dict(out=torch.empty(17, 8, dtype=torch.int32), self=_int8(g, (17, 32)), mat2=_int8(g, (32, 8))),
               reference=_int_mm_reference, id="int8")
    yield Case(dict(out=torch.empty(3, 5, dtype=torch.int32), self=_int8(g, (3, 64)), mat2=_int8(g, (64, 5))),
               reference=_int_mm_reference, id="small")
    yield Case(dict(out=torch.empty(4, 6, dtype=torch.int32), self=torch.full((4, 300), 127, dtype=torch.int8),
                    mat2=torch.full((300, 6), -128, dtype=torch.int8)), reference=_int_mm_reference, id="extremes")
    # A linear layer's layout (mat2 = weight.t(), column-major), which cuBLASLt's int8 kernels take.
    yield Case(dict(out=torch.empty(32, 48, dtype=torch.int32), self=_int8(g, (32, 64)), mat2=_int8(g, (48, 64)).t()),
               reference=_int_mm_reference, id="weight-transposed")
    yield Case(dict(out=torch.empty(5, 7, dtype=torch.int32), self=_int8(g, (5, 0)), mat2=_int8(g, (0, 7))),
               reference=_int_mm_reference, id="k0")
    yield Case(dict(out=torch.empty(3, 5, dtype=torch.int32), self=_int8(g, (3, 64)), mat2=_int8(g, (32, 5))),
               error="shape", id="mismatch")
    yield Case(dict(out=torch.empty(3, 5, dtype=torch.int64), self=_int8(g, (3, 64)), mat2=_int8(g, (64, 5))),
               error="out", id="out-dtype")


def _int8pack_reference(self, mat2, scales):
    prod = self.float() @ mat2.float().t()
    return (prod * scales.float()).to(self.dtype)


@cases("_weight_int8pack_mm")
def _weight_int8pack_mm(g):
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        yield Case(dict(self=g.tensor((5, 16), dt), mat2=_int8(g, (7, 16)), scales=g.tensor((7,), dt)),
                   reference=_int8pack_reference, id=str(dt)[6:], **_mm_tol(dt))
    # A decode step (one row), rows of k not a multiple of 4, and more rows than one group of four.
    for m, n, k in ((1, 33, 100), (3, 9, 37), (6, 20, 132)):
        yield Case(dict(self=g.tensor((m, k)), mat2=_int8(g, (n, k)), scales=g.tensor((n,))),
                   reference=_int8pack_reference, id=f"m{m}-n{n}-k{k}", rtol=1e-4, atol=1e-3)
    # Both paths: up to 4 rows stream the int8 rows; from 5 rows on, blocks of widened weight rows go through
    # the GEMM (the small-row kernel up to 8 rows, BLAS beyond), in blocks of up to 128 weight rows.
    for m, n, k, dt in ((4, 130, 96, torch.float32), (5, 130, 96, torch.float32), (8, 40, 70, torch.bfloat16),
                        (9, 300, 64, torch.float16), (2, 70, 200, torch.bfloat16), (300, 768, 1024, torch.float32)):
        yield Case(dict(self=g.tensor((m, k), dt), mat2=_int8(g, (n, k)), scales=g.tensor((n,), dt, low=0.001, high=0.01)),
                   reference=_int8pack_reference, id=f"m{m}-n{n}-k{k}-{str(dt)[6:]}",
                   **(dict(rtol=1e-4, atol=1e-3) if dt == torch.float32 else _mm_tol(dt)))
    # The weight as a transposed view (unit stride along N, not K), both paths.
    for m in (1, 6):
        yield Case(dict(self=g.tensor((m, 48)), mat2=_int8(g, (48, 33)).t(), scales=g.tensor((33,))),
                   reference=_int8pack_reference, id=f"mat2-transposed-m{m}", rtol=1e-4, atol=1e-3)
    yield Case(dict(self=g.tensor((5, 16)), mat2=_int8(g, (7, 8)), scales=g.tensor((7,))), error="mat2", id="mismatch")
    yield Case(dict(self=g.tensor((5, 16)), mat2=_int8(g, (7, 16)), scales=g.tensor((6,))), error="scales",
               id="bad-scales")


def _int4_codes_to_bytes(codes):
    """int4 codes [n, k] (0..15) as _convert_weight_to_int4pack's input, uint8 [n, k / 2]: each byte holds
    an even k in its high nibble and the next k in its low one."""
    return ((codes[:, ::2] << 4) | codes[:, 1::2]).to(torch.uint8)


def _int4pack_args(g, m, k, n, group, inner_k_tiles):
    """_weight_int4pack_mm's arguments: bfloat16 activations, random int4 codes tile-packed by ATen's own
    CUDA _convert_weight_to_int4pack (its layout is defined by that kernel, so it runs on the GPU even
    while cases are built on the host), and bfloat16 (scale, zero) per group of k and column."""
    codes = torch.randint(0, 16, (n, k), generator=g.g, dtype=torch.int32)
    packed = torch.ops.aten._convert_weight_to_int4pack(_int4_codes_to_bytes(codes).cuda(), inner_k_tiles).cpu()
    scales = g.tensor((k // group, n), low=0.02, high=0.1)
    zeros = g.tensor((k // group, n), low=-0.5, high=0.5)
    return dict(self=g.tensor((m, k), torch.bfloat16), mat2=packed, qGroupSize=group,
                qScaleAndZeros=torch.stack([scales, zeros], dim=2).to(torch.bfloat16))


def _int4pack_reference(self, mat2, qGroupSize, qScaleAndZeros):
    # ATen's CUDA kernel needs a contiguous self and mat2 with aligned data (it loads 4 to 16 bytes at a
    # time) and reads qScaleAndZeros as contiguous, and fails to launch for an empty self: dense copies
    # of the strided and offset layouts, and the empty result, are the reference.
    if self.shape[0] == 0:
        return torch.empty(0, mat2.shape[0] * 8, dtype=torch.bfloat16, device=self.device)
    dense = lambda t: t.clone(memory_format=torch.contiguous_format)  # noqa: E731
    return torch.ops.aten._weight_int4pack_mm(dense(self), dense(mat2), qGroupSize, dense(qScaleAndZeros))


@cases("_weight_int4pack_mm")
def _weight_int4pack_mm(g):
    # Only c_shim_cuda.h declares the op (the CPU's int4 product packs its weight differently), and its
    # packed weight comes from ATen's CUDA kernel: without a GPU there are no cases to build.
    if not torch.cuda.is_available():
        return
    # Every inner k-tile count with every group size, over decode row counts (1, 3: the kernel reading
    # the packed weight, one pass of its four rows) and prefill ones (17, 64: the weight dequantized to
    # bfloat16 blocks for cuBLASLt), and k and n from one tile up.
    ms, ks, ns = (1, 3, 17, 64), (128, 256, 1024), (8, 64, 256)
    i = 0
    for inner in (2, 4, 8):
        for group in (32, 64, 128):
            m, k, n = ms[i % 4], ks[i % 3], ns[(i // 3) % 3]
            i += 1
            yield Case(_int4pack_args(g, m, k, n, group, inner), reference=_int4pack_reference,
                       id=f"m{m}-k{k}-n{n}-g{group}-tiles{inner}")
    yield Case(_int4pack_args(g, 1, 1024, 256, 256, 8), reference=_int4pack_reference, id="decode-g256")
    yield Case(_int4pack_args(g, 5, 256, 64, 64, 4), reference=_int4pack_reference, id="rows-past-one-pass")
    yield Case(_int4pack_args(g, 0, 128, 16, 32, 2), reference=_int4pack_reference, id="empty")
    args = _int4pack_args(g, 2, 128, 16, 64, 2)
    args["qScaleAndZeros"] = torch.cat([args["qScaleAndZeros"], g.tensor((1, 16, 2), torch.bfloat16)])
    yield Case(args, reference=_int4pack_reference, id="extra-groups")

    ok = _int4pack_args(g, 2, 128, 16, 64, 4)
    yield Case(dict(ok, self=ok["self"].float()), error="'self' has dtype float32, expected bfloat16",
               id="float32-self")
    yield Case(dict(ok, qGroupSize=16), error="qGroupSize is 16", id="group-16")
    yield Case(dict(ok, self=g.tensor((2, 256), torch.bfloat16)), error="which packs k = 128", id="k-mismatch")
    yield Case(dict(ok, mat2=ok["mat2"].reshape(2, 2, 64)), error="must be 4-d", id="mat2-3d")
    yield Case(dict(ok, mat2=ok["mat2"].to(torch.int64)), error="'mat2' has dtype int64",
               id="mat2-int64")
    yield Case(dict(ok, qScaleAndZeros=ok["qScaleAndZeros"][:, :8]), error="'qScaleAndZeros' has shape",
               id="scales-n")
    yield Case(dict(ok, qScaleAndZeros=ok["qScaleAndZeros"].float()), error="'qScaleAndZeros' has dtype float32",
               id="scales-float32")
    odd = _int4pack_args(g, 2, 96, 8, 32, 2)
    yield Case(dict(odd, qGroupSize=64), error="not a multiple of qGroupSize 64", id="k-not-groups")

def _int4pack_cpu_args(g, m, k, n, group, dt=torch.float32):
    """_weight_int4pack_mm_cpu_tensor's arguments, named as the shim names them: activations, random
    int4 codes packed by ATen's own _convert_weight_to_int4pack_for_cpu, (scale, zero) per group of k
    and column in the activations' dtype, and the group size as a 0-d int64 tensor."""
    codes = torch.randint(0, 16, (n, k), generator=g.g, dtype=torch.int32)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 2)
    scales = g.tensor((k // group, n), low=0.02, high=0.1)
    zeros = g.tensor((k // group, n), low=-0.5, high=0.5)
    return dict(X=g.tensor((m, k), dt), w=packed, qGroupSize=torch.tensor(group),
                qScaleAndZeros=torch.stack([scales, zeros], dim=2).to(dt))


def _int4pack_cpu_reference(self, mat2, qGroupSize, qScaleAndZeros):
    # ATen's CPU kernel takes contiguous operands only (and reads qScaleAndZeros as contiguous):
    # dense copies of the strided and offset layouts are the reference.
    dense = lambda t: t.clone(memory_format=torch.contiguous_format)  # noqa: E731
    return torch.ops.quantized.int4mm_packed_weight_cpu(dense(self), dense(mat2), dense(qGroupSize),
                                                        dense(qScaleAndZeros))


@cases("_weight_int4pack_mm_cpu_tensor")
def _weight_int4pack_mm_cpu_tensor(g):
    # What Inductor calls for aten._weight_int4pack_mm_for_cpu (torchao's int4 weight-only layout on the CPU).
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        yield Case(_int4pack_cpu_args(g, 3, 128, 64, 32, dt), reference=_int4pack_cpu_reference, id=str(dt)[6:],
                   **(dict(rtol=1e-4, atol=1e-4) if dt == torch.float32 else _mm_tol(dt)))
    # Packed blocks of 64 columns and the last, shorter block (16, 32, 48 columns) with every group size,
    # over decode rows (up to 4: dot products) and prefill ones (the small-row kernel, then the GEMM).
    for m, k, n, group in ((1, 256, 80, 64), (2, 512, 112, 128), (4, 256, 32, 256), (5, 128, 144, 32),
                           (9, 256, 192, 64), (37, 256, 64, 32)):
        yield Case(_int4pack_cpu_args(g, m, k, n, group), reference=_int4pack_cpu_reference,
                   id=f"m{m}-k{k}-n{n}-g{group}", rtol=1e-4, atol=1e-4)
    yield Case(_int4pack_cpu_args(g, 0, 128, 16, 32), reference=_int4pack_cpu_reference, id="empty")
    ok = _int4pack_cpu_args(g, 2, 128, 32, 64)
    yield Case(dict(ok, qGroupSize=torch.tensor(16)), error="qGroupSize is 16", id="group-16")
    yield Case(dict(ok, qGroupSize=torch.tensor(64, dtype=torch.int32)), error="'qGroupSize' has dtype int32",
               id="group-int32")
    yield Case(dict(ok, X=g.tensor((2, 256))), error="which packs K = 128", id="k-mismatch")
    yield Case(dict(ok, X=g.tensor((1, 2, 128))), error="must be 2-d", id="x-3d")
    yield Case(dict(ok, X=g.tensor((2, 128), torch.float64)), error="'X' has dtype float64", id="x-float64")
    yield Case(dict(ok, w=ok["w"].to(torch.int32)), error="'w' has dtype int32", id="w-int32")
    yield Case(dict(ok, w=torch.zeros(24, 64, dtype=torch.uint8)), error="a multiple of 16", id="n-24")
    yield Case(dict(ok, qScaleAndZeros=ok["qScaleAndZeros"][:1]), error="'qScaleAndZeros' has shape",
               id="scales-groups")
    yield Case(dict(ok, qScaleAndZeros=ok["qScaleAndZeros"].to(torch.bfloat16)),
               error="'qScaleAndZeros' has dtype bfloat16", id="scales-dtype")



@cases("_fused_rms_norm")
def _fused_rms_norm(g):
    for dt in FLOATS:
        yield Case(dict(input=g.tensor((2, 3, 8), dt), normalized_shape=[8], weight=g.tensor((8,), dt), eps=1e-5),
                   id=str(dt)[6:], **_tol(dt, dict(rtol=2e-2, atol=2e-2)))
    yield Case(dict(input=g.tensor((4, 3, 5)), normalized_shape=[3, 5], weight=None, eps=None), id="2-dims-no-weight")
    yield Case(dict(input=g.tensor((4, 6), torch.float64) * 1e-5, normalized_shape=[6], weight=None, eps=None),
               id="default-eps-float64")
    yield Case(dict(input=g.tensor((4, 6), torch.bfloat16) * 0.01, normalized_shape=[6], weight=None, eps=None),
               id="default-eps-bfloat16", rtol=2e-2, atol=2e-2)
    yield Case(dict(input=g.tensor((6,)), normalized_shape=[6], weight=g.tensor((6,)), eps=1e-6), id="1d")
    yield Case(dict(input=g.tensor((0, 6)), normalized_shape=[6], weight=None, eps=1e-6), id="empty")
    # Rows longer than a warp handles on CUDA (a block per row there).
    yield Case(dict(input=g.tensor((3, 1500)), normalized_shape=[1500], weight=g.tensor((1500,)), eps=1e-6),
               id="long-rows", rtol=1e-4, atol=1e-4)
    yield Case(dict(input=g.tensor((4, 6)), normalized_shape=[5], weight=None, eps=1e-6), error="normalized_shape",
               id="bad-shape")
    yield Case(dict(input=g.tensor((4, 6)), normalized_shape=[6], weight=g.tensor((5,)), eps=1e-6), error="weight",
               id="bad-weight")


@cases("_cdist_forward")
def _cdist(g):
    for dt in (torch.float32, torch.float64):
        for p in (0.0, 1.0, 2.0, 3.5, float("inf")):
            a = g.tensor((5, 4), dt)
            b = g.tensor((6, 4), dt)
            if p == 0.0:
                a, b = a.round(), b.round()
            yield Case(dict(x1=a, x2=b, p=p, compute_mode=None), id=f"{str(dt)[6:]}-p{p}", rtol=1e-4, atol=1e-4)
    for mode in (None, 0, 1, 2):
        yield Case(dict(x1=g.tensor((2, 30, 4)), x2=g.tensor((2, 7, 4)), p=2.0, compute_mode=mode),
                   id=f"mm-mode{mode}", rtol=1e-4, atol=1e-4)
    yield Case(dict(x1=g.tensor((3, 5, 4), torch.float64), x2=g.tensor((3, 6, 4), torch.float64), p=2.0,
                    compute_mode=1), id="mm-float64")
    yield Case(dict(x1=g.tensor((2, 1, 3, 5)), x2=g.tensor((4, 6, 5)), p=1.0, compute_mode=None),
               id="broadcast-batch", rtol=1e-4, atol=1e-4)
    yield Case(dict(x1=g.tensor((0, 5)), x2=g.tensor((6, 5)), p=2.0, compute_mode=None), id="empty-rows")
    yield Case(dict(x1=g.tensor((3, 0)), x2=g.tensor((6, 0)), p=2.0, compute_mode=None), id="empty-cols")
    yield Case(dict(x1=g.tensor((3, 4)), x2=g.tensor((6, 5)), p=2.0, compute_mode=None), error="columns",
               id="mismatch")
    yield Case(dict(x1=g.tensor((3, 4)), x2=g.tensor((6, 4)), p=-1.0, compute_mode=None), error="'p'", id="negative-p")
    yield Case(dict(x1=g.tensor((3, 4), torch.int64), x2=g.tensor((6, 4), torch.int64), p=2.0, compute_mode=None),
               error="dtype", id="int")


def _pdist_reference(self, p):
    # ATen's CPU kernel refuses a non-contiguous input; the distances are the same.
    return torch.ops.aten._pdist_forward(self.contiguous(), p)


@cases("_pdist_forward")
def _pdist(g):
    for dt in (torch.float32, torch.float64):
        for p in (0.0, 1.0, 2.0, 0.5, float("inf")):
            x = g.tensor((6, 3), dt)
            if p == 0.0:
                x = x.round()
            yield Case(dict(self=x, p=p), id=f"{str(dt)[6:]}-p{p}", rtol=1e-4, atol=1e-4, reference=_pdist_reference)
    yield Case(dict(self=g.tensor((1, 3)), p=2.0), id="one-row", reference=_pdist_reference)
    yield Case(dict(self=g.tensor((4, 0)), p=2.0), id="no-cols")
    yield Case(dict(self=g.tensor((2, 3, 4)), p=2.0), error="2-d", id="bad-rank")


@cases("_trilinear")
def _trilinear(g):
    # nn.Bilinear: out[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j].
    for dt in FLOATS + (torch.int64, torch.complex64):
        yield Case(dict(i1=g.tensor((3, 4), dt), i2=g.tensor((5, 4, 6), dt), i3=g.tensor((3, 6), dt),
                        expand1=[1, 3], expand2=[0], expand3=[1, 2], sumdim=[2, 3], unroll_dim=1), id=str(dt)[6:],
                   **_tol(dt, dict(rtol=3e-2, atol=5e-2), dict(rtol=1e-4, atol=1e-4) if dt == torch.float32 else None))
    yield Case(dict(i1=g.tensor((3, 4)), i2=g.tensor((5, 4, 6)), i3=g.tensor((3, 6)), expand1=[1, 3], expand2=[0],
                    expand3=[1, 2], sumdim=[], unroll_dim=0), id="no-sum")
    yield Case(dict(i1=g.tensor((3, 1)), i2=g.tensor((5, 4, 6)), i3=g.tensor((3, 6)), expand1=[1, 3], expand2=[0],
                    expand3=[1, 2], sumdim=[3], unroll_dim=1), id="broadcast", rtol=1e-4, atol=1e-4)
    yield Case(dict(i1=g.tensor((3, 4)), i2=g.tensor((5, 4, 6)), i3=g.tensor((3, 6)), expand1=[1, 3], expand2=[0],
                    expand3=[1, 2], sumdim=[-1, -2], unroll_dim=1), id="negative-dims", rtol=1e-4, atol=1e-4)
    yield Case(dict(i1=g.tensor((3, 4)), i2=g.tensor((5, 3, 6)), i3=g.tensor((3, 6)), expand1=[1, 3], expand2=[0],
                    expand3=[1, 2], sumdim=[2, 3], unroll_dim=1), error="broadcast", id="mismatch")
    yield Case(dict(i1=g.tensor((3, 4)), i2=g.tensor((5, 4, 6)), i3=g.tensor((3, 6)), expand1=[1, 3], expand2=[0],
                    expand3=[1, 2], sumdim=[4], unroll_dim=1), error="sumdim", id="bad-sumdim")
    yield Case(dict(i1=g.tensor((3, 4)), i2=g.tensor((5, 4, 6)), i3=g.tensor((3, 6)), expand1=[1, 3], expand2=[0],
                    expand3=[1, 2], sumdim=[2, 3], unroll_dim=4), error="unroll_dim", id="bad-unroll-dim")
    yield Case(dict(i1=g.tensor((3, 4)), i2=g.tensor((5, 4, 6)), i3=g.tensor((6, 6))[::2], expand1=[1, 3],
                    expand2=[0], expand3=[1, 2], sumdim=[2, 3], unroll_dim=0), id="sliced", rtol=1e-4, atol=1e-4)
    yield Case(dict(i1=g.tensor((4, 3)).t(), i2=g.tensor((5, 4, 70)), i3=g.tensor((70, 3)).t(), expand1=[1, 3],
                    expand2=[0], expand3=[1, 2], sumdim=[2, 3], unroll_dim=1), id="transposed-long-sum",
               rtol=1e-4, atol=1e-3)
    yield Case(dict(i1=g.tensor((3, 4), torch.float16), i2=g.tensor((5, 4, 6), torch.float16),
                    i3=g.tensor((3, 6), torch.float16), expand1=[1, 3], expand2=[0], expand3=[1, 2], sumdim=[],
                    unroll_dim=2), id="no-sum-float16", rtol=1e-2, atol=1e-2)
