"""Indexing: nonzero, masked select/scatter, advanced indexing and index_put, scatter and its reductions,
index_reduce, repeat_interleave, cat, embedding bags, segment_reduce."""

import torch

from compare import assert_same
from op_case import FLOATS, INTS, COMPLEX, Case, cases

ALL = FLOATS + INTS + COMPLEX + (torch.bool,)


def _short(dt):
    return str(dt)[6:]


def _perm_index(g, shape, dim, size):
    """int64 index of `shape` whose entries along `dim` are distinct values in [0, size) (no duplicate targets)."""
    full = list(shape)
    full[dim] = size
    return torch.rand(full, generator=g.g).argsort(dim=dim).narrow(dim, 0, shape[dim]).contiguous()


def _sparse(g, shape, dtype):
    """Values with about half of them zero."""
    x = g.tensor(shape, dtype)
    keep = g.tensor(shape, torch.bool)
    return torch.where(keep, x, torch.zeros((), dtype=dtype))


@cases("nonzero")
def _nonzero(g):
    for dt in ALL:
        yield Case(dict(self=_sparse(g, (3, 5), dt)), id=_short(dt))
    x = torch.tensor([0.0, float("nan"), -0.0, 1.0, float("inf")])
    yield Case(dict(self=x), id="nan-negzero")
    yield Case(dict(self=_sparse(g, (2, 3, 4), torch.float32)), id="3d")
    yield Case(dict(self=g.tensor((2, 0, 3))), id="empty")
    yield Case(dict(self=torch.zeros(4, 3)), id="all-zero")
    yield Case(dict(self=torch.tensor(2.0)), id="scalar-nonzero")
    yield Case(dict(self=torch.tensor(0)), id="scalar-zero")


@cases("nonzero_static")
def _nonzero_static(g):
    for dt in (torch.float32, torch.int64, torch.bool, torch.bfloat16, torch.complex64):
        yield Case(dict(self=_sparse(g, (4, 5), dt), size=6, fill_value=-1), id=f"{_short(dt)}-truncate")
    yield Case(dict(self=_sparse(g, (3, 4), torch.float32), size=20, fill_value=-7), id="pad")
    yield Case(dict(self=_sparse(g, (7,), torch.int32), size=7, fill_value=0), id="1d")
    yield Case(dict(self=_sparse(g, (3, 4), torch.float32), size=0, fill_value=-1), id="size0")
    yield Case(dict(self=g.tensor((0, 3)), size=2, fill_value=5), id="empty")
    yield Case(dict(self=torch.tensor(1.0), size=3, fill_value=-1), id="scalar")
    yield Case(dict(self=g.tensor((3,)), size=-1, fill_value=-1), error="'size' is -1", id="bad-size")


@cases("masked_select")
def _masked_select(g):
    for dt in ALL:
        yield Case(dict(self=g.tensor((3, 4), dt), mask=g.tensor((3, 4), torch.bool)), id=_short(dt))
    yield Case(dict(self=g.tensor((3, 4)), mask=g.tensor((4,), torch.bool)), id="mask-broadcast")
    yield Case(dict(self=g.tensor((4, 1)), mask=g.tensor((2, 4, 3), torch.bool)), id="both-broadcast")
    yield Case(dict(self=torch.tensor(1.5), mask=g.tensor((5,), torch.bool)), id="scalar-self")
    yield Case(dict(self=g.tensor((0, 3)), mask=g.tensor((3,), torch.bool)), id="empty")
    yield Case(dict(self=g.tensor((3, 4)), mask=g.tensor((3, 4), torch.uint8, 0, 2)), error="expected bool",
               id="uint8-mask")
    yield Case(dict(self=g.tensor((3, 4)), mask=g.tensor((3,), torch.bool)), error="does not broadcast",
               id="bad-shape")


@cases("masked_scatter")
def _masked_scatter(g):
    for dt in ALL:
        yield Case(dict(self=g.tensor((3, 4), dt), mask=g.tensor((3, 4), torch.bool), source=g.tensor((12,), dt)),
                   id=_short(dt))
    yield Case(dict(self=g.tensor((3, 4)), mask=g.tensor((4,), torch.bool), source=g.tensor((4, 5))),
               id="mask-broadcast-2d-source")
    yield Case(dict(self=g.tensor((4,)), mask=g.tensor((3, 4), torch.bool), source=g.tensor((20,))),
               id="self-broadcast")
    yield Case(dict(self=torch.tensor(2.0), mask=torch.tensor(True), source=torch.tensor([7.0, 8.0])), id="scalar")
    yield Case(dict(self=g.tensor((0, 4)), mask=g.tensor((4,), torch.bool), source=g.tensor((3,))), id="empty")
    yield Case(dict(self=g.tensor((3, 4)), mask=torch.ones(3, 4, dtype=torch.bool), source=g.tensor((11,))),
               error="fewer than the mask's 12", id="short-source")
    yield Case(dict(self=g.tensor((3, 4)), mask=g.tensor((3, 4), torch.bool), source=g.tensor((12,), torch.float64)),
               error="'source' has dtype float64", id="source-dtype")
    yield Case(dict(self=g.tensor((3, 4)), mask=g.tensor((3, 4), torch.uint8, 0, 2), source=g.tensor((12,))),
               error="expected bool", id="uint8-mask")


@cases("index_Tensor")
def _index(g):
    x = g.tensor((3, 4, 5))
    for dt in ALL:
        yield Case(dict(self=g.tensor((4, 5), dt), indices=[g.index((3,), 4)]), id=_short(dt))
    i2 = torch.tensor([0, 2, 2, -1])
    yield Case(dict(self=x, indices=[None, g.index((2, 3), 4)]), id="slice-then-index")
    yield Case(dict(self=x, indices=[i2.int()]), id="int32-negative")
    yield Case(dict(self=x, indices=[g.index((2, 1), 3), g.index((3,), 4)]), id="broadcast-adjacent")
    yield Case(dict(self=x, indices=[g.index((2,), 3), None, g.index((2,), 5)]), id="non-adjacent-to-front")
    yield Case(dict(self=x, indices=[None, g.index((2,), 4), g.index((1,), 5)]), id="adjacent-in-middle")
    yield Case(dict(self=g.tensor((2, 3, 4, 5)), indices=[None, g.index((2,), 3), None, g.index((2, 1), 5)]),
               id="non-adjacent-4d")
    yield Case(dict(self=x, indices=[g.tensor((3, 4), torch.bool)]), id="bool-mask-2d")
    yield Case(dict(self=x, indices=[None, g.tensor((4,), torch.bool)]), id="bool-mask-middle")
    yield Case(dict(self=x, indices=[g.tensor((3,), torch.bool), None, g.index((1,), 5)]), id="mask-and-index")
    yield Case(dict(self=x, indices=[torch.tensor(1), torch.tensor(-2)]), id="scalar-indices")
    yield Case(dict(self=x, indices=[torch.zeros(0, dtype=torch.int64)]), id="empty-index")
    yield Case(dict(self=g.tensor((0, 4)), indices=[None, g.index((3,), 4)]), id="empty-self")
    yield Case(dict(self=g.tensor((6,)), indices=[g.index((2, 3), 6)]), id="1d-self-2d-index")
    for perm, idx in (((2, 0, 1), [None, g.index((2,), 3)]), ((2, 0, 1), [g.index((2,), 5)]),
                      ((1, 0, 2), [None, g.index((2,), 3)]), ((1, 2, 0), [g.index((2,), 4), None, g.index((2,), 3)]),
                      ((2, 1, 0), [None, g.index((2, 3), 4).t()]), ((0, 2, 1), [None, g.tensor((5,), torch.bool)])):
        yield Case(dict(self=x.permute(perm), indices=idx), id=f"permuted-{''.join(map(str, perm))}-{len(idx)}",
                   layouts=False)
    yield Case(dict(self=x, indices=[g.tensor((3, 4), torch.uint8, 0, 2)]), id="uint8-mask")
    yield Case(dict(self=x, indices=[torch.tensor([3])]), error="index 3 is out of bounds for dimension 0 with size 3",
               id="out-of-range")
    yield Case(dict(self=x, indices=[None, torch.tensor([-5])]),
               error="index -5 is out of bounds for dimension 1 with size 4", id="negative-out-of-range")
    yield Case(dict(self=x, indices=[g.index((2,), 3), g.index((3,), 4)]), error="could not be broadcast",
               id="bad-broadcast")
    yield Case(dict(self=x, indices=[None, None, None, g.index((1,), 1)]), error="too many indices", id="too-many")
    yield Case(dict(self=x, indices=[g.tensor((3, 5), torch.bool)]), error="does not match the shape",
               id="bad-mask-shape")
    yield Case(dict(self=x, indices=[g.tensor((2,), torch.float32)]), error="must be int64, int32, bool or uint8",
               id="float-index")


@cases("index_put")
def _index_put(g):
    x = g.tensor((3, 4, 5))
    for dt in ALL:
        s = g.tensor((5, 3), dt)
        yield Case(dict(self=s, indices=[_perm_index(g, (3,), 0, 5)], values=g.tensor((3, 3), dt), accumulate=False),
                   id=f"{_short(dt)}-set")
        yield Case(dict(self=s, indices=[g.index((6,), 5)], values=g.tensor((6, 3), dt), accumulate=True),
                   id=f"{_short(dt)}-accumulate", rtol=2e-2 if dt in (torch.float16, torch.bfloat16) else None)
    yield Case(dict(self=x, indices=[None, _perm_index(g, (3,), 0, 4)], values=g.tensor((5,)), accumulate=False),
               id="broadcast-values")
    yield Case(dict(self=x, indices=[torch.tensor([0, -1]), None, torch.tensor([1, 4])], values=g.tensor((2, 4)),
                    accumulate=False), id="non-adjacent")
    yield Case(dict(self=x, indices=[g.tensor((3, 4), torch.bool)], values=torch.tensor(9.0), accumulate=False),
               id="mask-scalar-value")
    yield Case(dict(self=x, indices=[torch.tensor([1, 1, 1, 2])], values=torch.ones(4, 4, 5), accumulate=True),
               id="accumulate-duplicates")
    yield Case(dict(self=x.transpose(0, 2), indices=[torch.tensor([0, 3])], values=g.tensor((2, 4, 3)),
                    accumulate=False), id="transposed-self", layouts=False)
    yield Case(dict(self=torch.tensor(1.0), indices=[torch.tensor(True)], values=torch.tensor(3.0), accumulate=False),
               error="0-d boolean", id="0d-mask")
    yield Case(dict(self=x, indices=[torch.tensor([3])], values=torch.ones(5), accumulate=True),
               error="index 3 is out of bounds", id="out-of-range")
    yield Case(dict(self=x, indices=[torch.tensor([0])], values=torch.ones(5, dtype=torch.float64), accumulate=False),
               error="'values' has dtype float64", id="values-dtype")
    yield Case(dict(self=x, indices=[torch.tensor([0, 1])], values=torch.ones(3, 4, 5), accumulate=False),
               error="cannot be broadcast", id="values-shape")


def _scatter_inputs(g, dt, shape=(4, 5), ishape=(3, 4), dim=0):
    self = g.tensor(shape, dt)
    index = _perm_index(g, ishape, dim, shape[dim])
    src = g.tensor((ishape[0] + 1, ishape[1] + 1), dt)
    return self, index, src


@cases("scatter_src_out")
def _scatter_src(g):
    for dt in ALL:
        self, index, src = _scatter_inputs(g, dt)
        yield Case(dict(self=self, dim=0, index=index, src=src, out=torch.empty_like(self)), id=_short(dt))
    self, index, src = _scatter_inputs(g, torch.float32, (4, 5), (4, 3), 1)
    yield Case(dict(self=self, dim=-1, index=index, src=src, out=torch.empty_like(self)), id="dim-1")
    self = g.tensor((2, 3, 4))
    yield Case(dict(self=self, dim=1, index=_perm_index(g, (2, 2, 3), 1, 3).int(), src=g.tensor((2, 3, 4)),
                    out=torch.empty_like(self)), id="3d-int32-index")
    yield Case(dict(self=torch.tensor(1.0), dim=0, index=torch.tensor(0), src=torch.tensor(5.0),
                    out=torch.empty(())), id="scalar")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(0, dtype=torch.int64), src=g.tensor((2, 3)),
                    out=torch.empty(3, 4)), id="empty-index")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([[3]]), src=g.tensor((2, 3)),
                    out=torch.empty(3, 4)), error="index 3 is out of bounds for dimension 0 with size 3", id="oob")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([[-1]]), src=g.tensor((2, 3)),
                    out=torch.empty(3, 4)), error="index -1 is out of bounds", id="negative")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(2, 5, dtype=torch.int64), src=g.tensor((2, 6)),
                    out=torch.empty(3, 4)), error="must be no larger than self", id="index-too-big")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(2, 4, dtype=torch.int64), src=g.tensor((2, 3)),
                    out=torch.empty(3, 4)), error="no larger than src", id="src-too-small")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(2, dtype=torch.int64), src=g.tensor((2, 3)),
                    out=torch.empty(3, 4)), error="dimensions", id="index-rank")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(1, 1, dtype=torch.int64),
                    src=g.tensor((2, 3), torch.float64), out=torch.empty(3, 4)), error="'src' has dtype float64",
               id="src-dtype")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(1, 1), src=g.tensor((2, 3)),
                    out=torch.empty(3, 4)), error="'index' has dtype float32", id="float-index")
    yield Case(dict(self=g.tensor((3, 4)), dim=2, index=torch.zeros(1, 1, dtype=torch.int64), src=g.tensor((2, 3)),
                    out=torch.empty(3, 4)), error="out of range", id="bad-dim")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(1, 1, dtype=torch.int64), src=g.tensor((2, 3)),
                    out=torch.empty(3, 4, dtype=torch.float64)), error="'out' has dtype float64", id="out-dtype")


@cases("scatter_value_out")
def _scatter_value(g):
    for dt in ALL:
        self, index, _ = _scatter_inputs(g, dt)
        value = 1.0 if dt == torch.bool else 3.5
        yield Case(dict(self=self, dim=0, index=index, value=value, out=torch.empty_like(self)), id=_short(dt))
    self, index, _ = _scatter_inputs(g, torch.bool)
    yield Case(dict(self=self, dim=0, index=index, value=0.25, out=torch.empty_like(self)), id="bool-fraction")
    self, index, _ = _scatter_inputs(g, torch.int32)
    yield Case(dict(self=self, dim=0, index=index, value=-2.75, out=torch.empty_like(self)), id="int-truncates")
    self, index, _ = _scatter_inputs(g, torch.float32, (4, 5), (4, 3), 1)
    yield Case(dict(self=self, dim=1, index=index, value=float("-inf"), out=torch.empty_like(self)), id="dim1-inf")
    yield Case(dict(self=g.tensor((3, 4)), dim=1, index=torch.tensor([[4]]), value=1.0, out=torch.empty(3, 4)),
               error="index 4 is out of bounds for dimension 1 with size 4", id="oob")
    yield Case(dict(self=g.tensor((3, 4), torch.int8), dim=0, index=torch.tensor([[0]]), value=300.0,
                    out=torch.empty(3, 4, dtype=torch.int8)), error="cannot be converted to int8", id="overflow")


@cases("scatter_reduce_two_out")
def _scatter_reduce(g):
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            for dt in (torch.float32, torch.float64, torch.int64, torch.int32, torch.float16, torch.bfloat16):
                self = g.tensor((4, 5), dt, low=0.5, high=1.5) if dt.is_floating_point else g.tensor((4, 5), dt, -5, 6)
                src = g.tensor((6, 5), dt, low=0.5, high=1.5) if dt.is_floating_point else g.tensor((6, 5), dt, -5, 6)
                index = g.index((6, 4), 4)
                lowp = dt in (torch.float16, torch.bfloat16)
                yield Case(dict(self=self, dim=0, index=index, src=src, reduce=reduce, include_self=include_self,
                                out=torch.empty_like(self)), id=f"{reduce}-{int(include_self)}-{_short(dt)}",
                           rtol=3e-2 if lowp else None, atol=3e-2 if lowp else None)
    # One-byte and two-byte integers fold through a CAS of the 32-bit word that holds them (on CUDA); many
    # duplicate targets, so neighbours in one word race.
    for i, reduce in enumerate(("sum", "prod", "mean", "amax", "amin")):
        for dt in (torch.int8, torch.uint8, torch.int16):
            self, src = g.tensor((3, 8), dt, -4, 5), g.tensor((6, 8), dt, -4, 5)
            yield Case(dict(self=self, dim=0, index=g.index((6, 8), 3), src=src, reduce=reduce,
                            include_self=i % 2 == 0, out=torch.empty_like(self)), id=f"{reduce}-{_short(dt)}")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(0, 4, dtype=torch.int64), src=g.tensor((2, 4)),
                    reduce="mean", include_self=False, out=torch.empty(3, 4)), id="empty-index-mean")
    for reduce in ("sum", "prod", "amax"):
        self, src = g.tensor((3, 4), torch.bool), g.tensor((3, 4), torch.bool)
        yield Case(dict(self=self, dim=1, index=g.index((3, 4), 4), src=src, reduce=reduce, include_self=True,
                        out=torch.empty_like(self)), id=f"bool-{reduce}")
    for reduce in ("sum", "prod", "mean"):
        self, src = g.tensor((3, 4), torch.complex64), g.tensor((3, 4), torch.complex64)
        yield Case(dict(self=self, dim=-1, index=g.index((3, 4), 4), src=src, reduce=reduce, include_self=False,
                        out=torch.empty_like(self)), id=f"complex-{reduce}", rtol=1e-4, atol=1e-4)
    nan_src = torch.tensor([[1.0, float("nan")], [2.0, 3.0]])
    for reduce in ("amax", "amin"):
        yield Case(dict(self=torch.zeros(2, 2), dim=0, index=torch.tensor([[0, 0], [0, 0]]), src=nan_src,
                        reduce=reduce, include_self=True, out=torch.empty(2, 2)), id=f"nan-{reduce}")
    yield Case(dict(self=g.tensor((3, 4), torch.int64), dim=0, index=torch.tensor([[0, 0], [0, 0]]),
                    src=torch.tensor([[-3, 5], [-4, 2]]), reduce="mean", include_self=False,
                    out=torch.empty(3, 4, dtype=torch.int64)), id="int-mean-floors")
    yield Case(dict(self=g.tensor((2, 3, 4)), dim=2, index=g.index((2, 3, 6), 4), src=g.tensor((2, 3, 6)),
                    reduce="sum", include_self=True, out=torch.empty(2, 3, 4)), id="3d-last-dim")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=g.index((2, 2), 3), src=g.tensor((2, 2)), reduce="max",
                    include_self=True, out=torch.empty(3, 4)), id="max-alias")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=g.index((2, 2), 3), src=g.tensor((2, 2)), reduce="median",
                    include_self=True, out=torch.empty(3, 4)), error="expected sum, prod, mean, amax or amin",
               id="bad-reduce")
    yield Case(dict(self=g.tensor((3, 4), torch.bool), dim=0, index=g.index((2, 2), 3),
                    src=g.tensor((2, 2), torch.bool), reduce="mean", include_self=True,
                    out=torch.empty(3, 4, dtype=torch.bool)), error="not supported for bool", id="bool-mean")
    yield Case(dict(self=g.tensor((3, 4), torch.complex64), dim=0, index=g.index((2, 2), 3),
                    src=g.tensor((2, 2), torch.complex64), reduce="amax", include_self=True,
                    out=torch.empty(3, 4, dtype=torch.complex64)), error="not supported for complex64",
               id="complex-amax")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([[0, 7]]), src=g.tensor((2, 2)), reduce="sum",
                    include_self=True, out=torch.empty(3, 4)), error="index 7 is out of bounds", id="oob")


@cases("index_reduce")
def _index_reduce(g):
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            for dt in (torch.float32, torch.float64, torch.int64, torch.int16, torch.bfloat16):
                self = g.tensor((4, 3), dt, low=0.5, high=1.5) if dt.is_floating_point else g.tensor((4, 3), dt, -5, 6)
                src = g.tensor((5, 3), dt, low=0.5, high=1.5) if dt.is_floating_point else g.tensor((5, 3), dt, -5, 6)
                lowp = dt == torch.bfloat16
                yield Case(dict(self=self, dim=0, index=g.index((5,), 4), source=src, reduce=reduce,
                                include_self=include_self), id=f"{reduce}-{int(include_self)}-{_short(dt)}",
                           rtol=3e-2 if lowp else None, atol=3e-2 if lowp else None)
    yield Case(dict(self=g.tensor((2, 4, 3)), dim=-2, index=g.index((6,), 4).int(), source=g.tensor((2, 6, 3)),
                    reduce="mean", include_self=True), id="3d-int32-index")
    yield Case(dict(self=g.tensor((3, 4), torch.bool), dim=1, index=g.index((4,), 4),
                    source=g.tensor((3, 4), torch.bool), reduce="amax", include_self=True), id="bool-amax")
    yield Case(dict(self=g.tensor((3, 4), torch.complex128), dim=1, index=g.index((4,), 4),
                    source=g.tensor((3, 4), torch.complex128), reduce="prod", include_self=True), id="complex-prod")
    yield Case(dict(self=torch.tensor(2.0), dim=0, index=torch.tensor([0]), source=torch.tensor(3.0), reduce="prod",
                    include_self=True), id="scalar")
    nan_source = torch.tensor([[1.0, float("nan")], [float("nan"), 3.0], [2.0, 5.0]])
    for reduce in ("amax", "amin"):
        yield Case(dict(self=torch.zeros(2, 2), dim=0, index=torch.tensor([1, 1, 0]), source=nan_source, reduce=reduce,
                        include_self=False), id=f"nan-{reduce}")
    for dt in (torch.int8, torch.uint8):
        yield Case(dict(self=g.tensor((3, 5), dt, -4, 5), dim=1, index=g.index((7,), 5),
                        source=g.tensor((3, 7), dt, -4, 5), reduce="mean", include_self=True), id=f"mean-{_short(dt)}")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.zeros(0, dtype=torch.int64), source=g.tensor((0, 4)),
                    reduce="amax", include_self=True), id="empty-index")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([3]), source=g.tensor((1, 4)), reduce="prod",
                    include_self=True), error="index 3 is out of bounds for dimension 0 with size 3", id="oob")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([-1]), source=g.tensor((1, 4)), reduce="prod",
                    include_self=True), error="index -1 is out of bounds", id="negative")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([0, 1]), source=g.tensor((3, 4)),
                    reduce="prod", include_self=True), error="has 2 elements", id="index-count")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([0]), source=g.tensor((1, 5)), reduce="prod",
                    include_self=True), error="must match self's shape", id="source-shape")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([0]), source=g.tensor((1, 4)), reduce="sum",
                    include_self=True), error="expected prod, mean, amax or amin", id="sum-refused")
    yield Case(dict(self=g.tensor((3, 4)), dim=0, index=torch.tensor([[0]]), source=g.tensor((1, 4)), reduce="prod",
                    include_self=True), error="expected a vector", id="2d-index")


@cases("repeat_interleave_Tensor")
def _repeat_interleave(g):
    for dt in (torch.int64, torch.int32):
        yield Case(dict(repeats=g.tensor((6,), dt, 0, 4), output_size=None), id=_short(dt))
    yield Case(dict(repeats=torch.tensor([2, 0, 3]), output_size=5), id="output-size")
    yield Case(dict(repeats=torch.zeros(0, dtype=torch.int64), output_size=None), id="empty")
    yield Case(dict(repeats=torch.tensor([0, 0]), output_size=None), id="all-zero")
    yield Case(dict(repeats=torch.tensor([2, -1]), output_size=None), error="negative value -1", id="negative")
    yield Case(dict(repeats=torch.tensor([2, 1]), output_size=4), error="'output_size' is 4", id="bad-output-size")
    yield Case(dict(repeats=torch.tensor(3), output_size=None), error="expected 1", id="0d")
    yield Case(dict(repeats=torch.tensor([1.0]), output_size=None), error="expected int64 or int32", id="float")


@cases("cat")
def _cat(g):
    for dt in ALL:
        yield Case(dict(tensors=[g.tensor((2, 3), dt), g.tensor((4, 3), dt)], dim=0), id=_short(dt))
    yield Case(dict(tensors=[g.tensor((2, 3, 4)), g.tensor((2, 1, 4)), g.tensor((2, 5, 4))], dim=1), id="3-inputs")
    yield Case(dict(tensors=[g.tensor((2, 3)), g.tensor((2, 2))], dim=-1), id="neg-dim")
    yield Case(dict(tensors=[g.tensor((2, 3), torch.int32), g.tensor((2, 3), torch.float16),
                             g.tensor((1, 3), torch.bool)], dim=0), id="promote-float")
    yield Case(dict(tensors=[g.tensor((2, 3), torch.int8), g.tensor((2, 3), torch.uint8)], dim=1), id="promote-int16")
    yield Case(dict(tensors=[g.tensor((2, 3), torch.float64), g.tensor((2, 3), torch.complex64)], dim=0),
               id="promote-complex128")
    yield Case(dict(tensors=[g.tensor((2, 3), torch.bfloat16), g.tensor((2, 3), torch.float16)], dim=0),
               id="promote-bf16-f16")
    yield Case(dict(tensors=[torch.zeros(0, dtype=torch.float64), g.tensor((2, 3), torch.int32)], dim=1),
               id="legacy-empty-skipped")
    yield Case(dict(tensors=[g.tensor((2, 3)), torch.zeros(0), g.tensor((1, 3))], dim=-2), id="legacy-empty-middle")
    yield Case(dict(tensors=[torch.zeros(0), torch.zeros(0, dtype=torch.int8)], dim=1), id="only-legacy-empty")
    yield Case(dict(tensors=[g.tensor((2, 0, 3)), g.tensor((2, 1, 3))], dim=1), id="empty-part")
    yield Case(dict(tensors=[g.tensor((5,))], dim=0), id="single")
    # More inputs than the CUDA kernel copies in one launch (64), of two dtypes.
    yield Case(dict(tensors=[g.tensor((1, 3), torch.float32 if i % 3 else torch.int32) for i in range(70)], dim=0),
               id="many-inputs", layouts=False)
    yield Case(dict(tensors=[g.tensor((2, 3, 4, 5)).to(memory_format=torch.channels_last),
                             g.tensor((2, 1, 4, 5)).to(memory_format=torch.channels_last)], dim=1),
               id="channels-last", layouts=False)
    yield Case(dict(tensors=[g.tensor((2, 3, 4, 5)).to(memory_format=torch.channels_last),
                             g.tensor((2, 1, 4, 5))], dim=1), id="mixed-formats", layouts=False)
    yield Case(dict(tensors=[g.tensor((3, 4)).t(), g.tensor((4, 3))], dim=0), id="transposed-input", layouts=False)
    yield Case(dict(tensors=[g.tensor((2, 3)), g.tensor((2, 4))], dim=0), error="Expected size 3 but got size 4",
               id="size-mismatch")
    yield Case(dict(tensors=[g.tensor((2, 3)), g.tensor((3,))], dim=0), error="same number of dimensions",
               id="rank-mismatch")
    yield Case(dict(tensors=[torch.tensor(1.0)], dim=0), error="zero-dimensional", id="0d")
    yield Case(dict(tensors=[], dim=0), error="empty list", id="no-tensors")
    yield Case(dict(tensors=[g.tensor((2, 3))], dim=2), error="out of range", id="bad-dim")


def _bag_reference(op):
    """ATen's CPU kernel reads indices and offsets as contiguous (its callers make them so); weight and
    per_sample_weights are read through their strides."""
    def ref(**kw):
        kw = dict(kw)
        kw["indices"] = kw["indices"].contiguous()
        kw["offsets"] = kw["offsets"].contiguous()
        return op(**kw)
    return ref


def _check_include_last(kwargs, ref_kwargs, got, expected):
    """include_last_offset: ATen's CUDA kernel makes bag_size one entry per offset and never writes the
    entry past the last bag (its CPU kernel makes one per bag); compare bag_size on the bags only."""
    bags = kwargs["offsets"].numel() - 1
    for i in (0, 1, 3):
        assert_same(got[i], expected[i], f"result {i}")
    assert got[2].dtype == expected[2].dtype and got[2].shape == expected[2].shape, \
        f"bag_size: {got[2].dtype}{tuple(got[2].shape)}, ATen {expected[2].dtype}{tuple(expected[2].shape)}"
    assert torch.equal(got[2][:bags], expected[2][:bags]), f"bag_size {got[2]}, ATen {expected[2]}"


def _bag_cases(g, op):
    ref = _bag_reference(op)

    def bag(weight, indices, offsets, mode, psw=None, ilo=False, pad=-1, **kw):
        return Case(dict(weight=weight, indices=indices, offsets=offsets, scale_grad_by_freq=False, mode=mode,
                         sparse=False, per_sample_weights=psw, include_last_offset=ilo, padding_idx=pad),
                    reference=ref, **kw)

    idx = torch.tensor([0, 2, 4, 1, 1, 3, 6, 5])
    offs = torch.tensor([0, 2, 2, 5])
    for mode in (0, 1, 2):
        for dt in FLOATS:
            w = g.distinct((7, 3), dt)
            tol = dict(rtol=2e-2, atol=2e-2) if dt in (torch.float16, torch.bfloat16) else {}
            yield bag(w, idx, offs, mode, id=f"mode{mode}-{_short(dt)}", **tol)
        w = g.tensor((7, 4))
        yield bag(w, idx.int(), offs.int(), mode, id=f"mode{mode}-int32")
        yield bag(w, idx.int(), offs, mode, id=f"mode{mode}-mixed-index-dtypes")
        yield bag(w, idx, torch.tensor([0, 3, 3, 8]), mode, ilo=True, check=_check_include_last,
                  id=f"mode{mode}-include-last")
        # The last offset short of the end: ATen's CUDA kernel runs the last bag to the end anyway.
        yield bag(w, idx, torch.tensor([0, 2, 5]), mode, ilo=True, check=_check_include_last,
                  id=f"mode{mode}-include-last-short")
        yield bag(w, idx.int(), torch.tensor([0, 3, 8], dtype=torch.int32), mode, ilo=True, pad=3,
                  check=_check_include_last, id=f"mode{mode}-include-last-int32-padding")
        # A bag of padding only, and padding_idx 0.
        yield bag(w, torch.tensor([0, 0, 2, 0, 5]), torch.tensor([0, 2, 4]), mode, pad=0, id=f"mode{mode}-padding-only-bag")
        # 2-d input as nn.functional.embedding_bag passes it: flattened, with one bag per row.
        rows = g.index((4, 3), 7)
        yield bag(w, rows.reshape(-1), torch.arange(0, 12, 3), mode, id=f"mode{mode}-fixed-size-bags")
        yield bag(w, idx, offs, mode, pad=1, id=f"mode{mode}-padding")
        yield bag(w.double(), idx, offs, mode, pad=4, id=f"mode{mode}-padding-f64")
        yield bag(w, torch.zeros(0, dtype=torch.int64), torch.tensor([0, 0]), mode, id=f"mode{mode}-empty-bags")
    w = g.tensor((7, 4))
    yield bag(w, idx, offs, 0, psw=g.tensor((8,)), id="per-sample-weights")
    yield bag(w.double(), idx, offs, 0, psw=g.tensor((8,), torch.float64), id="per-sample-weights-f64")
    yield bag(w, idx, offs, 0, psw=g.tensor((8,)), pad=2, id="per-sample-weights-padding")
    yield bag(g.tensor((7, 4)).t().contiguous().t(), idx, offs, 0, id="column-major-weight", layouts=False)
    yield bag(w, torch.tensor([0, 7]), torch.tensor([0]), 0, error="index 7 at position 1 is out of range",
              id="oob-index")
    yield bag(w, torch.tensor([0, -1]), torch.tensor([0]), 1, error="index -1", id="negative-index")
    yield bag(w, idx, torch.tensor([1, 3]), 0, error="offsets[0] is 1", id="bad-first-offset")
    yield bag(w, idx, torch.tensor([0, 4, 2]), 0, error="non-decreasing", id="decreasing-offsets")
    yield bag(w, idx, offs, 1, psw=g.tensor((8,)), error="only supported with mode sum", id="psw-mean")
    yield bag(w, idx.float(), offs, 0, error="'indices' has dtype float32", id="float-indices")
    yield bag(w.int(), idx, offs, 0, error="'weight' has dtype int32", id="int-weight")
    yield bag(w, idx, offs, 3, error="argument 'mode' is 3", id="bad-mode")
    yield bag(w, idx.reshape(2, 4), offs, 0, error="expected 1-d", id="2d-indices")
    yield bag(w, idx.int(), offs, 0, psw=g.tensor((8,)), id="per-sample-weights-int32")
    yield bag(w, torch.tensor([0, 1, 0, 9]), torch.tensor([0, 2]), 2, error="index 9 at position 3", id="oob-index-max")
    wn = g.tensor((7, 4))
    wn[2, 0] = float("nan")
    wn[4, 1] = float("nan")
    yield bag(wn, torch.tensor([0, 2, 4, 2, 1, 4]), torch.tensor([0, 2, 4]), 2, id="max-nan")
    yield bag(wn, torch.tensor([0, 2, 4, 2, 1, 4]), torch.tensor([0, 2, 4]), 0, id="sum-nan")
    tied = torch.tensor([[1.0, 2.0], [1.0, 2.0], [0.5, 3.0]])
    yield bag(tied, torch.tensor([0, 1, 2, 1, 0]), torch.tensor([0, 3]), 2, id="max-ties")


@cases("_embedding_bag")
def _embedding_bag(g):
    yield from _bag_cases(g, torch.ops.aten._embedding_bag.default)


@cases("_embedding_bag_forward_only")
def _embedding_bag_forward_only(g):
    yield from _bag_cases(g, torch.ops.aten._embedding_bag_forward_only.default)


@cases("segment_reduce")
def _segment_reduce(g):
    lengths = torch.tensor([2, 0, 3, 1])
    for reduce in ("sum", "mean", "max", "min", "prod"):
        for dt in FLOATS:
            tol = dict(rtol=2e-2, atol=2e-2) if dt in (torch.float16, torch.bfloat16) else {}
            yield Case(dict(data=g.tensor((6, 3), dt), reduce=reduce, lengths=lengths, indices=None, offsets=None,
                            axis=0, unsafe=False, initial=None), id=f"{reduce}-{_short(dt)}", **tol)
        yield Case(dict(data=g.tensor((6, 3)), reduce=reduce, lengths=lengths.int(), indices=None, offsets=None,
                        axis=0, unsafe=False, initial=1.5), id=f"{reduce}-initial")
        yield Case(dict(data=g.tensor((6,)), reduce=reduce, lengths=None, indices=None,
                        offsets=torch.tensor([0, 2, 2, 5, 6]), axis=0, unsafe=False, initial=None),
                   id=f"{reduce}-offsets")
    yield Case(dict(data=g.tensor((2, 6, 3)), reduce="sum", lengths=torch.tensor([[1, 1, 4], [2, 2, 2]]),
                    indices=None, offsets=None, axis=1, unsafe=False, initial=None), id="batched-lengths")
    yield Case(dict(data=g.tensor((2, 6)), reduce="max", lengths=None, indices=None,
                    offsets=torch.tensor([[0, 1, 6], [0, 3, 6]]), axis=-1, unsafe=False, initial=None),
               id="batched-offsets-neg-axis")
    yield Case(dict(data=g.tensor((6, 2)), reduce="sum", lengths=torch.tensor([2, 0, 3]), indices=None, offsets=None,
                    axis=0, unsafe=True, initial=None), id="unsafe-prefix")
    yield Case(dict(data=torch.tensor([1.0, float("nan"), 3.0, 2.0]), reduce="max", lengths=torch.tensor([3, 1]),
                    indices=None, offsets=None, axis=0, unsafe=False, initial=None), id="nan-max")
    yield Case(dict(data=g.tensor((6, 2)), reduce="sum", lengths=torch.tensor([2, 4]), indices=None,
                    offsets=torch.tensor([0, 1, 3, 6]), axis=0, unsafe=False, initial=None), id="offsets-win")
    yield Case(dict(data=g.tensor((3, 0, 2)), reduce="max", lengths=torch.zeros(3, 2, dtype=torch.int64),
                    indices=None, offsets=None, axis=1, unsafe=False, initial=None), id="empty-axis")
    yield Case(dict(data=g.tensor((2, 7, 3, 2), torch.float16), reduce="prod",
                    offsets=torch.tensor([[0, 3, 3, 7], [0, 1, 5, 7]], dtype=torch.int32), lengths=None,
                    indices=None, axis=1, unsafe=False, initial=None), id="4d-offsets-int32", rtol=2e-2, atol=2e-2)
    # Segments a warp long and more, one of them empty: CUDA reduces these a warp per segment.
    long = g.tensor((300,))
    long[120] = float("nan")
    yield Case(dict(data=g.tensor((300,)), reduce="sum", lengths=torch.tensor([100, 0, 150, 50]), indices=None,
                    offsets=None, axis=0, unsafe=False, initial=None), id="long-1d-sum", rtol=1e-5, atol=1e-4)
    yield Case(dict(data=long, reduce="max", lengths=None, indices=None, offsets=torch.tensor([0, 100, 100, 250, 300]),
                    axis=0, unsafe=False, initial=None), id="long-1d-max-nan")
    yield Case(dict(data=g.tensor((300,), torch.float16), reduce="mean", lengths=torch.tensor([100, 0, 150, 50]),
                    indices=None, offsets=None, axis=0, unsafe=False, initial=0.5), id="long-1d-mean-initial-f16",
               rtol=2e-2, atol=2e-2)
    yield Case(dict(data=g.tensor((2, 200, 1)), reduce="min", lengths=torch.tensor([[200], [150]]), indices=None,
                    offsets=None, axis=1, unsafe=True, initial=None), id="long-rows-unsafe-prefix")
    yield Case(dict(data=g.tensor((6, 2)), reduce="sum", lengths=torch.tensor([2, 0, 3]), indices=None, offsets=None,
                    axis=0, unsafe=False, initial=None), error="exactly unless unsafe", id="lengths-short")
    yield Case(dict(data=g.tensor((6, 2)), reduce="sum", lengths=None, indices=None, offsets=torch.tensor([0, 4, 2, 6]),
                    axis=0, unsafe=True, initial=None), error="non-decreasing", id="offsets-decreasing")
    yield Case(dict(data=g.tensor((6, 2)), reduce="sum", lengths=torch.tensor([2, 5]), indices=None, offsets=None,
                    axis=0, unsafe=True, initial=None), error="sums past", id="lengths-past-end-unsafe")
    yield Case(dict(data=g.tensor((6, 2)), reduce="sum", lengths=torch.tensor([2, -1]), indices=None, offsets=None,
                    axis=0, unsafe=False, initial=None), error="negative value -1", id="negative-length")
    yield Case(dict(data=g.tensor((6, 2)), reduce="sum", lengths=torch.tensor([6]), indices=None, offsets=None,
                    axis=1, unsafe=False, initial=None), error="last dimension", id="axis-mismatch")
    yield Case(dict(data=g.tensor((6, 2)), reduce="sum", lengths=None, indices=torch.tensor([0, 1]), offsets=None,
                    axis=0, unsafe=False, initial=None), error="not supported", id="indices")
    yield Case(dict(data=g.tensor((6,), torch.int64), reduce="sum", lengths=torch.tensor([6]), indices=None,
                    offsets=None, axis=0, unsafe=False, initial=None), error="expected a floating dtype", id="int-data")
    yield Case(dict(data=torch.tensor(1.0), reduce="sum", lengths=torch.tensor([1]), indices=None, offsets=None,
                    axis=0, unsafe=False, initial=None), error="'data' is 0-d", id="0d-data")
    yield Case(dict(data=g.tensor((6,)), reduce="median", lengths=torch.tensor([6]), indices=None, offsets=None,
                    axis=0, unsafe=False, initial=None), error="argument 'reduce'", id="bad-reduce")
