"""Sorting, selection, ordered scans, searching and histograms: logcumsumexp, cummax, cummin,
sort, topk, kthvalue, median, nanmedian, mode, searchsorted, bucketize, histc, histogram,
histogramdd."""

import torch

from compare import assert_same
from op_case import FLOATS, INTS, COMPLEX, Case, cases

NAN = float("nan")
INF = float("inf")
REDUCED = (torch.float16, torch.bfloat16)


def _name(dt):
    return str(dt)[6:]


def _same_picks(self, dim, values, indices):
    """indices point at elements of self equal to values (NaN matching NaN)."""
    if self.dim() == 0:
        assert torch.equal(indices, torch.zeros_like(indices))
        return
    if self.dtype in (torch.uint16, torch.uint32):  # gather lacks the wide unsigned dtypes
        self, values = self.to(torch.int64), values.to(torch.int64)
    elif self.dtype == torch.uint64:
        self, values = self.view(torch.int64), values.view(torch.int64)
    picked = torch.gather(self, dim, indices)
    assert torch.equal(picked, values) or torch.allclose(picked.double(), values.double(), equal_nan=True, rtol=0, atol=0), \
        f"indices pick {picked}, values are {values}"


def _check_sorted_with_ties(dim):
    """Unstable sort: equal values may come in any order; values must match, indices must pick them
    and be a permutation of each line."""
    def check(kwargs, ref_kwargs, got, expected):
        assert_same(got[0], expected[0], "values")
        assert got[1].dtype == torch.int64 and got[1].shape == expected[1].shape
        _same_picks(kwargs["self"], dim, got[0], got[1])
        assert torch.equal(got[1].sort(dim).values, expected[1].sort(dim).values), "indices are not a permutation"
    return check


def _check_topk_any_order(kwargs, ref_kwargs, got, expected):
    """topk(sorted=False): ATen's order is its selection algorithm's; compare the sets."""
    dim = kwargs["dim"]
    largest = kwargs["largest"]
    for g, e in ((got[0], expected[0]),):
        gs = g.sort(dim, descending=largest).values if g.dim() else g
        es = e.sort(dim, descending=largest).values if e.dim() else e
        assert_same(gs, es, "values (as a set)", strides=False)
    assert got[1].dtype == torch.int64 and got[1].shape == expected[1].shape
    _same_picks(kwargs["self"], dim, got[0], got[1])


def _check_mode_ties(kwargs, ref_kwargs, got, expected):
    """Long lines: ATen's position among equal values depends on its introsort; the value is exact."""
    assert_same(got[0], expected[0], "values")
    dim = kwargs["dim"]
    idx = got[1] if kwargs["keepdim"] else got[1].unsqueeze(dim)
    vals = got[0] if kwargs["keepdim"] else got[0].unsqueeze(dim)
    _same_picks(kwargs["self"], dim, vals, idx)


def _check_zero_magnitude_phase(kwargs, ref_kwargs, got, expected):
    """A running log-sum of exp(-inf + i*y) terms is log(0) = -inf, whose imaginary part (a phase
    of zero) is arbitrary: ATen's CPU kernel keeps the first term's, its CUDA kernel the last's.
    Entries with a -inf real part compare on the real part alone; all others exactly."""
    kiln = got[0] if isinstance(got, (tuple, list)) else got
    ref = expected[0] if isinstance(expected, (tuple, list)) else expected
    assert kiln.dtype == ref.dtype and kiln.shape == ref.shape and kiln.stride() == ref.stride()
    undefined = ref.real == -torch.inf
    assert torch.equal(kiln.real == -torch.inf, undefined), f"-inf entries differ: {kiln} vs {ref}"
    assert_same(torch.where(undefined, 0, kiln), torch.where(undefined, 0, ref), "result 0")


# ---------------------------------------------------------------- scans

@cases("logcumsumexp")
def _logcumsumexp(g):
    for dt in FLOATS + COMPLEX:
        yield Case(dict(self=g.tensor((3, 4, 5), dt), dim=1), id=f"{_name(dt)}-dim1")
    yield Case(dict(self=g.tensor((4, 6)) * 30, dim=-1), id="wide-range")
    yield Case(dict(self=g.tensor((3, 7), torch.float64), dim=0), id="dim0")
    yield Case(dict(self=torch.tensor([-INF, -INF, 1.0, INF, 2.0, INF, NAN, 3.0]), dim=0), id="inf-nan")
    yield Case(dict(self=torch.tensor([[INF, INF], [-INF, 0.0]]), dim=1), id="same-infinities")
    c = torch.tensor([complex(1, 2), complex(-INF, 0), complex(3, -1), complex(INF, 1), complex(0, NAN)])
    yield Case(dict(self=c, dim=0), id="complex-inf-nan")
    yield Case(dict(self=torch.tensor([complex(-INF, 0), complex(-INF, 1), complex(2, 1)]), dim=0),
               check=_check_zero_magnitude_phase, id="complex-neg-inf")
    yield Case(dict(self=g.tensor((3, 4)).t(), dim=1), id="transposed")
    yield Case(dict(self=g.tensor((2, 0, 3)), dim=1), id="empty")
    yield Case(dict(self=g.tensor(()), dim=0), id="scalar")
    yield Case(dict(self=g.tensor(()), dim=-1), id="scalar-dim-1")
    yield Case(dict(self=g.tensor((3,), torch.int64), dim=0), error="does not support", id="int")
    yield Case(dict(self=g.tensor((3,), torch.bool), dim=0), error="does not support", id="bool")
    yield Case(dict(self=g.tensor((2, 3)), dim=2), error="out of range", id="bad-dim")


@cases("cummax", "cummin")
def _cum_extreme(g):
    for dt in FLOATS + INTS + (torch.bool,):
        # Integers in a narrow range repeat: ties take the last position, as ATen's kernel.
        x = g.tensor((3, 8, 4), dt, low=-3, high=4) if not dt.is_floating_point else g.tensor((3, 8, 4), dt)
        yield Case(dict(self=x, dim=1), id=f"{_name(dt)}-dim1")
    yield Case(dict(self=g.tensor((4, 5), torch.float32).round(), dim=-1), id="float-ties")
    yield Case(dict(self=torch.tensor([1.0, 3.0, 3.0, NAN, 2.0, NAN, 5.0]), dim=0), id="nan")
    yield Case(dict(self=torch.tensor([[NAN, 1.0, NAN], [-INF, INF, INF]]), dim=1), id="nan-first-inf")
    yield Case(dict(self=g.tensor((5, 3), torch.int32).t(), dim=0), id="transposed")
    yield Case(dict(self=g.tensor((6,), torch.int64), dim=0), id="1d")
    yield Case(dict(self=g.tensor((2, 0, 3)), dim=1), id="empty")
    yield Case(dict(self=g.tensor((2, 0, 3)), dim=2), id="empty-other-dim")
    yield Case(dict(self=g.tensor(()), dim=0), id="scalar")
    yield Case(dict(self=g.tensor((3,), torch.complex64), dim=0), error="does not support", id="complex")
    yield Case(dict(self=g.tensor((2, 3)), dim=-3), error="out of range", id="bad-dim")


# ---------------------------------------------------------------- sort

def _sort_cases(g, stable_kw):
    """Cases for sort / sort.stable; `stable_kw` adds the stable= argument."""
    def kw(**k):
        return dict(**stable_kw, **k)
    for dt in FLOATS + INTS:
        for desc in (False, True):
            yield Case(kw(self=g.distinct((3, 5, 4), dt), dim=1, descending=desc), id=f"{_name(dt)}-desc{int(desc)}")
    yield Case(kw(self=g.distinct((4, 6)), dim=-1, descending=False), id="last-dim")
    yield Case(kw(self=g.distinct((4, 6), torch.float64), dim=0, descending=True), id="dim0")
    yield Case(kw(self=g.distinct((4, 3, 5)).permute(2, 0, 1), dim=1, descending=False), id="permuted-dense")
    yield Case(kw(self=g.distinct((6, 4))[:, :3], dim=0, descending=False), id="non-dense-view")
    for desc in (False, True):
        nan_inf = torch.tensor([3.0, NAN, 1.0, -INF, INF, NAN, 0.0, -2.0])
        yield Case(kw(self=nan_inf, dim=0, descending=desc), check=_check_sorted_with_ties(0), id=f"nan-inf-desc{int(desc)}")
    for dt in (torch.uint16, torch.uint32, torch.uint64):
        yield Case(kw(self=g.distinct((5, 6), torch.int64).abs().to(dt), dim=1, descending=False), id=f"{_name(dt)}",
                   check=_check_sorted_with_ties(1))
    big = torch.tensor([2**63 + 5, 1, 2**64 - 1, 2**62, 0], dtype=torch.uint64)
    yield Case(kw(self=big, dim=0, descending=True), id="uint64-high-bit")
    yield Case(kw(self=g.tensor((2, 0, 3)), dim=1, descending=False), id="empty")
    yield Case(kw(self=g.tensor((0,)), dim=0, descending=True), id="empty-1d")
    yield Case(kw(self=g.tensor(()), dim=0, descending=False), id="scalar")
    yield Case(kw(self=g.tensor(()), dim=-1, descending=True), id="scalar-dim-1")
    yield Case(kw(self=g.tensor((2, 3), torch.complex64), dim=0, descending=False), error="does not support", id="complex")
    yield Case(kw(self=g.tensor((2, 3)), dim=2, descending=False), error="out of range", id="bad-dim")


@cases("sort")
def _sort(g):
    yield from _sort_cases(g, {})
    # Ties: the default sort is not stable in ATen; compare through the check.
    for dt in (torch.float32, torch.int64, torch.bool, torch.int8):
        x = g.tensor((4, 9), dt, low=-2, high=3) if not dt.is_floating_point else g.tensor((4, 9), dt).round()
        for desc in (False, True):
            yield Case(dict(self=x, dim=1, descending=desc), check=_check_sorted_with_ties(1), id=f"ties-{_name(dt)}-desc{int(desc)}")


@cases("sort_stable")
def _sort_stable(g):
    yield from _sort_cases(g, dict(stable=True))
    # stable=True is deterministic with ties: equal elements keep their input order.
    for dt in (torch.float32, torch.float16, torch.int64, torch.int32, torch.bool, torch.uint8):
        x = g.tensor((4, 9, 3), dt, low=0, high=3) if not dt.is_floating_point else g.tensor((4, 9, 3), dt).round()
        for desc in (False, True):
            yield Case(dict(self=x, stable=True, dim=1, descending=desc), id=f"stable-ties-{_name(dt)}-desc{int(desc)}")
    nan_ties = torch.tensor([NAN, 1.0, NAN, 1.0, -INF, 2.0, NAN, -INF])
    for desc in (False, True):
        yield Case(dict(self=nan_ties, stable=True, dim=0, descending=desc), id=f"stable-nan-ties-desc{int(desc)}")
    x = g.tensor((5, 7), torch.int64, low=0, high=2)
    for stable in (None, False):
        yield Case(dict(self=x, stable=stable, dim=1, descending=False), check=_check_sorted_with_ties(1),
                   id=f"stable-{stable}")


# ---------------------------------------------------------------- selection

@cases("topk")
def _topk(g):
    for dt in FLOATS + INTS:
        yield Case(dict(self=g.distinct((3, 10, 4), dt), k=3, dim=1, largest=True, sorted=True), id=f"{_name(dt)}")
    x = g.distinct((5, 12))
    for k in (0, 1, 5, 12):
        for largest in (True, False):
            yield Case(dict(self=x, k=k, dim=-1, largest=largest, sorted=True), id=f"k{k}-largest{int(largest)}")
    yield Case(dict(self=g.distinct((200,)), k=3, dim=0, largest=True, sorted=True), id="partial-sort-path")
    yield Case(dict(self=g.distinct((6, 5)), k=2, dim=0, largest=True, sorted=True), id="dim0")
    yield Case(dict(self=g.distinct((4, 3, 6)).permute(2, 0, 1), k=2, dim=0, largest=False, sorted=True), id="permuted")
    for largest in (True, False):
        yield Case(dict(self=g.distinct((4, 11)), k=5, dim=1, largest=largest, sorted=False),
                   check=_check_topk_any_order, id=f"unsorted-largest{int(largest)}")
        nan = torch.tensor([3.0, NAN, 1.0, -INF, INF, 0.5, -2.0])
        yield Case(dict(self=nan, k=3, dim=0, largest=largest, sorted=True), id=f"nan-inf-largest{int(largest)}")
    yield Case(dict(self=g.tensor(()), k=1, dim=0, largest=True, sorted=True), id="scalar-k1")
    yield Case(dict(self=g.tensor(()), k=0, dim=-1, largest=True, sorted=True), id="scalar-k0")
    yield Case(dict(self=g.tensor((2, 0)), k=0, dim=1, largest=True, sorted=True), id="empty-line-k0")
    yield Case(dict(self=g.tensor((0, 4)), k=2, dim=1, largest=True, sorted=True), id="no-lines")
    yield Case(dict(self=g.tensor((3, 4)), k=5, dim=1, largest=True, sorted=True), error="out of range", id="k-too-big")
    yield Case(dict(self=g.tensor((3, 4)), k=-1, dim=1, largest=True, sorted=True), error="out of range", id="k-negative")
    yield Case(dict(self=g.tensor(()), k=2, dim=0, largest=True, sorted=True), error="out of range", id="scalar-k2")
    yield Case(dict(self=g.tensor((3, 4), torch.bool), k=1, dim=1, largest=True, sorted=True), error="does not support", id="bool")
    yield Case(dict(self=g.tensor((3, 4)), k=1, dim=2, largest=True, sorted=True), error="out of range", id="bad-dim")


@cases("kthvalue")
def _kthvalue(g):
    for dt in FLOATS + INTS:
        yield Case(dict(self=g.distinct((3, 7, 4), dt), k=3, dim=1, keepdim=False), id=f"{_name(dt)}")
    x = g.distinct((4, 9))
    for k in (1, 5, 9):
        for keepdim in (False, True):
            yield Case(dict(self=x, k=k, dim=-1, keepdim=keepdim), id=f"k{k}-keepdim{int(keepdim)}")
    yield Case(dict(self=g.distinct((5, 3, 4)).permute(1, 2, 0), k=2, dim=0, keepdim=True), id="permuted")
    nan = torch.tensor([[3.0, NAN, 1.0, 2.0], [-INF, 0.0, INF, 5.0]])
    for k in (1, 3, 4):
        yield Case(dict(self=nan, k=k, dim=1, keepdim=False), id=f"nan-inf-k{k}")
    yield Case(dict(self=g.tensor((6,), torch.int64).sort().values.unique(), k=1, dim=0, keepdim=False), id="1d")
    yield Case(dict(self=g.distinct((3, 5, 4)), k=5, dim=1, keepdim=False), id="middle-dim-largest")
    yield Case(dict(self=g.distinct((2, 3000)), k=1234, dim=1, keepdim=True), id="long-lines")
    yield Case(dict(self=g.tensor(()), k=1, dim=0, keepdim=False), id="scalar")
    yield Case(dict(self=g.tensor(()), k=1, dim=-1, keepdim=True), id="scalar-keepdim")
    yield Case(dict(self=g.tensor((0, 3)), k=2, dim=1, keepdim=False), id="no-lines")
    yield Case(dict(self=g.tensor((3, 4)), k=0, dim=1, keepdim=False), error="out of range", id="k0")
    yield Case(dict(self=g.tensor((3, 4)), k=5, dim=1, keepdim=False), error="out of range", id="k-too-big")
    yield Case(dict(self=g.tensor((3, 0)), k=1, dim=1, keepdim=False), error="size 0", id="empty-line")
    yield Case(dict(self=g.tensor((3, 4), torch.bool), k=1, dim=1, keepdim=False), error="does not support", id="bool")
    yield Case(dict(self=g.tensor((3, 4), torch.complex64), k=1, dim=1, keepdim=False), error="does not support", id="complex")


@cases("median", "nanmedian")
def _median(g):
    for dt in FLOATS + INTS:
        yield Case(dict(self=g.tensor((3, 5), dt)), id=f"{_name(dt)}-odd")
        yield Case(dict(self=g.tensor((4, 6), dt)), id=f"{_name(dt)}-even")
    yield Case(dict(self=g.tensor((7, 3), torch.int32, low=0, high=3)), id="ties")
    yield Case(dict(self=torch.tensor([4.0, 1.0, 3.0, 2.0])), id="lower-middle")
    yield Case(dict(self=torch.tensor([1.0, NAN, 0.0, 2.0])), id="nan")
    yield Case(dict(self=torch.tensor([1.0, NAN, 0.0, 2.0, NAN, 5.0])), id="nans-even-rest")
    yield Case(dict(self=torch.tensor([NAN, NAN])), id="all-nan")
    yield Case(dict(self=torch.tensor([-INF, INF, 0.0])), id="inf")
    yield Case(dict(self=g.tensor((5, 4)).t()), id="transposed")
    yield Case(dict(self=g.tensor((50, 61))), id="many")
    yield Case(dict(self=torch.tensor([NAN, 2.0, -1.0, NAN, 7.0], dtype=torch.float16)), id="nan-float16")
    yield Case(dict(self=g.tensor(())), id="scalar")
    yield Case(dict(self=g.tensor((), torch.int64)), id="scalar-int")
    for dt in (torch.float32, torch.float16, torch.int32, torch.int64, torch.int16, torch.uint8):
        yield Case(dict(self=torch.zeros((2, 0), dtype=dt)), id=f"empty-{_name(dt)}")
    yield Case(dict(self=g.tensor((3,), torch.bool)), error="does not support", id="bool")
    yield Case(dict(self=g.tensor((3,), torch.complex64)), error="does not support", id="complex")


@cases("mode")
def _mode(g):
    for dt in FLOATS + INTS + (torch.bool,):
        x = g.tensor((3, 9, 4), torch.int64, low=0, high=4).to(dt)
        yield Case(dict(self=x, dim=1, keepdim=False), id=f"{_name(dt)}")
    x = g.tensor((5, 12), torch.int64, low=-3, high=3)
    for keepdim in (False, True):
        yield Case(dict(self=x, dim=-1, keepdim=keepdim), id=f"keepdim{int(keepdim)}")
        yield Case(dict(self=x, dim=0, keepdim=keepdim), id=f"dim0-keepdim{int(keepdim)}")
    yield Case(dict(self=torch.tensor([3, 1, 3, 1, 2, 2, 5]), dim=0, keepdim=False), id="smallest-of-equally-frequent")
    yield Case(dict(self=torch.tensor([1.0, 2.0, 1.0, 2.0, 1.0, 2.0]), dim=0, keepdim=False), id="last-position")
    yield Case(dict(self=torch.tensor([[7.0, 7.0, -INF, INF], [INF, 0.5, INF, 0.5]]), dim=1, keepdim=False), id="inf")
    yield Case(dict(self=g.tensor((4, 3, 5), torch.int64, low=0, high=3).permute(2, 0, 1), dim=0, keepdim=False), id="permuted")
    yield Case(dict(self=g.tensor((3, 40), torch.int64, low=0, high=5), dim=1, keepdim=True), check=_check_mode_ties,
               id="long-lines")
    # Every value equally frequent: ATen's CUDA kernel picks among them by where their runs end after
    # sorting (its block reduction's order), its CPU kernel the smallest. Lines of 60, 200 and 2000
    # elements take the CUDA kernel's three block sizes; 3000 takes its sort-the-line path.
    for n, k in ((60, 6), (200, 8), (2000, 10), (3000, 6)):
        rows = torch.stack([torch.arange(n) % k for _ in range(3)])
        rows = rows.gather(1, torch.stack([torch.randperm(n, generator=g.g) for _ in range(3)]))
        yield Case(dict(self=rows.to(g.device), dim=1, keepdim=False), check=_check_mode_ties, id=f"all-tied-{n}")
    yield Case(dict(self=(torch.arange(400) % 5).float().reshape(20, 20).t(), dim=0, keepdim=True),
               check=_check_mode_ties, id="all-tied-transposed")
    yield Case(dict(self=torch.tensor([[True, False, True, False], [False, True, True, False]]), dim=1, keepdim=False),
               id="bool-tie")
    yield Case(dict(self=torch.tensor([0.0, -0.0, 1.0, -0.0, 1.0]), dim=0, keepdim=False), id="signed-zeros")
    # NaNs equal nothing, so each counts once; ATen's CPU kernel sorts them with `<` (where they land is
    # its sort's doing), its CUDA kernel with a sorting network: lines whose winner is clear either way.
    yield Case(dict(self=torch.tensor([[NAN, 1.0, 1.0, 2.0], [2.0, 1.0, 1.0, NAN]]), dim=1, keepdim=False), id="nan")
    yield Case(dict(self=torch.tensor([[5, 5, 5], [1, 2, 3]], dtype=torch.int16), dim=0, keepdim=False), id="lines-of-2")
    yield Case(dict(self=g.tensor((3, 1, 4), torch.int64, low=0, high=3), dim=1, keepdim=False), id="line-of-1")
    yield Case(dict(self=g.tensor(()), dim=0, keepdim=False), id="scalar")
    yield Case(dict(self=g.tensor((2, 0)), dim=0, keepdim=False), id="no-lines")
    yield Case(dict(self=g.tensor((2, 0)), dim=1, keepdim=False), error="size 0", id="empty-line")
    yield Case(dict(self=g.tensor((3,), torch.complex64), dim=0, keepdim=False), error="does not support", id="complex")
    yield Case(dict(self=g.tensor((3,)), dim=1, keepdim=False), error="out of range", id="bad-dim")


# ---------------------------------------------------------------- searching

def _sorted(g, shape, dt=torch.float32, low=-20, high=20):
    return g.tensor(shape, dt, low=low, high=high).sort(-1).values


def _positions_or_minus_one(kwargs, got):
    """Without reading sorter back, an index outside its line gives -1 for the values whose
    search meets it; every other value gets a position in [0, n]."""
    r, n = got[0], kwargs["sorted_sequence"].shape[-1]
    assert r.dtype == torch.int64 and r.shape == kwargs["self"].shape
    assert ((r == -1) | ((r >= 0) & (r <= n))).all(), f"{r}"


@cases("searchsorted_Tensor")
def _searchsorted(g):
    def kw(bd, vals, out_int32=False, right=False, side=None, sorter=None):
        return dict(sorted_sequence=bd, self=vals, out_int32=out_int32, right=right, side=side, sorter=sorter)
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16) + INTS:
        bd = _sorted(g, (10,), dt, low=0, high=50)
        vals = g.tensor((3, 4), dt, low=0, high=50)
        yield Case(kw(bd, vals), id=f"{_name(dt)}-left")
        yield Case(kw(bd, vals, right=True), id=f"{_name(dt)}-right")
    bd = torch.tensor([1.0, 2.0, 2.0, 2.0, 3.0, 5.0])
    vals = torch.tensor([0.0, 1.0, 2.0, 2.5, 3.0, 5.0, 6.0])
    yield Case(kw(bd, vals), id="ties-left")
    yield Case(kw(bd, vals, side="right"), id="side-right")
    yield Case(kw(bd, vals, right=True, side="right"), id="side-right-right")
    yield Case(kw(bd, vals, side="left"), id="side-left")
    yield Case(kw(bd, vals, out_int32=True), id="int32")
    nd_bd = _sorted(g, (2, 3, 6))
    yield Case(kw(nd_bd, g.tensor((2, 3, 4))), id="nd")
    yield Case(kw(nd_bd, g.tensor((2, 3, 4)), right=True, out_int32=True), id="nd-right-int32")
    yield Case(kw(_sorted(g, (2, 0)), g.tensor((2, 3))), id="empty-boundaries-nd")
    yield Case(kw(torch.zeros(0), g.tensor((3,))), id="empty-boundaries")
    yield Case(kw(bd, torch.zeros(0)), id="no-values")
    yield Case(kw(bd, torch.tensor(2.0)), id="0d-value")
    yield Case(kw(bd, torch.tensor(2.0), right=True), id="0d-value-right")
    # Promotion: values and boundaries compare in ATen's result dtype.
    yield Case(kw(_sorted(g, (8,), torch.int64), g.tensor((5,)) * 10), id="int-boundaries-float-values")
    yield Case(kw(_sorted(g, (8,)), g.tensor((5,), torch.int32)), id="float-boundaries-int-values")
    yield Case(kw(torch.tensor([16777217]), torch.tensor([16777216.0]), right=True), id="int64-vs-float32")
    yield Case(kw(torch.tensor([2048.0], dtype=torch.float16), torch.tensor(2049.0, dtype=torch.float64)), id="0d-no-widen")
    yield Case(kw(torch.tensor([2048.0], dtype=torch.float16), torch.tensor([2049.0], dtype=torch.float64)), id="1d-widens")
    yield Case(kw(_sorted(g, (6,), torch.int32), g.tensor((4,), torch.bool)), id="bool-values")
    nanb = torch.tensor([1.0, NAN, NAN])
    for right in (False, True):
        yield Case(kw(nanb, torch.tensor([NAN, 2.0, 0.0, 1.0]), right=right), id=f"nan-right{int(right)}")
        yield Case(kw(torch.tensor([-INF, 0.0, INF]), torch.tensor([NAN, -INF, INF, 1.0]), right=right), id=f"inf-right{int(right)}")
    unsorted = g.distinct((9,))
    order = unsorted.argsort()
    yield Case(kw(unsorted, g.tensor((4,)) * 2, sorter=order), id="sorter")
    nd_unsorted = g.distinct((3, 7))
    yield Case(kw(nd_unsorted, g.tensor((3, 5)), sorter=nd_unsorted.argsort(-1), right=True), id="sorter-nd")
    yield Case(kw(bd, vals, right=True, side="left"), error="'side'", id="side-conflict")
    yield Case(kw(bd, vals, side="middle"), error="'side'", id="side-bad")
    yield Case(kw(torch.tensor(1.0), vals), error="0-d", id="0d-boundaries")
    yield Case(kw(nd_bd, g.tensor((3, 3, 4))), error="sorted_sequence", id="leading-mismatch")
    yield Case(kw(nd_bd, g.tensor((2, 3))), error="sorted_sequence", id="rank-mismatch")
    yield Case(kw(nd_bd, torch.tensor(1.0)), error="0-d", id="0d-value-nd-boundaries")
    yield Case(kw(unsorted, vals, sorter=torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 9])), error="out of range",
               without_readback=_positions_or_minus_one, id="sorter-oob")
    yield Case(kw(unsorted, vals, sorter=torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, -1])), error="out of range",
               without_readback=_positions_or_minus_one, id="sorter-negative")
    yield Case(kw(unsorted, vals, sorter=order.to(torch.int32)), error="'sorter'", id="sorter-dtype")
    yield Case(kw(unsorted, vals, sorter=order[:4]), error="'sorter'", id="sorter-shape")
    yield Case(kw(torch.tensor([True, False]), torch.tensor([True])), error="does not support", id="bool")
    yield Case(kw(torch.zeros(3, dtype=torch.complex64), torch.zeros(2, dtype=torch.complex64)), error="does not support", id="complex")


@cases("searchsorted_Scalar")
def _searchsorted_scalar(g):
    def kw(bd, v, out_int32=False, right=False, side=None, sorter=None):
        return dict(sorted_sequence=bd, self=v, out_int32=out_int32, right=right, side=side, sorter=sorter)
    bd = torch.tensor([1.0, 2.0, 2.0, 3.0])
    for v in (0.0, 2.0, 2.5, 9.0, NAN, -INF):
        yield Case(kw(bd, v), id=f"left-{v}")
        yield Case(kw(bd, v, right=True, out_int32=True), id=f"right-{v}")
    for dt in FLOATS + INTS:
        yield Case(kw(_sorted(g, (7,), dt, low=0, high=30), 12.5), id=f"{_name(dt)}")
    yield Case(kw(torch.tensor([16777217]), 16777216.0, right=True), id="int-boundaries-compare-in-float32")
    yield Case(kw(torch.tensor([2048.0], dtype=torch.float16), 2049.0), id="half-boundaries")
    yield Case(kw(bd, 2.0, side="right"), id="side-right")
    unsorted = g.distinct((6,))
    yield Case(kw(unsorted, 0.3, sorter=unsorted.argsort()), id="sorter")
    yield Case(kw(torch.zeros(0), 1.0), id="empty-boundaries")
    yield Case(kw(_sorted(g, (2, 3)), 1.0), error="1-D", id="2d-boundaries")
    yield Case(kw(torch.tensor(1.0), 1.0), error="1-D", id="0d-boundaries")
    yield Case(kw(bd, 1.0, right=True, side="left"), error="'side'", id="side-conflict")


@cases("bucketize_Tensor")
def _bucketize(g):
    def kw(vals, bd, out_int32=False, right=False):
        return dict(self=vals, boundaries=bd, out_int32=out_int32, right=right)
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16) + INTS:
        bd = _sorted(g, (8,), dt, low=0, high=40)
        vals = g.tensor((2, 3, 4), dt, low=0, high=40)
        yield Case(kw(vals, bd), id=f"{_name(dt)}")
        yield Case(kw(vals, bd, right=True, out_int32=True), id=f"{_name(dt)}-right-int32")
    b = torch.tensor([1.0, 2.0, 3.0])
    yield Case(kw(torch.tensor([[1.0, 2.5], [3.0, 9.0]]), b), id="edges")
    yield Case(kw(torch.tensor([[1.0, 2.5], [3.0, 9.0]]), b, right=True), id="edges-right")
    yield Case(kw(torch.tensor(2.0), b), id="0d-value")
    yield Case(kw(torch.tensor(2049.0, dtype=torch.float64), torch.tensor([2048.0], dtype=torch.float16)), id="0d-no-widen")
    yield Case(kw(torch.tensor([1, 3]), b), id="int-values-float-boundaries")
    yield Case(kw(g.tensor((2, 0)), b), id="no-values")
    yield Case(kw(g.tensor((3,)), torch.zeros(0)), id="empty-boundaries")
    yield Case(kw(torch.tensor([NAN, 1.0]), torch.tensor([0.0, NAN])), id="nan")
    yield Case(kw(g.tensor((3,)), torch.zeros(2, 2)), error="1-D", id="2d-boundaries")
    yield Case(kw(g.tensor((3,)), torch.tensor(1.0)), error="1-D", id="0d-boundaries")
    yield Case(kw(torch.tensor([True]), torch.tensor([False, True])), error="does not support", id="bool")


# ---------------------------------------------------------------- histograms

@cases("histc")
def _histc(g):
    for dt in FLOATS:
        yield Case(dict(self=g.tensor((50,), dt), bins=10, min=-2.0, max=2.0), id=f"{_name(dt)}")
        yield Case(dict(self=g.tensor((6, 7), dt), bins=5, min=0.0, max=0.0), id=f"{_name(dt)}-data-range")
    yield Case(dict(self=torch.tensor([1.0, 2.0, NAN, 4.0, -1.0, 5.0, 0.0, INF]), bins=4, min=0.0, max=4.0), id="outside-nan-edges")
    yield Case(dict(self=torch.tensor([2.0, 2.0]), bins=4, min=0.0, max=0.0), id="one-value")
    yield Case(dict(self=torch.tensor([2.0, 2.0]), bins=4, min=2.0, max=2.0), id="one-value-given")
    yield Case(dict(self=torch.arange(10, dtype=torch.float32), bins=3, min=0.0, max=9.0), id="values-on-edges")
    yield Case(dict(self=torch.arange(100, dtype=torch.float64) / 10, bins=7, min=0.0, max=0.0), id="many-on-edges")
    yield Case(dict(self=g.tensor((5, 4)).t(), bins=6, min=-1.0, max=1.0), id="transposed")
    yield Case(dict(self=torch.zeros(0), bins=4, min=0.0, max=0.0), id="empty")
    yield Case(dict(self=g.tensor(()), bins=3, min=0.0, max=0.0), id="scalar")
    yield Case(dict(self=g.tensor((4,)), bins=1, min=-10.0, max=10.0), id="one-bin")
    yield Case(dict(self=g.tensor((4,)), bins=0, min=0.0, max=1.0), error="'bins'", id="bins0")
    yield Case(dict(self=g.tensor((4,)), bins=2**62, min=0.0, max=1.0), error="'bins'", id="bins-huge")
    yield Case(dict(self=g.tensor((4,)), bins=3, min=3.0, max=1.0), error="'max'", id="max-below-min")
    yield Case(dict(self=g.tensor((4,)), bins=3, min=0.0, max=INF), error="not finite", id="inf-range")
    yield Case(dict(self=g.tensor((4,)), bins=3, min=NAN, max=1.0), error="not finite", id="nan-range")
    yield Case(dict(self=torch.tensor([1.0, NAN]), bins=3, min=0.0, max=0.0), error="not finite", id="nan-data-range")
    yield Case(dict(self=torch.tensor([1.0, INF]), bins=3, min=0.0, max=0.0), error="not finite", id="inf-data-range")
    yield Case(dict(self=g.tensor((4,), torch.int64), bins=3, min=0.0, max=1.0), error="does not support", id="int")


@cases("histogram_bin_ct")
def _histogram(g):
    for dt in (torch.float32, torch.float64):
        yield Case(dict(self=g.tensor((60,), dt), bins=8, range=None, weight=None, density=False), id=f"{_name(dt)}")
        yield Case(dict(self=g.tensor((6, 10), dt), bins=5, range=[-1.0, 1.5], weight=None, density=False), id=f"{_name(dt)}-range")
        yield Case(dict(self=g.tensor((40,), dt), bins=6, range=None, weight=g.tensor((40,), dt).abs(), density=False), id=f"{_name(dt)}-weight")
        yield Case(dict(self=g.tensor((40,), dt), bins=6, range=[-2.0, 2.0], weight=None, density=True), id=f"{_name(dt)}-density")
        yield Case(dict(self=g.tensor((5, 8), dt), bins=4, range=None, weight=g.tensor((5, 8), dt).abs(), density=True), id=f"{_name(dt)}-weight-density")
    yield Case(dict(self=torch.tensor([1.0, 2.0, 3.0, 4.0, NAN]), bins=3, range=[0.0, 4.0], weight=None, density=False), id="nan-with-range")
    yield Case(dict(self=torch.arange(12, dtype=torch.float32), bins=4, range=None, weight=None, density=False), id="values-on-edges")
    yield Case(dict(self=torch.arange(100, dtype=torch.float64) / 10, bins=7, range=None, weight=None, density=False), id="many-on-edges")
    yield Case(dict(self=torch.tensor([2.0, 2.0]), bins=2, range=None, weight=None, density=False), id="one-value")
    yield Case(dict(self=torch.tensor(2.0), bins=2, range=None, weight=None, density=False), id="scalar")
    yield Case(dict(self=torch.zeros(0), bins=3, range=None, weight=None, density=False), id="empty")
    yield Case(dict(self=torch.zeros(0), bins=3, range=None, weight=None, density=True), id="empty-density")
    yield Case(dict(self=g.tensor((5, 4)).t(), bins=3, range=None, weight=None, density=False), id="transposed")
    yield Case(dict(self=g.tensor((4,)), bins=0, range=None, weight=None, density=False), error="'bins'", id="bins0")
    yield Case(dict(self=g.tensor((4,)), bins=3, range=[3.0, 1.0], weight=None, density=False), error="'range'", id="range-reversed")
    yield Case(dict(self=g.tensor((4,)), bins=3, range=[0.0, INF], weight=None, density=False), error="not finite", id="range-inf")
    yield Case(dict(self=torch.tensor([1.0, NAN]), bins=3, range=None, weight=None, density=False), error="not finite", id="nan-data")
    yield Case(dict(self=g.tensor((4,)), bins=3, range=None, weight=g.tensor((4,), torch.float64), density=False), error="'weight'", id="weight-dtype")
    yield Case(dict(self=g.tensor((4,)), bins=3, range=None, weight=g.tensor((5,)), density=False), error="'weight'", id="weight-shape")
    yield Case(dict(self=g.tensor((4,), torch.float16), bins=3, range=None, weight=None, density=False), error="does not support", id="half")
    yield Case(dict(self=g.tensor((4,), torch.int64), bins=3, range=None, weight=None, density=False), error="does not support", id="int")


@cases("_histogramdd_from_bin_cts")
def _histogramdd(g):
    for dt in (torch.float32, torch.float64):
        x = g.tensor((30, 2), dt, low=0, high=1)
        yield Case(dict(self=x, bins=[2, 3], range=None, weight=None, density=False), id=f"{_name(dt)}")
        yield Case(dict(self=x, bins=[4, 3], range=[0.0, 1.0, -1.0, 2.0], weight=None, density=True), id=f"{_name(dt)}-range-density")
        yield Case(dict(self=x, bins=[3, 2], range=None, weight=g.tensor((30,), dt).abs(), density=False), id=f"{_name(dt)}-weight")
    yield Case(dict(self=g.tensor((4, 5, 3)), bins=[2, 3, 4], range=None, weight=g.tensor((4, 5)).abs(), density=True), id="3d-points")
    yield Case(dict(self=g.tensor((9, 1)), bins=[5], range=None, weight=None, density=False), id="one-coordinate")
    yield Case(dict(self=torch.tensor([[0.0, 1.0], [NAN, 0.5], [1.0, 3.0]]), bins=[2, 2], range=[0.0, 1.0, 0.0, 2.0], weight=None, density=False), id="outside-nan")
    yield Case(dict(self=torch.zeros(0, 2), bins=[2, 2], range=None, weight=None, density=False), id="empty")
    yield Case(dict(self=g.tensor((8, 3)).t(), bins=[2, 2, 2, 2, 2, 2, 2, 2], range=None, weight=None, density=False), id="transposed")
    yield Case(dict(self=g.tensor((4,)), bins=[2], range=None, weight=None, density=False), error="at least 2", id="1d")
    yield Case(dict(self=g.tensor((4, 2)), bins=[2], range=None, weight=None, density=False), error="'bins'", id="bins-length")
    yield Case(dict(self=g.tensor((4, 2)), bins=[2, 0], range=None, weight=None, density=False), error="'bins'", id="bins-zero")
    yield Case(dict(self=g.tensor((4, 2)), bins=[2**40, 2**40], range=None, weight=None, density=False), error="'bins'", id="bins-product-huge")
    yield Case(dict(self=g.tensor((4, 2)), bins=[2**63 - 1, 1], range=None, weight=None, density=False), error="'bins'", id="bins-max-int")
    yield Case(dict(self=g.tensor((4, 2)), bins=[2, 2], range=[0.0, 1.0], weight=None, density=False), error="'range'", id="range-length")
    yield Case(dict(self=g.tensor((4, 2)), bins=[2, 2], range=None, weight=g.tensor((4, 2)), density=False), error="'weight'", id="weight-shape")
    yield Case(dict(self=g.tensor((4, 2), torch.float16), bins=[2, 2], range=None, weight=None, density=False), error="does not support", id="half")
