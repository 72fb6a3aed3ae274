"""Linear algebra: cholesky_inverse, cholesky_solve, triangular_solve, geqrf, ormqr, lu_unpack,
_dyn_quant_pack_4bit_weight / _dyn_quant_matmul_4bit, _scaled_mm / _scaled_mm.out,
_scaled_grouped_mm (CUDA only)."""

import torch

from op_case import Case, cases

LAPACK_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)
aten = torch.ops.aten


def _name(dt):
    return str(dt)[6:]


def _tol(dt):
    # LAPACK in single precision (ATen's MKL and Kiln's OpenBLAS round differently).
    return dict(rtol=1e-4, atol=1e-5) if dt in (torch.float32, torch.complex64) else {}


def _spd_factor(g, batch, n, dt, upper=False):
    """A well-conditioned Cholesky factor (L, or U = L^H when upper)."""
    wide = torch.complex128 if dt.is_complex else torch.float64
    x = g.tensor(tuple(batch) + (n, n), wide)
    a = x @ x.mH + n * torch.eye(n, dtype=wide)
    f = torch.linalg.cholesky(a)
    return (f.mH if upper else f).contiguous().to(dt)


def _triangular(g, batch, n, dt):
    """A full matrix whose triangles are each well-conditioned (diagonal in [1.5, 2.5])."""
    wide = torch.complex128 if dt.is_complex else torch.float64
    a = g.tensor(tuple(batch) + (n, n), wide) * 0.3
    d = torch.diagonal(a, dim1=-2, dim2=-1)
    d.copy_(g.tensor(tuple(batch) + (n,), torch.float64, low=1.5, high=2.5).to(wide))
    return a.to(dt)


def _singular_inverse(kwargs, got):
    # ATen's CUDA kernel solves against the identity without checking the factor (cuSOLVER's potrs and
    # cuBLAS's trsm report no singularity): a factor with a zero on its diagonal gives a matrix with
    # infinities or NaNs, every other one its inverse.
    factor, result = kwargs["self"], got[0]
    flat_f = factor.reshape(-1, *factor.shape[-2:])
    flat_r = result.reshape(-1, *result.shape[-2:])
    for f, r in zip(flat_f, flat_r):
        if (torch.diagonal(f) == 0).any():
            assert not torch.isfinite(r).all(), f"a singular factor gave a finite inverse {r}"
        else:
            torch.testing.assert_close(r, torch.cholesky_inverse(f, upper=kwargs["upper"]))


@cases("cholesky_inverse")
def _cholesky_inverse(g):
    for dt in LAPACK_DTYPES:
        for upper in (False, True):
            yield Case(dict(self=_spd_factor(g, (), 4, dt, upper), upper=upper), id=f"{_name(dt)}-upper{int(upper)}",
                       **_tol(dt))
    yield Case(dict(self=_spd_factor(g, (2, 3), 3, torch.float64), upper=False), id="batched")
    yield Case(dict(self=_spd_factor(g, (2,), 5, torch.complex128, True), upper=True), id="batched-complex")
    yield Case(dict(self=torch.empty(0, 0), upper=False), id="empty")
    yield Case(dict(self=torch.empty(0, 3, 3), upper=False), id="empty-batch")
    yield Case(dict(self=torch.empty(2, 0, 0, dtype=torch.float64), upper=True), id="empty-matrices")
    yield Case(dict(self=torch.tensor([[1.0, 0.0], [0.5, -2.0]], dtype=torch.float64), upper=False),
               id="negative-diagonal")
    yield Case(dict(self=torch.diag(torch.tensor([1.0, 0.0, 2.0])), upper=False), error="diagonal element 2 is zero",
               without_readback=_singular_inverse, id="singular")
    yield Case(dict(self=torch.stack([torch.eye(2), torch.diag(torch.tensor([1.0, 0.0]))]), upper=True),
               error="(Batch element 1): The diagonal element 2 is zero", without_readback=_singular_inverse,
               id="singular-batched")
    yield Case(dict(self=g.tensor((3, 4)), upper=False), error="square", id="not-square")
    yield Case(dict(self=g.tensor((3,)), upper=False), error="at least 2 dimensions", id="1d")
    yield Case(dict(self=torch.eye(3, dtype=torch.float16), upper=False), error="dtype float16", id="float16")
    yield Case(dict(self=torch.eye(3, dtype=torch.int32), upper=False), error="dtype int32", id="int32")


@cases("cholesky_solve")
def _cholesky_solve(g):
    for dt in LAPACK_DTYPES:
        for upper in (False, True):
            yield Case(dict(self=g.tensor((4, 3), dt), input2=_spd_factor(g, (), 4, dt, upper), upper=upper),
                       id=f"{_name(dt)}-upper{int(upper)}", **_tol(dt))
    yield Case(dict(self=g.tensor((2, 1, 3, 2), torch.float64), input2=_spd_factor(g, (4,), 3, torch.float64),
                    upper=False), id="broadcast")
    yield Case(dict(self=g.tensor((3, 2), torch.float64), input2=_spd_factor(g, (2,), 3, torch.float64), upper=True),
               id="broadcast-rhs")
    # A batch takes another path on CUDA (two triangular solves, the second conjugate-transposed).
    yield Case(dict(self=g.tensor((2, 3, 2), torch.complex64), input2=_spd_factor(g, (2,), 3, torch.complex64, True),
                    upper=True), id="batched-complex-upper", **_tol(torch.complex64))
    yield Case(dict(self=torch.empty(3, 0), input2=_spd_factor(g, (), 3, torch.float32), upper=False), id="no-rhs")
    yield Case(dict(self=torch.empty(0, 2), input2=torch.empty(0, 0), upper=False), id="empty")
    yield Case(dict(self=g.tensor((3, 2)), input2=torch.diag(torch.tensor([1.0, 0.0, 2.0])), upper=False),
               id="singular-nan")
    yield Case(dict(self=g.tensor((4, 2)), input2=_spd_factor(g, (), 3, torch.float32), upper=False),
               error="incompatible matrix sizes", id="mismatch")
    yield Case(dict(self=g.tensor((3, 2)), input2=_spd_factor(g, (), 3, torch.float64), upper=False),
               error="must match", id="dtype-mismatch")
    yield Case(dict(self=g.tensor((2, 3, 2)), input2=_spd_factor(g, (4,), 3, torch.float32), upper=False),
               error="cannot be broadcast", id="bad-batch")
    yield Case(dict(self=g.tensor((3,)), input2=_spd_factor(g, (), 3, torch.float32), upper=False),
               error="at least 2 dimensions", id="1d")
    yield Case(dict(self=g.tensor((3, 2)), input2=g.tensor((3, 4)), upper=False), error="square", id="not-square")
    yield Case(dict(self=g.tensor((3, 2), torch.bfloat16), input2=torch.eye(3, dtype=torch.bfloat16), upper=False),
               error="dtype bfloat16", id="bfloat16")


@cases("triangular_solve")
def _triangular_solve(g):
    for upper in (False, True):
        for transpose in (False, True):
            for unit in (False, True):
                yield Case(dict(self=g.tensor((4, 3), torch.float64), A=_triangular(g, (), 4, torch.float64),
                                upper=upper, transpose=transpose, unitriangular=unit),
                           id=f"float64-u{int(upper)}t{int(transpose)}d{int(unit)}")
    for dt in (torch.float32, torch.complex64, torch.complex128):
        for transpose in (False, True):
            yield Case(dict(self=g.tensor((3, 2), dt), A=_triangular(g, (), 3, dt), upper=True, transpose=transpose,
                            unitriangular=False), id=f"{_name(dt)}-t{int(transpose)}", **_tol(dt))
    yield Case(dict(self=g.tensor((2, 1, 3, 2), torch.float64), A=_triangular(g, (4,), 3, torch.float64), upper=False,
                    transpose=False, unitriangular=False), id="broadcast")
    yield Case(dict(self=g.tensor((3, 2), torch.float64), A=_triangular(g, (4,), 3, torch.float64), upper=True,
                    transpose=True, unitriangular=False), id="broadcast-rhs")
    yield Case(dict(self=g.tensor((2, 3, 2), torch.complex128), A=_triangular(g, (2,), 3, torch.complex128), upper=False,
                    transpose=True, unitriangular=True), id="batched-complex")
    yield Case(dict(self=torch.empty(0, 2), A=torch.empty(0, 0), upper=True, transpose=False, unitriangular=False),
               id="empty")
    yield Case(dict(self=torch.empty(3, 0), A=_triangular(g, (), 3, torch.float32), upper=True, transpose=False,
                    unitriangular=False), id="no-rhs")
    yield Case(dict(self=g.tensor((3, 2)), A=torch.diag(torch.tensor([1.0, 0.0, 2.0])), upper=False, transpose=False,
                    unitriangular=False), id="singular-inf")
    yield Case(dict(self=g.tensor((4, 2)), A=_triangular(g, (), 3, torch.float32), upper=True, transpose=False,
                    unitriangular=False), error="incompatible matrix sizes", id="mismatch")
    yield Case(dict(self=g.tensor((3, 2)), A=_triangular(g, (), 3, torch.float64), upper=True, transpose=False,
                    unitriangular=False), error="must match", id="dtype-mismatch")
    yield Case(dict(self=g.tensor((3, 2)), A=g.tensor((3, 4)), upper=True, transpose=False, unitriangular=False),
               error="square", id="not-square")
    yield Case(dict(self=g.tensor((3, 2), torch.float16), A=torch.eye(3, dtype=torch.float16), upper=True,
                    transpose=False, unitriangular=False), error="dtype float16", id="float16")


@cases("geqrf")
def _geqrf(g):
    for dt in LAPACK_DTYPES:
        yield Case(dict(self=g.tensor((5, 3), dt)), id=f"{_name(dt)}-tall", **_tol(dt))
        yield Case(dict(self=g.tensor((3, 5), dt)), id=f"{_name(dt)}-wide", **_tol(dt))
    yield Case(dict(self=g.tensor((2, 3, 4, 4), torch.float64)), id="batched")
    yield Case(dict(self=g.tensor((40, 37), torch.float64)), id="blocked")
    yield Case(dict(self=torch.empty(0, 5)), id="empty-rows")
    yield Case(dict(self=torch.empty(0, 3, 3, dtype=torch.float64)), id="empty-batch")
    yield Case(dict(self=g.tensor((5,))), error="at least 2 dimensions", id="1d")
    yield Case(dict(self=g.tensor((3, 3), torch.int32)), error="dtype int32", id="int32")


def _qr(g, shape, dt):
    a, tau = torch.geqrf(g.tensor(shape, dt))
    return a.contiguous(), tau


@cases("ormqr")
def _ormqr(g):
    for dt in LAPACK_DTYPES:
        for left in (True, False):
            for transpose in (False, True):
                a, tau = _qr(g, (4, 3), dt)
                other = g.tensor((4, 5) if left else (5, 4), dt)
                yield Case(dict(self=a, input2=tau, input3=other, left=left, transpose=transpose),
                           id=f"{_name(dt)}-l{int(left)}t{int(transpose)}", **_tol(dt))
    a, tau = _qr(g, (2, 5, 3), torch.float64)
    yield Case(dict(self=a, input2=tau, input3=g.tensor((2, 5, 2), torch.float64), left=True, transpose=True),
               id="batched")
    a, tau = _qr(g, (4, 6), torch.float64)
    yield Case(dict(self=a, input2=tau, input3=g.tensor((4, 5), torch.float64), left=True, transpose=False),
               id="wide-reflectors")
    yield Case(dict(self=torch.empty(4, 0), input2=torch.empty(0), input3=g.tensor((4, 5)), left=True,
                    transpose=False), id="no-reflectors")
    yield Case(dict(self=torch.empty(0, 0), input2=torch.empty(0), input3=torch.empty(0, 5), left=True,
                    transpose=False), id="empty")
    a, tau = _qr(g, (4, 3), torch.float32)
    yield Case(dict(self=a, input2=tau, input3=g.tensor((3, 5)), left=True, transpose=False),
               error="must be equal to self.shape[-2]", id="rows-mismatch")
    yield Case(dict(self=a, input2=tau[:2], input3=g.tensor((4, 5)), left=True, transpose=False),
               error="tau.shape[-1]", id="tau-length")
    yield Case(dict(self=a, input2=tau, input3=g.tensor((2, 4, 5)), left=True, transpose=False),
               error="as many dimensions", id="other-rank")
    yield Case(dict(self=a, input2=tau, input3=g.tensor((4, 5), torch.float64), left=True, transpose=False),
               error="same dtype", id="dtype-mismatch")
    a, tau = _qr(g, (2, 4, 3), torch.float32)
    yield Case(dict(self=a, input2=tau[:1], input3=g.tensor((2, 4, 5)), left=True, transpose=False),
               error="batch dimensions of tau", id="tau-batch")


def _lu_reference(LU_data, LU_pivots, unpack_data, unpack_pivots):
    # ATen's kernel requires contiguous pivots; the values are what matter.
    return aten.lu_unpack(LU_data, LU_pivots.contiguous(), unpack_data, unpack_pivots)


@cases("lu_unpack")
def _lu_unpack(g):
    for shape in ((4, 4), (5, 3), (3, 5), (2, 3, 4, 4)):
        lu, piv = torch.linalg.lu_factor(g.tensor(shape, torch.float64))
        yield Case(dict(LU_data=lu, LU_pivots=piv, unpack_data=True, unpack_pivots=True),
                   reference=_lu_reference, id=f"{'x'.join(map(str, shape))}")
    lu, piv = torch.linalg.lu_factor(g.tensor((2, 4, 3), torch.float32))
    for data, pivots in ((False, True), (True, False), (False, False)):
        yield Case(dict(LU_data=lu, LU_pivots=piv, unpack_data=data, unpack_pivots=pivots),
                   reference=_lu_reference, id=f"data{int(data)}-pivots{int(pivots)}")
    # ATen broadcasts these wrongly (identity P for every batch element but the first); Kiln refuses.
    yield Case(dict(LU_data=lu, LU_pivots=piv[0], unpack_data=True, unpack_pivots=True),
               error="batch dimensions of 'LU_pivots'", id="pivots-broadcast")
    piv4 = torch.tensor([[3, 3, 4], [2, 4, 3]], dtype=torch.int32)
    for dt in (torch.float16, torch.bfloat16, torch.complex64, torch.int32, torch.int64, torch.uint8, torch.bool):
        yield Case(dict(LU_data=g.tensor((2, 4, 3), dt), LU_pivots=piv4, unpack_data=True, unpack_pivots=True),
                   reference=_lu_reference, id=_name(dt))
    yield Case(dict(LU_data=torch.empty(0, 3, 3), LU_pivots=torch.empty(0, 3, dtype=torch.int32), unpack_data=True,
                    unpack_pivots=True), reference=_lu_reference, id="empty-batch")
    yield Case(dict(LU_data=torch.empty(2, 0, 3), LU_pivots=torch.empty(2, 0, dtype=torch.int32), unpack_data=True,
                    unpack_pivots=True), reference=_lu_reference, id="empty-rows")
    bad = torch.tensor([[5, 1, 1], [1, 1, 1]], dtype=torch.int32)
    yield Case(dict(LU_data=g.tensor((2, 4, 3)), LU_pivots=bad, unpack_data=True, unpack_pivots=True),
               error="outside [1, 4]", id="pivot-too-large")
    yield Case(dict(LU_data=g.tensor((2, 4, 3)), LU_pivots=bad - 5, unpack_data=True, unpack_pivots=True),
               error="outside [1, 4]", id="pivot-negative")
    yield Case(dict(LU_data=g.tensor((2, 4, 3)), LU_pivots=piv4.long(), unpack_data=True, unpack_pivots=True),
               error="expected int32", id="int64-pivots")
    yield Case(dict(LU_data=g.tensor((2, 4, 3)), LU_pivots=piv4[:, :2], unpack_data=True, unpack_pivots=True),
               error="min(m, n) = 3", id="pivots-length")
    yield Case(dict(LU_data=g.tensor((4,)), LU_pivots=piv4[0], unpack_data=True, unpack_pivots=True),
               error="at least 2 dimensions", id="1d")


def _int4_weights(g, n, k, block_size, bias):
    w = torch.randint(0, 256, (n, k // 2), generator=g.g, dtype=torch.int64).to(torch.uint8)
    scales = g.tensor((n, k // block_size), torch.float32, low=0.01, high=0.1)
    b = g.tensor((n,), torch.float32) if bias else None
    return w, scales, b


@cases("_dyn_quant_pack_4bit_weight")
def _dyn_quant_pack(g):
    for n, k, bs, bias in ((8, 64, 32, False), (4, 64, 64, True), (6, 96, 32, True), (3, 10, 10, False)):
        w, s, b = _int4_weights(g, n, k, bs, bias)
        yield Case(dict(weights=w, scales_zeros=s, bias=b, block_size=bs, in_features=k, out_features=n),
                   id=f"n{n}k{k}bs{bs}{'-bias' if bias else ''}")
    w, s, b = _int4_weights(g, 4, 64, 32, True)
    yield Case(dict(weights=w, scales_zeros=s.to(torch.bfloat16), bias=b.double(), block_size=32, in_features=64,
                    out_features=4), id="bf16-scales")
    yield Case(dict(weights=w, scales_zeros=s, bias=None, block_size=48, in_features=64, out_features=4),
               error="multiple of 32", id="bad-block")
    yield Case(dict(weights=w, scales_zeros=s, bias=None, block_size=0, in_features=64, out_features=4),
               error="multiple of 32", id="zero-block")
    yield Case(dict(weights=w.to(torch.int32), scales_zeros=s, bias=None, block_size=32, in_features=64,
                    out_features=4), error="expected uint8", id="int32-weights")


def _matmul_reference(inp, packed_weights, block_size, in_features, out_features):
    # ATen's reference kernel reads inp and the packed tensor as dense memory; contiguous copies give
    # what it computes for every layout.
    return aten._dyn_quant_matmul_4bit(inp.contiguous(), packed_weights.contiguous(), block_size, in_features,
                                       out_features)


@cases("_dyn_quant_matmul_4bit")
def _dyn_quant_matmul(g):
    for m, n, k, bs, bias in ((3, 8, 64, 32, False), (5, 4, 64, 64, True), (2, 6, 96, 32, True),
                              (4, 3, 10, 10, False), (1, 16, 128, 64, True)):
        w, s, b = _int4_weights(g, n, k, bs, bias)
        packed = aten._dyn_quant_pack_4bit_weight(w, s, b, bs, k, n)
        yield Case(dict(inp=g.tensor((m, k)), packed_weights=packed, block_size=bs, in_features=k, out_features=n),
                   reference=_matmul_reference, rtol=1e-5, atol=1e-4, id=f"m{m}n{n}k{k}bs{bs}{'-bias' if bias else ''}")
    w, s, b = _int4_weights(g, 4, 64, 32, False)
    packed = aten._dyn_quant_pack_4bit_weight(w, s, None, 32, 64, 4)
    yield Case(dict(inp=g.tensor((3, 64), low=0.5, high=2.0), packed_weights=packed, block_size=32, in_features=64,
                    out_features=4), reference=_matmul_reference, rtol=1e-5, atol=1e-4, id="positive-input")
    yield Case(dict(inp=torch.zeros(2, 64), packed_weights=packed, block_size=32, in_features=64, out_features=4),
               reference=_matmul_reference, id="zero-input")
    yield Case(dict(inp=torch.empty(0, 64), packed_weights=packed, block_size=32, in_features=64, out_features=4),
               reference=_matmul_reference, id="no-rows")
    yield Case(dict(inp=g.tensor((3, 64), torch.bfloat16), packed_weights=packed, block_size=32, in_features=64,
                    out_features=4), error="expected float32", id="bfloat16-input")
    yield Case(dict(inp=g.tensor((3, 62)), packed_weights=packed, block_size=32, in_features=64, out_features=4),
               error="expected [M, 64]", id="wrong-k")
    yield Case(dict(inp=g.tensor((2, 3, 64)), packed_weights=packed, block_size=32, in_features=64, out_features=4),
               error="expected [M, 64]", id="3d-input")
    yield Case(dict(inp=g.tensor((3, 64)), packed_weights=packed[:100], block_size=32, in_features=64,
                    out_features=4), error="Invalid packed weight tensor size", id="short-packed")
    yield Case(dict(inp=g.tensor((3, 64)), packed_weights=torch.cat([packed, torch.zeros(2)]), block_size=32,
                    in_features=64, out_features=4), error="bias length", id="bad-bias-length")
    yield Case(dict(inp=g.tensor((3, 64)), packed_weights=packed.to(torch.uint8), block_size=32, in_features=64,
                    out_features=4), error="KleidiAI", id="uint8-packed")
    yield Case(dict(inp=g.tensor((3, 64)), packed_weights=packed.double(), block_size=32, in_features=64,
                    out_features=4), reference=_matmul_reference, id="float64-packed")
    yield Case(dict(inp=g.tensor((3, 64)), packed_weights=packed, block_size=16, in_features=64, out_features=4),
               error="multiple of 32", id="bad-block")


E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2


def _f8(g, shape, dt):
    """float8 values whose products and sums are exact in float32 (halves in [-4, 4]), so the
    result does not depend on the GEMM's summation order."""
    return (torch.randint(-8, 9, shape, generator=g.g).to(torch.float32) / 2).to(dt)


def _scaled(g, m, k, n, dt_a=E4, dt_b=E4, **kw):
    args = dict(self=_f8(g, (m, k), dt_a), mat2=_f8(g, (k, n), dt_b), scale_a=torch.tensor(0.5),
                scale_b=torch.tensor(2.0), bias=None, scale_result=None, out_dtype=None, use_fast_accum=False)
    args.update(kw)
    return args


@cases("_scaled_mm")
def _scaled_mm(g):
    for out in (None, torch.float32, torch.bfloat16, torch.float16, torch.float64, E4, E5):
        yield Case(_scaled(g, 5, 16, 7, out_dtype=out), id=f"out-{_name(out) if out else 'default'}")
    yield Case(_scaled(g, 4, 8, 6, E5, E4), id="e5m2-e4m3")
    yield Case(_scaled(g, 4, 8, 6, E5, E5, out_dtype=torch.float32), id="e5m2-e5m2")
    mat2 = _f8(g, (6, 8), E4).t()
    yield Case(_scaled(g, 4, 8, 6, mat2=mat2, out_dtype=torch.bfloat16), id="column-major-mat2")
    yield Case(_scaled(g, 4, 8, 6, bias=g.tensor((6,)), out_dtype=torch.float32), id="bias-f32")
    yield Case(_scaled(g, 4, 8, 6, bias=g.tensor((6,), torch.bfloat16), out_dtype=torch.bfloat16), id="bias-bf16")
    yield Case(_scaled(g, 4, 8, 4, bias=g.tensor((4, 1)), out_dtype=torch.float32), id="bias-column")
    yield Case(_scaled(g, 4, 8, 6, scale_result=torch.tensor(4.0), out_dtype=E4), id="scale-result")
    yield Case(_scaled(g, 4, 8, 6, scale_result=torch.tensor(4.0)), id="scale-result-ignored")
    yield Case(_scaled(g, 4, 8, 6, scale_a=torch.tensor([0.25]), scale_b=torch.tensor(2.0, dtype=torch.float64),
                       out_dtype=torch.float32), id="scale-dtypes")
    big = torch.full((2, 2), 448.0).to(E4)
    yield Case(_scaled(g, 2, 2, 2, self=big, mat2=big, scale_a=torch.tensor(1.0), scale_b=torch.tensor(1.0)),
               id="overflow-nan")
    # Every float8 code times a few scaled values (K = 1: one product each, no summation order),
    # rounded to each float8 format: the float32 -> float8 casts against torch's over a wide range.
    for src in (E4, E5):
        codes = torch.arange(256, dtype=torch.int64).to(torch.uint8).view(src).reshape(256, 1)
        for out in (E4, E5):
            yield Case(_scaled(g, 256, 1, 9, self=codes, mat2=g.tensor((1, 9)).to(E5), scale_a=torch.tensor(0.37),
                               scale_b=torch.tensor(3.1), out_dtype=out), id=f"cast-sweep-{_name(src)}-{_name(out)}")
    # The layout ATen's CUDA op requires (self row-major, mat2 column-major, k and n multiples of 16),
    # which CUDA runs through cuBLASLt's float8 kernels; the cases above are computed there by Kiln's
    # tiled kernel, and ATen's CUDA op refuses them (no reference, skipped).
    for out in (None, torch.float32, torch.bfloat16, torch.float16, E5):
        yield Case(_scaled(g, 5, 32, 16, mat2=_f8(g, (16, 32), E4).t(), out_dtype=out),
                   id=f"tn-out-{_name(out) if out else 'default'}")
    yield Case(_scaled(g, 1, 64, 32, mat2=_f8(g, (32, 64), E4).t(), out_dtype=torch.bfloat16), id="tn-one-row")
    yield Case(_scaled(g, 6, 32, 48, E5, E4, mat2=_f8(g, (48, 32), E4).t(), out_dtype=torch.float32,
                       use_fast_accum=True), id="tn-e5m2-fast-accum")
    for out, bias in ((torch.bfloat16, torch.bfloat16), (torch.float16, torch.float16), (E4, torch.bfloat16)):
        yield Case(_scaled(g, 7, 32, 16, mat2=_f8(g, (16, 32), E4).t(), bias=g.tensor((16,), bias), out_dtype=out),
                   id=f"tn-bias-{_name(out)}")
    yield Case(_scaled(g, 0, 8, 6, out_dtype=torch.float32), id="empty")
    yield Case(_scaled(g, 3, 0, 6, out_dtype=torch.float32), id="k0")
    yield Case(_scaled(g, 4, 8, 6, scale_a=torch.rand(4, 1)), error="per-tensor scaling", id="rowwise")
    yield Case(_scaled(g, 4, 8, 6, self=g.tensor((4, 8), torch.bfloat16)), error="expected float8", id="bf16-input")
    yield Case(_scaled(g, 4, 8, 6, mat2=_f8(g, (7, 6), E4)), error="cannot be multiplied", id="mismatch")
    yield Case(_scaled(g, 4, 8, 6, self=_f8(g, (2, 4, 8), E4)), error="must be a matrix", id="3d")
    yield Case(_scaled(g, 4, 8, 6, bias=g.tensor((5,))), error="'bias' has 5 elements", id="bias-size")
    yield Case(_scaled(g, 4, 8, 6, scale_result=torch.tensor(4.0, dtype=torch.float64), out_dtype=E4),
               error="float32 scalar", id="scale-result-double")


def _scaled_mm_into_out(out, self, **kwargs):
    return out.copy_(torch._scaled_mm(self, **kwargs))


@cases("_scaled_mm_out")
def _scaled_mm_out(g):
    for out in (torch.float32, torch.bfloat16, E4):
        yield Case(dict(_scaled(g, 5, 16, 7, out_dtype=out), out=torch.empty(5, 7, dtype=out)),
                   id=f"out-{_name(out)}")
    yield Case(dict(_scaled(g, 4, 8, 6, bias=g.tensor((6,), torch.float16), out_dtype=None),
                    out=torch.empty(4, 6, dtype=torch.float16)), id="no-out-dtype-bias")
    yield Case(dict(_scaled(g, 4, 8, 6, scale_result=torch.tensor(0.5), out_dtype=E5), out=torch.empty(4, 6, dtype=E5)),
               id="scale-result")
    yield Case(dict(_scaled(g, 4, 8, 6, out_dtype=torch.float32), out=torch.empty(4, 6, dtype=torch.bfloat16)),
               error="must match", id="out-dtype-mismatch")
    # The expected values are ATen's functional op copied into `out`, so the strided_out layout
    # checks Kiln's strided writes against values rather than ATen CUDA's out variant, whose
    # result for a strided `out` differed from its own functional op's.
    yield Case(dict(_scaled(g, 5, 32, 16, mat2=_f8(g, (16, 32), E4).t(), out_dtype=torch.bfloat16,
                            bias=g.tensor((16,), torch.bfloat16)), out=torch.empty(5, 16, dtype=torch.bfloat16)),
               reference=_scaled_mm_into_out, id="tn-bias-bfloat16")
    yield Case(dict(_scaled(g, 4, 8, 6), out=torch.empty(4, 5, dtype=E4)), error="'out' has shape", id="out-shape")


def _pow2(g, shape):
    """Scales that are powers of two, so the scaled sums stay exact before the bfloat16 rounding."""
    return torch.pow(2.0, torch.randint(-2, 3, shape, generator=g.g).to(torch.float32))


def _grouped(g, a_shape, b_shape, ends=None, **kw):
    """_scaled_grouped_mm's arguments in the layout ATen's CUDA kernel takes: mat_a row-major,
    mat_b column-major in its last two dimensions, row-wise scales shaped as ATen checks them
    (1-D for a 2-D operand, times the groups when both are 2-D; [G, rows] for a 3-D one)."""
    a = _f8(g, a_shape, E4)
    b = _f8(g, tuple(b_shape[:-2]) + (b_shape[-1], b_shape[-2]), E4).transpose(-2, -1)
    groups = len(ends) if ends is not None else a_shape[0]
    both_2d = len(a_shape) == 2 and len(b_shape) == 2
    sa_shape = (a_shape[0] * (groups if both_2d else 1),) if len(a_shape) == 2 else (a_shape[0], a_shape[1])
    sb_shape = (b_shape[1] * (groups if both_2d else 1),) if len(b_shape) == 2 else (b_shape[0], b_shape[2])
    args = dict(self=a, mat2=b, scale_a=_pow2(g, sa_shape), scale_b=_pow2(g, sb_shape),
                offs=None if ends is None else torch.tensor(ends, dtype=torch.int32), bias=None, scale_result=None,
                out_dtype=None, use_fast_accum=False)
    args.update(kw)
    return args


@cases("_scaled_grouped_mm")
def _scaled_grouped_mm(g):
    """Only CUDA declares it. Group sizes respect ATen's CUTLASS kernel (split K: non-empty
    multiples of 16; split columns: multiples of 8), and the last group ends at the split
    dimension's end (ATen leaves what follows unwritten); tests/gpu/test_scaled_grouped_mm.py
    covers the rest against a host reference."""
    # ATen's kernel refuses the strided and offset layout variants (unit stride and 16-byte
    # alignment required), so only the contiguous ones have a reference here.
    tol = dict(rtol=2e-2, atol=2e-2, layouts=False)
    yield Case(_grouped(g, (40, 32), (4, 32, 48), [8, 8, 30, 40]), id="2d-3d-empty-group", **tol)
    yield Case(_grouped(g, (40, 32), (4, 32, 48), [8, 8, 30, 40], out_dtype=torch.bfloat16), id="2d-3d-bf16-out",
               **tol)
    yield Case(_grouped(g, (130, 64), (3, 64, 80), [0, 70, 130], use_fast_accum=True), id="2d-3d-fast-accum",
               **tol)
    yield Case(_grouped(g, (3, 32, 32), (32, 64), [16, 16, 64]), id="3d-2d-empty-group", **tol)
    yield Case(_grouped(g, (32, 64), (64, 48), [16, 48, 64]), id="2d-2d", **tol)
    yield Case(_grouped(g, (2, 16, 32), (2, 32, 48)), id="3d-3d", **tol)
    yield Case(_grouped(g, (40, 32), (4, 32, 48), [8, 8, 30, 40], bias=torch.zeros(48, dtype=torch.bfloat16)),
               error="bias is not supported", id="bias")
    yield Case(_grouped(g, (2, 16, 32), (2, 32, 48), scale_result=torch.tensor(1.0)),
               error="scale_result is not supported", id="scale-result")
    yield Case(_grouped(g, (40, 32), (4, 32, 48), [8, 8, 30, 40], out_dtype=torch.float32),
               error="out_dtype", id="float32-out")
    yield Case(_grouped(g, (40, 32), (4, 32, 48)), error="offs is required", id="no-offs")
    yield Case(_grouped(g, (2, 16, 32), (2, 32, 48), offs=torch.tensor([16, 32], dtype=torch.int32)),
               error="must not be given", id="3d-3d-offs")
    yield Case(_grouped(g, (40, 32), (4, 32, 48), [8, 8, 30, 40], offs=torch.tensor([8, 8, 30, 40])),
               error="has to be int32", id="int64-offs")
    yield Case(_grouped(g, (40, 32), (4, 32, 48), [8, 8, 30, 40], self=g.tensor((40, 32), torch.bfloat16)),
               error="float8_e4m3fn", id="bf16-input")
    yield Case(_grouped(g, (40, 32), (3, 32, 48), [8, 8, 30, 40]), error="numbers of groups", id="group-count")
    yield Case(_grouped(g, (40, 32), (4, 32, 48), [8, 8, 30, 40], scale_a=torch.ones(40, 1)),
               error="scale_a", id="scale-a-shape")
    yield Case(_grouped(g, (40, 32), (4, 32, 48), [8, 8, 30, 40], scale_b=torch.ones(4, 48, dtype=torch.float64)),
               error="must be float32", id="scale-b-dtype")
    yield Case(_grouped(g, (40, 16), (4, 32, 48), [8, 8, 30, 40]), error="contraction", id="contraction")
