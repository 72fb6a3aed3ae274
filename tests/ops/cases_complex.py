"""FFT, complex views, elementwise arithmetic with ATen's type promotion, views,
padding and resizing (the "complex" op group).

Scalars cross the C ABI as doubles, so every Scalar argument here is a Python
float: ATen then sees the same floating Scalar Kiln does.
"""

import torch

from compare import assert_same
from op_case import FLOATS, INTS, COMPLEX, Case, cases

LOW_PRECISION = (torch.float16, torch.bfloat16)


def _name(dt):
    return str(dt)[6:]


def _tol(dt):
    return dict(rtol=1e-2, atol=1e-2) if dt in LOW_PRECISION else {}


# ---- FFT --------------------------------------------------------------------

@cases("_fft_r2c")
def _fft_r2c(g):
    for dt in (torch.float32, torch.float64):
        tol = dict(rtol=1e-4, atol=1e-4) if dt == torch.float32 else {}
        for shape, dim in [((16,), [0]), ((3, 10), [1]), ((4, 6), [0]), ((2, 3, 12), [0, 2]), ((5, 97), [1]),
                           ((2, 202), [1]), ((3, 1), [1]), ((2, 3, 5), [2, 0, 1])]:
            for onesided in (True, False):
                for norm in (0, 1, 2):
                    yield Case(dict(self=g.tensor(shape, dt), dim=dim, normalization=norm, onesided=onesided),
                               id=f"{_name(dt)}-{'x'.join(map(str, shape))}-d{''.join(map(str, dim))}-n{norm}-{onesided}",
                               **tol)
        yield Case(dict(self=g.tensor((6, 4), dt).t(), dim=[0], normalization=0, onesided=True), id=f"{_name(dt)}-transposed", **tol)
        yield Case(dict(self=g.tensor((3, 4, 5), dt).permute(2, 0, 1), dim=[1], normalization=2, onesided=True),
                   id=f"{_name(dt)}-permuted", **tol)
        # ATen's CUDA kernel runs dims starting with (0, 1), or more than 3 dims, as several cuFFT passes
        # (the result strides follow each pass; a two-sided result is then contiguous).
        for shape, dim in [((3, 4, 6), [0, 1]), ((2, 3, 4, 5), [0, 1, 2, 3]), ((3, 5, 7), [0, 1, 2])]:
            for onesided in (True, False):
                yield Case(dict(self=g.tensor(shape, dt), dim=dim, normalization=1, onesided=onesided),
                           id=f"{_name(dt)}-{'x'.join(map(str, shape))}-d{''.join(map(str, dim))}-passes-{onesided}", **tol)
        # Size-1 batch dims (equal strides: the order ATen sorts them in decides the result strides), an
        # even last dim two-sided, a prime size in a 2-d transform.
        yield Case(dict(self=g.tensor((2, 1, 8), dt), dim=[2], normalization=0, onesided=True), id=f"{_name(dt)}-unit-batch", **tol)
        yield Case(dict(self=g.tensor((1, 3, 1, 8), dt), dim=[1, 3], normalization=2, onesided=False),
                   id=f"{_name(dt)}-unit-batch-2d", **tol)
        yield Case(dict(self=g.tensor((4, 2), dt), dim=[1], normalization=0, onesided=False), id=f"{_name(dt)}-two-sided-2", **tol)
        yield Case(dict(self=g.tensor((13, 9), dt), dim=[1, 0], normalization=2, onesided=False), id=f"{_name(dt)}-13x9-d10", **tol)
    yield Case(dict(self=g.tensor((4,), torch.float16), dim=[0], normalization=0, onesided=True), error="float32 or float64", id="half")
    yield Case(dict(self=g.tensor((4,), torch.int64), dim=[0], normalization=0, onesided=True), error="float32 or float64", id="int")
    yield Case(dict(self=g.tensor((4, 3)), dim=[2], normalization=0, onesided=True), error="out of range", id="bad-dim")
    yield Case(dict(self=g.tensor((4, 3)), dim=[], normalization=0, onesided=True), error="empty", id="no-dims")
    yield Case(dict(self=g.tensor((4, 3)), dim=[0, 0], normalization=0, onesided=True), error="repeats", id="dup-dims")
    yield Case(dict(self=g.tensor((0, 3)), dim=[0], normalization=0, onesided=True), error="empty", id="empty")
    yield Case(dict(self=g.tensor((4, 3)), dim=[0], normalization=5, onesided=True), error="normalization", id="bad-norm")


@cases("_fft_c2c")
def _fft_c2c(g):
    for dt in COMPLEX:
        tol = dict(rtol=1e-4, atol=1e-4) if dt == torch.complex64 else {}
        for shape, dim in [((16,), [0]), ((3, 10), [1]), ((4, 6), [0]), ((2, 3, 12), [0, 2]), ((3, 111), [1]),
                           ((7, 60), [0, 1]), ((1, 5), [0]), ((2, 3, 4), [1, 2, 0])]:
            for forward in (True, False):
                for norm in (0, 1, 2):
                    yield Case(dict(self=g.tensor(shape, dt), dim=dim, normalization=norm, forward=forward),
                               id=f"{_name(dt)}-{'x'.join(map(str, shape))}-d{''.join(map(str, dim))}-n{norm}-{forward}",
                               **tol)
        yield Case(dict(self=g.tensor((6, 4), dt).t(), dim=[0], normalization=0, forward=True), id=f"{_name(dt)}-transposed", **tol)
        yield Case(dict(self=g.tensor((6, 4), dt).t(), dim=[1, 0], normalization=1, forward=False),
                   id=f"{_name(dt)}-transposed-2d", **tol)
        yield Case(dict(self=g.tensor((2, 3, 4), dt).permute(2, 0, 1), dim=[1], normalization=0, forward=True),
                   id=f"{_name(dt)}-permuted", **tol)
        # More than 3 dims: ATen's CUDA kernel runs several cuFFT passes, 3 dims of smallest stride first.
        yield Case(dict(self=g.tensor((2, 3, 4, 5), dt), dim=[0, 1, 2, 3], normalization=2, forward=True), id=f"{_name(dt)}-4d", **tol)
        yield Case(dict(self=g.tensor((2, 3, 4, 5), dt).permute(3, 1, 0, 2), dim=[3, 0, 2, 1], normalization=1, forward=False),
                   id=f"{_name(dt)}-4d-permuted", **tol)
        yield Case(dict(self=g.tensor((1, 4, 1, 6), dt), dim=[3], normalization=0, forward=True), id=f"{_name(dt)}-unit-batch", **tol)
        yield Case(dict(self=g.tensor((3, 4, 6), dt).transpose(0, 2), dim=[0, 1], normalization=0, forward=True),
                   id=f"{_name(dt)}-transposed-01", **tol)
        yield Case(dict(self=g.tensor((4, 3), dt), dim=[], normalization=0, forward=True), id=f"{_name(dt)}-no-dims")
    yield Case(dict(self=g.tensor((4,)), dim=[0], normalization=0, forward=True), error="complex64 or complex128", id="real")
    yield Case(dict(self=g.tensor((4,), torch.complex64), dim=[1], normalization=0, forward=True), error="out of range", id="bad-dim")
    yield Case(dict(self=g.tensor((), torch.complex64), dim=[0], normalization=0, forward=True), error="0-d", id="scalar")


# ---- complex views ----------------------------------------------------------

@cases("view_as_real")
def _view_as_real(g):
    for dt in COMPLEX:
        for shape in [(3, 4), (5,), (), (0, 2), (2, 1, 3)]:
            yield Case(dict(self=g.tensor(shape, dt)), alias="self", id=f"{_name(dt)}-{'x'.join(map(str, shape))}")
        yield Case(dict(self=g.tensor((4, 3), dt).t()), alias="self", id=f"{_name(dt)}-transposed")
    yield Case(dict(self=g.tensor((3,))), error="only supported for complex", id="real")


@cases("view_as_complex")
def _view_as_complex(g):
    # A complex view needs even strides and offset: the layout variants (odd
    # offset 3, interleaved last dimension) are not valid inputs for it.
    for dt in (torch.float32, torch.float64):
        for shape in [(3, 2), (2, 3, 2), (2,), (0, 2)]:
            yield Case(dict(self=g.tensor(shape, dt)), alias="self", layouts=False, id=f"{_name(dt)}-{'x'.join(map(str, shape))}")
        yield Case(dict(self=g.tensor((3, 4, 2), dt)[1:]), alias="self", layouts=False, id=f"{_name(dt)}-sliced")
        yield Case(dict(self=g.tensor((2, 4, 4), dt).permute(1, 0, 2)[:, :, 2:]), alias="self", layouts=False,
                   id=f"{_name(dt)}-permuted")
        yield Case(dict(self=g.tensor((3, 4), dt)[:, :2]), alias="self", layouts=False, id=f"{_name(dt)}-narrowed")
    yield Case(dict(self=g.tensor((3, 3))), error="last dimension of size 2", id="last-3")
    yield Case(dict(self=g.tensor(())), error="one or more dimensions", id="scalar")
    yield Case(dict(self=g.tensor((3, 3))[:, :2]), error="stride divisible by 2", id="odd-stride")
    yield Case(dict(self=g.tensor((2, 2)).t()), error="stride 1", id="last-stride")
    yield Case(dict(self=g.tensor((3, 2), torch.float16)), error="float32 or float64", id="half")


# ---- elementwise --------------------------------------------------------------

def _values(g, shape, dt, positive=False):
    if dt == torch.bool:
        return g.tensor(shape, dt)
    if dt.is_floating_point:
        return g.tensor(shape, dt, low=0.5, high=2.0) if positive else g.tensor(shape, dt)
    if dt.is_complex:
        return g.tensor(shape, dt)
    return g.tensor(shape, dt, low=1 if positive else -9, high=9)


@cases("abs")
def _abs(g):
    for dt in FLOATS + INTS + COMPLEX:
        yield Case(dict(self=_values(g, (3, 5), dt)), id=_name(dt))
    yield Case(dict(self=torch.tensor([-0.0, float("nan"), float("-inf"), 2.5])), id="special")
    yield Case(dict(self=g.tensor((4, 3), torch.complex64).t()), id="complex-transposed")
    yield Case(dict(self=g.tensor((2, 3, 4)).permute(1, 2, 0)), id="permuted")
    yield Case(dict(self=g.tensor(())), id="scalar")
    yield Case(dict(self=g.tensor((0, 3))), id="empty")
    yield Case(dict(self=torch.tensor([-128, 127], dtype=torch.int8)), id="int8-min")
    yield Case(dict(self=g.tensor((3,), torch.bool)), error="bool", id="bool")


@cases("angle")
def _angle(g):
    for dt in FLOATS + INTS + COMPLEX + (torch.bool,):
        yield Case(dict(self=_values(g, (3, 5), dt)), id=_name(dt), **_tol(dt))
    yield Case(dict(self=torch.tensor([-0.0, 0.0, float("nan"), float("-inf"), -2.5, 3.0])), id="special")
    yield Case(dict(self=g.tensor((4, 3), torch.complex128).t()), id="complex-transposed")
    yield Case(dict(self=g.tensor((), torch.complex64)), id="scalar")


@cases("polar")
def _polar(g):
    for dt in (torch.float32, torch.float64):
        yield Case(dict(abs=g.tensor((3, 4), dt, low=0, high=2), angle=g.tensor((3, 4), dt)), id=_name(dt))
        yield Case(dict(abs=g.tensor((2, 1), dt, low=0, high=2), angle=g.tensor((3,), dt)), id=f"{_name(dt)}-broadcast")
        yield Case(dict(abs=g.tensor((4, 3), dt).t(), angle=g.tensor((4, 3), dt).t()), id=f"{_name(dt)}-transposed")
        yield Case(dict(abs=g.tensor((), dt), angle=g.tensor((), dt)), id=f"{_name(dt)}-scalar")
    yield Case(dict(abs=g.tensor((3,)), angle=g.tensor((3,), torch.float64)), error="expected float32", id="mixed")
    yield Case(dict(abs=g.tensor((3,), torch.float16), angle=g.tensor((3,), torch.float16)), error="float32 or float64",
               id="half")
    yield Case(dict(abs=g.tensor((3,)), angle=g.tensor((4,))), error="broadcast", id="shapes")


# (self dtype, other dtype, other shape) pairs exercising promotion classes.
PROMOTIONS = [
    (torch.float16, torch.float32, (3, 4)),
    (torch.bfloat16, torch.float16, (3, 4)),
    (torch.float16, torch.float64, ()),        # a 0-d tensor of the same kind does not widen
    (torch.int32, torch.float64, ()),          # ...but one of a higher kind sets the dtype
    (torch.int32, torch.complex128, ()),
    (torch.float32, torch.complex128, ()),     # float32 with a 0-d complex128 gives complex64
    (torch.bfloat16, torch.complex128, ()),    # ...and so does bfloat16
    (torch.float32, torch.complex64, (3, 4)),
    (torch.float64, torch.complex64, (3, 4)),  # complex128
    (torch.bfloat16, torch.complex64, (3, 4)),
    (torch.int64, torch.float16, (3, 4)),
    (torch.bool, torch.float32, (4,)),
    (torch.float32, torch.float32, (1, 4)),
    (torch.float64, torch.float32, (3, 1)),
]
INT_PROMOTIONS = [
    (torch.int8, torch.uint8, (3, 4)),   # int16
    (torch.int32, torch.int64, (4,)),
    (torch.int64, torch.int32, ()),      # int64: the 0-d int32 does not narrow it
    (torch.uint8, torch.bool, (3, 4)),
    (torch.int16, torch.int8, (3, 1)),
]


@cases("add_Tensor")
def _add_tensor(g):
    for dt in FLOATS + COMPLEX:
        for alpha in (1.0, 2.5):
            yield Case(dict(self=_values(g, (3, 4), dt), other=_values(g, (3, 4), dt), alpha=alpha),
                       id=f"{_name(dt)}-a{alpha}", **_tol(dt))
    for a, b, shape in PROMOTIONS:
        yield Case(dict(self=_values(g, (3, 4), a), other=_values(g, shape, b), alpha=1.0),
                   id=f"{_name(a)}+{_name(b)}{list(shape)}", **_tol(a))
    yield Case(dict(self=g.tensor((4, 3)).t(), other=g.tensor((4, 3)).t(), alpha=1.0), id="transposed")
    yield Case(dict(self=g.tensor((4, 3)).t(), other=g.tensor((3, 4)), alpha=-1.0), id="mixed-layouts")
    yield Case(dict(self=g.tensor((4, 1)), other=g.tensor((1, 5)), alpha=1.0), id="broadcast-both")
    yield Case(dict(self=g.tensor((2, 3, 4)).permute(2, 0, 1), other=g.tensor((3,)), alpha=2.0), id="permuted-broadcast")
    yield Case(dict(self=g.tensor(()), other=g.tensor(()), alpha=1.0), id="scalars")
    yield Case(dict(self=g.tensor((0, 3)), other=g.tensor((3,)), alpha=1.0), id="empty")
    yield Case(dict(self=g.tensor((3,), torch.int64), other=g.tensor((3,), torch.int64), alpha=1.0),
               error="alpha must not be a floating point number", id="int-alpha")
    yield Case(dict(self=g.tensor((3,), torch.bool), other=g.tensor((3,), torch.bool), alpha=1.0),
               error="alpha must not be a floating point number", id="bool-alpha")
    yield Case(dict(self=g.tensor((3,)), other=g.tensor((4,)), alpha=1.0), error="broadcast", id="shapes")
    yield Case(dict(self=g.tensor((3,), torch.float16), other=g.tensor((), torch.complex64), alpha=1.0),
               error="complex type of float16", id="complex32")


@cases("add_Scalar")
def _add_scalar(g):
    for dt in FLOATS + INTS + COMPLEX + (torch.bool,):
        yield Case(dict(self=_values(g, (3, 4), dt), other=2.5, alpha=1.0), id=_name(dt), **_tol(dt))
        yield Case(dict(self=_values(g, (3, 4), dt), other=-1.0, alpha=3.0), id=f"{_name(dt)}-alpha", **_tol(dt))
    yield Case(dict(self=g.tensor((4, 3)).t(), other=1.0, alpha=1.0), id="transposed")
    yield Case(dict(self=g.tensor(()), other=1.0, alpha=1.0), id="scalar")
    yield Case(dict(self=g.tensor((0,)), other=1.0, alpha=1.0), id="empty")


@cases("mul_Tensor")
def _mul_tensor(g):
    for dt in FLOATS + INTS + COMPLEX + (torch.bool,):
        yield Case(dict(self=_values(g, (3, 4), dt), other=_values(g, (3, 4), dt)), id=_name(dt), **_tol(dt))
    for a, b, shape in PROMOTIONS + INT_PROMOTIONS:
        yield Case(dict(self=_values(g, (3, 4), a), other=_values(g, shape, b)), id=f"{_name(a)}*{_name(b)}{list(shape)}",
                   **_tol(a))
    yield Case(dict(self=torch.tensor([2**30, -(2**30), 3], dtype=torch.int32),
                    other=torch.tensor([4, 4, 5], dtype=torch.int32)), id="int32-wraps")
    yield Case(dict(self=g.tensor((4, 3)).t(), other=g.tensor((4, 3)).t()), id="transposed")
    yield Case(dict(self=g.tensor((4, 1, 3)), other=g.tensor((2, 1))), id="broadcast")
    yield Case(dict(self=g.tensor(()), other=g.tensor((2, 3))), id="scalar-tensor")
    yield Case(dict(self=g.tensor((2, 0)), other=g.tensor((1,))), id="empty")
    yield Case(dict(self=g.tensor((2, 3)), other=g.tensor((3, 2))), error="broadcast", id="shapes")


@cases("mul_Scalar")
def _mul_scalar(g):
    for dt in FLOATS + INTS + COMPLEX + (torch.bool,):
        yield Case(dict(self=_values(g, (3, 4), dt), other=2.5), id=_name(dt), **_tol(dt))
        yield Case(dict(self=_values(g, (3, 4), dt), other=-3.0), id=f"{_name(dt)}-neg", **_tol(dt))
    yield Case(dict(self=g.tensor((4, 3), torch.complex64).t(), other=0.5), id="transposed")
    yield Case(dict(self=g.tensor((), torch.int32), other=0.5), id="scalar")


@cases("pow_Tensor_Tensor")
def _pow_tensor_tensor(g):
    for dt in FLOATS:
        yield Case(dict(self=_values(g, (3, 4), dt, positive=True), exponent=g.tensor((3, 4), dt)), id=_name(dt),
                   **_tol(dt))
    for dt in INTS:
        yield Case(dict(self=g.tensor((3, 4), dt, low=-3 if dt != torch.uint8 else 0, high=4),
                        exponent=g.tensor((3, 4), dt, low=0, high=5)), id=_name(dt))
    for dt in COMPLEX:
        yield Case(dict(self=g.tensor((3, 4), dt) + 2, exponent=g.tensor((3, 4), dt)), id=_name(dt), rtol=1e-4, atol=1e-4)
    yield Case(dict(self=torch.tensor([2, 1, -1, -1, 0, 3]), exponent=torch.tensor([-1, -3, -3, -2, 0, 40])),
               id="int-negative-and-wrap")
    yield Case(dict(self=g.tensor((3, 4), torch.int32, low=1, high=4), exponent=g.tensor((4,), torch.float32)),
               id="int-float")
    yield Case(dict(self=_values(g, (3, 4), torch.float32, positive=True), exponent=torch.tensor(2)), id="0d-int-exponent")
    yield Case(dict(self=_values(g, (4, 3), torch.float64, positive=True).t(), exponent=g.tensor((3, 1), torch.float64)),
               id="transposed-broadcast")
    yield Case(dict(self=torch.tensor([True]), exponent=torch.tensor([True])), error="bool", id="bool")


@cases("pow_Tensor_Scalar")
def _pow_tensor_scalar(g):
    for dt in FLOATS:
        for e in (2.0, 0.5, -1.0, 3.0, 0.0):
            yield Case(dict(self=_values(g, (3, 4), dt, positive=True), exponent=e), id=f"{_name(dt)}-e{e}", **_tol(dt))
    for dt in INTS + (torch.bool,):
        yield Case(dict(self=_values(g, (3, 4), dt), exponent=2.0), id=f"{_name(dt)}")
        yield Case(dict(self=_values(g, (3, 4), dt, positive=True), exponent=-0.5), id=f"{_name(dt)}-neg")
    for dt in COMPLEX:
        yield Case(dict(self=g.tensor((3, 4), dt), exponent=2.0), id=_name(dt), rtol=1e-4, atol=1e-4)
    yield Case(dict(self=g.tensor((4, 3)).t(), exponent=2.0), id="transposed")


@cases("pow_Scalar")
def _pow_scalar(g):
    for dt in FLOATS + INTS + COMPLEX + (torch.bool,):
        yield Case(dict(self=2.0, exponent=g.tensor((3, 4), dt, low=-3, high=3) if not dt.is_complex else g.tensor((3, 4), dt)),
                   id=_name(dt), **(dict(rtol=1e-4, atol=1e-4) if dt.is_complex else _tol(dt)))
    yield Case(dict(self=1.5, exponent=g.tensor((4, 3)).t()), id="transposed")
    yield Case(dict(self=0.5, exponent=g.tensor(())), id="scalar")


@cases("gcd")
def _gcd(g):
    for dt in INTS:
        lo = 0 if dt == torch.uint8 else -30
        yield Case(dict(self=g.tensor((3, 5), dt, low=lo, high=30), other=g.tensor((3, 5), dt, low=lo, high=30)),
                   id=_name(dt))
    yield Case(dict(self=torch.tensor([-4, 0, -7, 12, 0]), other=torch.tensor([6, 0, 0, -18, -5])), id="signs-zeros")
    yield Case(dict(self=g.tensor((3, 1), torch.int8, low=-9, high=9), other=g.tensor((4,), torch.int32, low=-9, high=9)),
               id="int8-int32-broadcast")
    yield Case(dict(self=g.tensor((4, 3), torch.int64, low=0, high=50).t(), other=g.tensor((3, 4), torch.int64, low=0, high=50)),
               id="transposed")
    # ATen computes in the dtype: |-128| wraps to -128 in int8, and its gcd with 6 is -2.
    yield Case(dict(self=torch.tensor([-128, -128, 6, 0, -128, 12], dtype=torch.int8),
                    other=torch.tensor([6, 0, -128, -128, -128, -18], dtype=torch.int8)), id="int8-most-negative")
    yield Case(dict(self=g.tensor((3,)), other=g.tensor((3,))), error="integer", id="float")
    yield Case(dict(self=g.tensor((3,), torch.bool), other=g.tensor((3,), torch.bool)), error="integer", id="bool")


@cases("hann_window")
def _hann_window(g):
    for n in (0, 1, 2, 5, 16, 400):
        yield Case(dict(window_length=n, dtype=None, layout=None, device=None, pin_memory=None), id=f"n{n}")
    for dt in FLOATS:
        yield Case(dict(window_length=9, dtype=dt, layout=torch.strided, device="cpu", pin_memory=False), id=_name(dt),
                   **_tol(dt))
    # Long narrow windows: ATen rounds every step to the dtype (arange past 256 in bfloat16 included), which
    # moves values by up to 4 units in the last place from the rounded exact window; one unit is allowed.
    for dt, ulp in ((torch.float16, 2.0 ** -11), (torch.bfloat16, 2.0 ** -8)):
        yield Case(dict(window_length=300, dtype=dt, layout=None, device=None, pin_memory=None), id=f"{_name(dt)}-300",
                   rtol=0, atol=ulp)
    yield Case(dict(window_length=4, dtype=torch.int64, layout=None, device=None, pin_memory=None), error="floating point",
               id="int")
    yield Case(dict(window_length=-1, dtype=None, layout=None, device=None, pin_memory=None), error="non-negative",
               id="negative")


@cases("_efficientzerotensor")
def _efficientzerotensor(g):
    for size in ([2, 3], [], [0, 4], [5]):
        yield Case(dict(size=size, dtype=None, layout=None, device=None, pin_memory=None), id=f"{size}")
    for dt in (torch.float64, torch.int32, torch.complex64, torch.bool, torch.bfloat16):
        yield Case(dict(size=[3, 2], dtype=dt, layout=None, device="cpu", pin_memory=None), id=_name(dt))
    yield Case(dict(size=[2, -1], dtype=None, layout=None, device=None, pin_memory=None), error="negative", id="negative")


@cases("fill__Scalar")
def _fill(g):
    for dt in FLOATS + INTS + COMPLEX + (torch.bool,):
        yield Case(dict(self=_values(g, (3, 4), dt), value=2.75), id=_name(dt))
        if dt != torch.uint8:
            yield Case(dict(self=_values(g, (3, 4), dt), value=-1.0), id=f"{_name(dt)}-neg")
    yield Case(dict(self=g.tensor((4, 3)).t(), value=float("inf")), id="transposed-inf")
    yield Case(dict(self=g.tensor(()), value=float("nan")), id="scalar-nan")
    yield Case(dict(self=g.tensor((0, 3)), value=1.0), id="empty")
    yield Case(dict(self=g.tensor((3,), torch.int8), value=300.0), error="without overflow", id="int8-overflow")
    yield Case(dict(self=g.tensor((3,), torch.uint8), value=-1.0), error="without overflow", id="uint8-negative")
    yield Case(dict(self=g.tensor((3,), torch.int32), value=float("nan")), error="without overflow", id="int-nan")
    yield Case(dict(self=g.tensor((3,), torch.float16), value=1e6), error="without overflow", id="half-overflow")


# ---- views ------------------------------------------------------------------

@cases("narrow")
def _narrow(g):
    x = g.tensor((4, 6, 5))
    for dim, start, length in [(0, 1, 2), (1, 0, 6), (-1, 2, 3), (1, -4, 2), (2, 5, 0), (0, -4, 4)]:
        yield Case(dict(self=x, dim=dim, start=start, length=length), alias="self", id=f"d{dim}-s{start}-l{length}")
    for dt in (torch.int8, torch.complex128, torch.bool):
        yield Case(dict(self=g.tensor((5, 3), dt), dim=0, start=1, length=3), alias="self", id=_name(dt))
    yield Case(dict(self=g.tensor((4, 3)).t(), dim=1, start=1, length=2), alias="self", id="transposed")
    yield Case(dict(self=g.tensor(()), dim=0, start=0, length=1), error="0-dim", id="scalar")
    yield Case(dict(self=x, dim=3, start=0, length=1), error="out of range", id="bad-dim")
    yield Case(dict(self=x, dim=0, start=5, length=0), error="out of range", id="bad-start")
    yield Case(dict(self=x, dim=0, start=2, length=3), error="exceeds dimension size", id="too-long")
    yield Case(dict(self=x, dim=0, start=0, length=-1), error="non-negative", id="negative-length")


@cases("slice_Tensor")
def _slice(g):
    x = g.tensor((7, 5))
    big = 2**62
    for dim, start, end, step in [(0, None, None, 1), (0, 1, 5, 2), (1, -3, None, 1), (0, None, -2, 3), (0, 5, 2, 1),
                                  (1, -100, big, 2), (0, 7, None, 1), (-1, 2, 3, 1), (0, 3, big, 10),
                                  (0, 2, None, 2**40)]:
        yield Case(dict(self=x, dim=dim, start=start, end=end, step=step), alias="self",
                   id=f"d{dim}-{start}-{end}-{step}")
    yield Case(dict(self=g.tensor((4, 3), torch.complex64).t(), dim=1, start=1, end=None, step=2), alias="self",
               id="transposed")
    yield Case(dict(self=g.tensor(()), dim=0, start=None, end=None, step=1), error="0-dim", id="scalar")
    yield Case(dict(self=x, dim=0, start=None, end=None, step=0), error="step must be positive", id="step0")
    yield Case(dict(self=x, dim=2, start=None, end=None, step=1), error="out of range", id="bad-dim")


@cases("permute")
def _permute(g):
    x = g.tensor((2, 3, 4))
    for dims in ([2, 0, 1], [-1, 0, 1], [0, 1, 2], [1, 2, 0]):
        yield Case(dict(self=x, dims=dims), alias="self", id=f"{dims}")
    yield Case(dict(self=g.tensor(()), dims=[]), alias="self", id="scalar")
    yield Case(dict(self=g.tensor((3, 0), torch.int16), dims=[1, 0]), alias="self", id="empty")
    yield Case(dict(self=x, dims=[0, 1]), error="does not match", id="short")
    yield Case(dict(self=x, dims=[0, 0, 1]), error="duplicate", id="repeat")
    yield Case(dict(self=x, dims=[0, 1, 3]), error="out of range", id="bad-dim")


@cases("reshape")
def _reshape(g):
    x = g.tensor((4, 6))
    for shape in ([24], [2, 12], [-1, 3], [2, 2, 6], [4, 6], [1, 24, 1]):
        yield Case(dict(self=x, shape=shape), alias="self", id=f"{shape}")
    yield Case(dict(self=g.tensor((4, 6)).t(), shape=[24]), alias="self", id="transposed-copies")
    yield Case(dict(self=g.tensor((4, 6)).t(), shape=[2, 3, 4]), alias="self", id="transposed-split-view")
    yield Case(dict(self=g.tensor((2, 3, 4)).permute(1, 0, 2), shape=[6, 4]), alias="self", id="permuted-copies")
    yield Case(dict(self=g.tensor((2, 3, 4)).permute(1, 0, 2), shape=[3, 2, 2, 2]), alias="self", id="permuted-view")
    yield Case(dict(self=g.tensor((6, 4), torch.int8)[:, 1:3], shape=[12]), alias="self", id="sliced-copies")
    yield Case(dict(self=g.tensor((6, 4), torch.complex64)[::2], shape=[3, 2, 2]), alias="self", id="strided-view")
    yield Case(dict(self=g.tensor(()), shape=[1, 1]), alias="self", id="scalar-up")
    yield Case(dict(self=g.tensor((1, 1)), shape=[]), alias="self", id="to-scalar")
    yield Case(dict(self=g.tensor((0, 3)), shape=[3, 0]), alias="self", id="empty")
    yield Case(dict(self=x, shape=[5, -1]), error="is invalid for input of size 24", id="bad")
    yield Case(dict(self=x, shape=[-1, -1]), error="only one dimension can be inferred", id="two-inferred")
    yield Case(dict(self=x, shape=[-2, -12]), error="invalid shape dimension", id="negative")
    yield Case(dict(self=g.tensor((0, 3)), shape=[-1, 0]), error="ambiguous", id="empty-inferred")


@cases("squeeze_dim")
def _squeeze(g):
    x = g.tensor((3, 1, 4, 1))
    for dim in (1, 3, -1, 0, -3):
        yield Case(dict(self=x, dim=dim), alias="self", id=f"d{dim}")
    yield Case(dict(self=g.tensor(()), dim=0), alias="self", id="scalar")
    yield Case(dict(self=g.tensor(()), dim=-1), alias="self", id="scalar-neg")
    yield Case(dict(self=g.tensor((1,), torch.complex64), dim=0), alias="self", id="to-scalar")
    yield Case(dict(self=x, dim=4), error="out of range", id="bad-dim")
    yield Case(dict(self=g.tensor(()), dim=1), error="out of range", id="scalar-bad-dim")


@cases("view_dtype")
def _view_dtype(g):
    x = g.tensor((3, 4))
    for dt in (torch.int32, torch.float32, torch.uint32):
        yield Case(dict(self=x, dtype=dt), alias="self", id=f"same-size-{_name(dt)}")
    yield Case(dict(self=g.tensor(()), dtype=torch.int32), alias="self", id="scalar-same-size")
    yield Case(dict(self=g.tensor((4, 3)).t(), dtype=torch.int32), alias="self", id="transposed-same-size")
    # A changed element size needs a unit last stride and (to a larger
    # element) a divisible offset: only the contiguous layout keeps them.
    for dt in (torch.int16, torch.uint8, torch.bool, torch.float64, torch.complex64, torch.bfloat16):
        yield Case(dict(self=x, dtype=dt), alias="self", layouts=False, id=f"to-{_name(dt)}")
    yield Case(dict(self=g.tensor((2, 3), torch.complex128), dtype=torch.float64), alias="self", layouts=False,
               id="complex-to-float")
    yield Case(dict(self=g.tensor((2, 8), torch.uint8)[:, 4:], dtype=torch.int32), alias="self", layouts=False,
               id="narrowed-to-int32")
    yield Case(dict(self=g.tensor((2, 3)), dtype=torch.float64), error="divisible by 2", id="odd-size")
    yield Case(dict(self=g.tensor((4, 2)).t(), dtype=torch.float64), error="stride(-1) must be 1", id="bad-stride")
    yield Case(dict(self=g.tensor(()), dtype=torch.float64), error="cannot be 0", id="scalar")


# ---- padding ----------------------------------------------------------------

@cases("pad")
def _pad(g):
    x4 = g.tensor((2, 3, 4, 5))
    for dt in FLOATS + INTS + COMPLEX + (torch.bool,):
        yield Case(dict(self=_values(g, (2, 3, 4), dt), pad=[1, 2, 0, 1], mode="constant", value=None), id=f"constant-{_name(dt)}")
    yield Case(dict(self=x4, pad=[1, 2, 1, 0], mode="constant", value=1.5), id="constant-value")
    yield Case(dict(self=g.tensor((2, 3), torch.int32), pad=[1, 1], mode="constant", value=7.0), id="constant-int-value")
    yield Case(dict(self=x4, pad=[-1, 2, 0, -2, 1, 1, 1, 0], mode="constant", value=None), id="constant-all-dims")
    yield Case(dict(self=x4.transpose(2, 3), pad=[-1, -1], mode="constant", value=None), id="constant-crop-transposed")
    yield Case(dict(self=x4.contiguous(memory_format=torch.channels_last), pad=[1, 1, 2, 0], mode="constant", value=None),
               id="constant-channels-last")
    yield Case(dict(self=x4.contiguous(memory_format=torch.channels_last), pad=[-1, 0, 0, -1], mode="constant", value=None),
               id="constant-channels-last-crop")
    yield Case(dict(self=g.tensor((1, 2, 3, 4, 5)).contiguous(memory_format=torch.channels_last_3d), pad=[1, 0, 0, 1, 1, 1],
                    mode="constant", value=-2.0), id="constant-channels-last-3d")
    yield Case(dict(self=g.tensor(()), pad=[], mode="constant", value=None), id="constant-scalar")
    yield Case(dict(self=g.tensor((2, 0, 4)), pad=[1, 1], mode="constant", value=None), id="constant-empty")
    yield Case(dict(self=g.tensor((2, 3, 4)), pad=[-2, -2], mode="constant", value=None), id="constant-to-empty")
    for mode in ("reflect", "replicate", "circular"):
        yield Case(dict(self=g.tensor((3, 5)), pad=[1, 2], mode=mode, value=None), id=f"{mode}-2d")
        yield Case(dict(self=g.tensor((2, 3, 5)), pad=[4, 3], mode=mode, value=None), id=f"{mode}-3d")
        yield Case(dict(self=g.tensor((2, 3, 5)), pad=[-1, 3], mode=mode, value=None), id=f"{mode}-crop")
        yield Case(dict(self=g.tensor((2, 3, 5)), pad=[3, -1], mode=mode, value=None), id=f"{mode}-crop-right")
        yield Case(dict(self=x4, pad=[1, 2, 3, 0], mode=mode, value=None), id=f"{mode}-4d")
        yield Case(dict(self=g.tensor((3, 4, 5)), pad=[1, 2, 2, 1], mode=mode, value=None), id=f"{mode}-unbatched-2d")
        yield Case(dict(self=g.tensor((1, 2, 3, 4, 5)), pad=[1, 1, 2, 0, 0, 2], mode=mode, value=None), id=f"{mode}-5d")
        yield Case(dict(self=x4.transpose(2, 3), pad=[1, 2, 1, 0], mode=mode, value=None), id=f"{mode}-transposed")
        yield Case(dict(self=x4.contiguous(memory_format=torch.channels_last), pad=[1, 2, 1, 0], mode=mode, value=None),
                   id=f"{mode}-channels-last")
        # 3-d padding keeps channels-last (5-d, or 4-d unbatched) on both devices; 2-d reflect does not on CUDA.
        yield Case(dict(self=g.tensor((1, 2, 3, 4, 5)).contiguous(memory_format=torch.channels_last_3d), pad=[1, 1, 2, 0, 0, 2],
                        mode=mode, value=None), id=f"{mode}-channels-last-3d")
        yield Case(dict(self=x4.contiguous(memory_format=torch.channels_last), pad=[1, 0, 1, 1, 0, 1], mode=mode, value=None),
                   id=f"{mode}-channels-last-unbatched-3d")
        yield Case(dict(self=g.tensor((2, 3, 4), torch.complex64), pad=[1, 1], mode=mode, value=None), id=f"{mode}-complex")
        yield Case(dict(self=g.tensor((2, 3, 4)), pad=[1, 1], mode=mode, value=2.0), error="doesn't take in value",
                   id=f"{mode}-value")
        yield Case(dict(self=g.tensor((2, 3, 4)), pad=[1, 1, 1, 1, 1, 1], mode=mode, value=None), error="not supported",
                   id=f"{mode}-too-many")
        yield Case(dict(self=g.tensor((5,)), pad=[1, 1], mode=mode, value=None), error="not supported", id=f"{mode}-1d")
    yield Case(dict(self=g.tensor((3, 5)), pad=[5, 1], mode="reflect", value=None), error="less than the corresponding",
               id="reflect-too-wide")
    yield Case(dict(self=g.tensor((3, 5)), pad=[6, 1], mode="circular", value=None), error="wrapping around more than once",
               id="circular-too-wide")
    yield Case(dict(self=g.tensor((3, 4)), pad=[-2, -2], mode="replicate", value=None), error="too small",
               id="replicate-to-empty")
    yield Case(dict(self=g.tensor((1, 3, 4)), pad=[-2, 2, -2, -1], mode="reflect", value=None), id="reflect-one-dim-empty")
    yield Case(dict(self=g.tensor((1, 3, 4)), pad=[1, -2, -3, 0], mode="replicate", value=None),
               id="replicate-one-dim-empty")
    yield Case(dict(self=g.tensor((2, 3)), pad=[-4, 2], mode="constant", value=None), error="crops more than", id="constant-over-crop")
    yield Case(dict(self=g.tensor((2, 4)), pad=[-2, 3], mode="circular", value=None), error="wrapping around more than once",
               id="circular-wraps-cropped")
    yield Case(dict(self=g.tensor((3, 4)), pad=[1], mode="constant", value=None), error="divisible by 2", id="odd")
    yield Case(dict(self=g.tensor((3, 4)), pad=[1, 1, 1, 1, 1, 1], mode="constant", value=None), error="two times",
               id="too-long")
    yield Case(dict(self=g.tensor((3, 4)), pad=[1, 1], mode="mirror", value=None), error="Unrecognised padding mode",
               id="bad-mode")


# ---- resizing ---------------------------------------------------------------

def _check_resized(kwargs, ref_kwargs, got, expected):
    """Geometry as ATen's; values where ATen's are defined: the bytes self had,
    read in the new contiguous order (beyond them, and for a self that was not
    contiguous, the memory is unspecified)."""
    kiln = got[0]
    assert kiln.dtype == expected.dtype
    assert tuple(kiln.shape) == tuple(expected.shape), f"shape {tuple(kiln.shape)}, ATen {tuple(expected.shape)}"
    assert kiln.stride() == expected.stride() or kiln.numel() <= 1, f"strides {kiln.stride()}, ATen {expected.stride()}"
    if kwargs["self"].is_contiguous() and kiln.is_contiguous():
        n = min(kwargs["self"].numel(), kiln.numel())
        assert torch.equal(kiln.reshape(-1)[:n], expected.reshape(-1)[:n])


@cases("resize_")
def _resize(g):
    for size in ([3, 4], [2, 2], [12], [0], [2, 3, 4], []):
        yield Case(dict(self=g.tensor((3, 4)), size=size, memory_format=None), self_after=True, check=_check_resized,
                   id=f"{size}")
    yield Case(dict(self=g.tensor((4, 3)).t(), size=[3, 4], memory_format=None), self_after=True, id="same-size-keeps-strides")
    yield Case(dict(self=g.tensor((4, 3)).t(), size=[3, 4], memory_format=torch.contiguous_format), self_after=True,
               check=_check_resized, id="same-size-restrided")
    yield Case(dict(self=g.tensor((3, 4)), size=[2, 3, 2, 2], memory_format=torch.channels_last), self_after=True,
               check=_check_resized, id="channels-last")
    yield Case(dict(self=g.tensor((3, 4), torch.int16), size=[5, 5], memory_format=None), self_after=True,
               check=_check_resized, id="grow-int16")
    yield Case(dict(self=g.tensor((3, 4)), size=[2, -1], memory_format=None), error="negative", id="negative")
    yield Case(dict(self=g.tensor((3, 4)), size=[2, 3], memory_format=torch.channels_last), error="rank 4", id="bad-rank")
    yield Case(dict(self=g.tensor((3, 4)), size=[2, 3], memory_format=torch.preserve_format), error="preserve",
               id="preserve")


@cases("resize_as_")
def _resize_as(g):
    cl = g.tensor((2, 3, 2, 2)).contiguous(memory_format=torch.channels_last)
    yield Case(dict(self=g.tensor((3, 4)), the_template=g.tensor((2, 6)), memory_format=None), self_after=True,
               check=_check_resized, id="same-numel")
    yield Case(dict(self=g.tensor((3, 4)), the_template=g.tensor((5,)), memory_format=None), self_after=True,
               check=_check_resized, id="shrink")
    yield Case(dict(self=g.tensor((3, 4)), the_template=cl, memory_format=None), self_after=True, check=_check_resized,
               id="template-layout-ignored")
    yield Case(dict(self=g.tensor((3, 4)), the_template=cl, memory_format=torch.preserve_format), self_after=True,
               check=_check_resized, id="preserve-channels-last")
    yield Case(dict(self=g.tensor((3, 4), torch.float64), the_template=g.tensor((4, 5), torch.int8),
                    memory_format=torch.contiguous_format), self_after=True, check=_check_resized, id="grow")


@cases("set__source_Tensor")
def _set(g):
    yield Case(dict(self=g.tensor((2,)), source=g.tensor((3, 4))), self_after=True, alias="source", id="plain")
    yield Case(dict(self=g.tensor((5, 5)), source=g.tensor((4, 3)).t()), self_after=True, alias="source", id="transposed")
    yield Case(dict(self=g.tensor((2,), torch.complex64), source=g.tensor((), torch.complex64)), self_after=True,
               alias="source", id="scalar")
    yield Case(dict(self=g.tensor((2,), torch.int32), source=g.tensor((0, 3), torch.int32)), self_after=True,
               id="empty")
    # ATen keeps self's dtype and reads source's offset in self's elements, so
    # only the layout with offset 0 gives the reference (a clone) the same bytes.
    yield Case(dict(self=g.tensor((2,)), source=g.tensor((3,), torch.float64)), self_after=True, alias="source",
               layouts=False, id="reinterprets-dtype")
