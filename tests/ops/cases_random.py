"""Random ops: the values are Kiln's own stream (aoti.seed), so they are checked against the
distribution, not against ATen's numbers; dtype, shape and strides still match ATen's."""

import math

import torch

from compare import strides_equivalent
from op_case import Case, cases

N = 20000


def _meta(got, expected):
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, ATen {expected.dtype}"
    assert tuple(got.shape) == tuple(expected.shape), f"shape {tuple(got.shape)}, ATen {tuple(expected.shape)}"
    assert strides_equivalent(got, expected), f"strides {got.stride()}, ATen {expected.stride()}"


def _moments(x: torch.Tensor, mean: float, std: float):
    x = x.double().flatten()
    n = x.numel()
    # Five standard errors: a correct generator fails with probability < 1e-6.
    assert abs(x.mean().item() - mean) < 5 * std / math.sqrt(n), f"mean {x.mean().item()}, expected {mean}"
    assert abs(x.std().item() - std) < 5 * std * math.sqrt(2.0 / n) + 1e-3 * std, f"std {x.std().item()}, expected {std}"


def _uniform_bins(x: torch.Tensor, lo: float, hi: float, bins: int = 16):
    counts = torch.histc(x.double().flatten(), bins=bins, min=lo, max=hi)
    expected = x.numel() / bins
    chi2 = ((counts - expected) ** 2 / expected).sum().item()
    # chi-square with 15 degrees of freedom: P(> 50) is about 1e-5.
    assert chi2 < 50, f"histogram {counts.tolist()} is not uniform (chi2 {chi2:.1f})"


def _first(got, expected):
    g = got[0]
    e = expected if isinstance(expected, torch.Tensor) else expected[0]
    _meta(g, e)
    return g


def _check_rand(lo=0.0, hi=1.0):
    def check(kwargs, ref_kwargs, got, expected):
        x = _first(got, expected)
        assert (x >= lo).all() and (x < hi).all() if x.dtype == torch.float64 else (x >= lo).all() and (x <= hi).all()
        _moments(x, (lo + hi) / 2, (hi - lo) / math.sqrt(12))
        _uniform_bins(x, lo, hi)
    return check


def _check_normal(mean=0.0, std=1.0):
    def check(kwargs, ref_kwargs, got, expected):
        x = _first(got, expected)
        _moments(x, mean, std)
        z = ((x.double() - mean) / std).flatten()
        # The normal CDF maps normal samples to uniform ones.
        _uniform_bins(0.5 * (1 + torch.erf(z / math.sqrt(2))), 0.0, 1.0)
    return check


def _check_randint(low, high):
    def check(kwargs, ref_kwargs, got, expected):
        x = _first(got, expected) if got else kwargs["out"]
        if not got:
            _meta(kwargs["out"], ref_kwargs["out"])
        assert (x >= low).all() and (x < high).all(), f"values outside [{low}, {high})"
        assert set(torch.unique(x).tolist()) == set(range(low, high)), "not every value drawn"
        _uniform_bins(x.double() + 0.5, low, high, bins=high - low)
    return check


def _kw(size, dtype=None):
    return dict(size=list(size), dtype=dtype, layout=None, device=None, pin_memory=None)


@cases("rand", "rand_generator")
def _rand(g):
    yield Case(dict(_kw((N,)), generator=None), check=_check_rand(), id="float32")
    yield Case(dict(_kw((100, 200), torch.float64), generator=None), check=_check_rand(), id="float64")
    yield Case(dict(_kw((N,), torch.bfloat16), generator=None), check=_check_rand(), id="bfloat16")
    yield Case(dict(_kw((0, 3)), generator=None), check=lambda got, expected, **_: _first(got, expected), id="empty")
    yield Case(dict(_kw((4,), torch.int64), generator=None), error="floating dtype", id="int-dtype")


@cases("randn", "randn_generator")
def _randn(g):
    yield Case(dict(_kw((N,)), generator=None), check=_check_normal(), id="float32")
    yield Case(dict(_kw((50, 400), torch.float64), generator=None), check=_check_normal(), id="float64")
    yield Case(dict(_kw((3, -1)), generator=None), error="negative", id="negative-size")


@cases("randint", "randint_generator")
def _randint(g):
    yield Case(dict(_kw((N,)), high=10, generator=None), check=_check_randint(0, 10), id="int64")
    yield Case(dict(_kw((N,), torch.float32), high=7, generator=None), check=_check_randint(0, 7), id="float32")
    yield Case(dict(_kw((4,)), high=0, generator=None), error="from", id="empty-range")


@cases("randint_low")
def _randint_low(g):
    yield Case(dict(_kw((N,), torch.int32), low=-5, high=5), check=_check_randint(-5, 5), id="int32")


@cases("randint_low_out")
def _randint_low_out(g):
    yield Case(dict(out=torch.empty(N, dtype=torch.int64), low=3, high=12, size=[N]), check=_check_randint(3, 12),
               layouts=False, id="int64")
    yield Case(dict(out=torch.empty(5, dtype=torch.int64), low=0, high=2, size=[4]), error="shape", id="shape")


@cases("randperm")
def _randperm(g):
    def check(kwargs, ref_kwargs, got, expected):
        x = _first(got, expected)
        assert torch.equal(torch.sort(x).values, torch.arange(kwargs["n"], dtype=x.dtype))
        if kwargs["n"] > 100:
            assert not torch.equal(x, torch.arange(kwargs["n"], dtype=x.dtype)), "identity permutation"
    yield Case(dict(n=1000, dtype=None, layout=None, device=None, pin_memory=None), check=check, id="1000")
    yield Case(dict(n=0, dtype=None, layout=None, device=None, pin_memory=None), check=check, id="0")
    yield Case(dict(n=50, dtype=torch.int32, layout=None, device=None, pin_memory=None), check=check, id="int32")


@cases("uniform")
def _uniform(g):
    yield Case(dict(self=g.tensor((N,)), generator=None, **{"from": -2.0, "to": 3.0}), check=_check_rand(-2.0, 3.0), id="float32")
    yield Case(dict(self=g.tensor((100, 200), torch.float64).t(), generator=None, **{"from": 0.0, "to": 1.0}),
               check=_check_rand(), id="transposed")


@cases("normal_functional")
def _normal(g):
    yield Case(dict(self=g.tensor((N,)), mean=1.5, std=0.5, generator=None), check=_check_normal(1.5, 0.5), id="float32")
    yield Case(dict(self=g.tensor((3,)), mean=0.0, std=-1.0, generator=None), error="std", id="negative-std")


@cases("exponential")
def _exponential(g):
    def check(kwargs, ref_kwargs, got, expected):
        x = _first(got, expected)
        assert (x >= 0).all()
        lam = kwargs["lambd"]
        _moments(x, 1 / lam, 1 / lam)
        _uniform_bins(1 - torch.exp(-lam * x.double()), 0.0, 1.0)
    yield Case(dict(self=g.tensor((N,)), lambd=2.0, generator=None), check=check, id="float32")


def _check_bernoulli(p):
    def check(kwargs, ref_kwargs, got, expected):
        x = kwargs["self"]
        assert ((x == 0) | (x == 1)).all()
        n = x.numel()
        frac = x.double().mean().item()
        assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-12, f"fraction {frac}, expected {p}"
    return check


@cases("bernoulli__float")
def _bernoulli_float(g):
    yield Case(dict(self=g.tensor((N,)), p=0.3, generator=None), check=_check_bernoulli(0.3), id="0.3")
    yield Case(dict(self=g.tensor((100,), torch.float64), p=1.0, generator=None), check=_check_bernoulli(1.0), id="1")
    yield Case(dict(self=g.tensor((10,)), p=1.5, generator=None), error="0 <= p <= 1", id="bad-p")


@cases("bernoulli__Tensor")
def _bernoulli_tensor(g):
    def check(kwargs, ref_kwargs, got, expected):
        x, p = kwargs["self"], kwargs["p"].expand_as(kwargs["self"])
        assert torch.equal(x[p == 0], torch.zeros_like(x[p == 0]))
        assert torch.equal(x[p == 1], torch.ones_like(x[p == 1]))
        half = x[p == 0.5].double()
        assert abs(half.mean().item() - 0.5) < 5 * 0.5 / math.sqrt(half.numel())
    p = torch.tensor([0.0, 1.0, 0.5, 0.5]).repeat(N // 4)
    yield Case(dict(self=g.tensor((N,)), p=p, generator=None), check=check, id="per-element")
    yield Case(dict(self=g.tensor((2, N // 2)), p=torch.tensor([0.5]), generator=None), check=check, id="broadcast")


@cases("native_dropout")
def _native_dropout(g):
    def check(kwargs, ref_kwargs, got, expected):
        out, mask = got
        _meta(out, expected[0])
        _meta(mask, expected[1])
        x, p = kwargs["input"], kwargs["p"]
        if kwargs["train"] is False:
            assert torch.equal(out, x) and mask.all()
            return
        assert torch.allclose(out, torch.where(mask, x / (1 - p), torch.zeros_like(x)), rtol=1e-6, atol=0)
        keep = mask.double().mean().item()
        assert abs(keep - (1 - p)) < 5 * math.sqrt(p * (1 - p) / mask.numel())
    yield Case(dict(input=g.tensor((100, 200)), p=0.25, train=True), check=check, id="train")
    yield Case(dict(input=g.tensor((10, 20)), p=0.25, train=False), check=check, id="eval")
    yield Case(dict(input=g.tensor((100, 200)), p=0.5, train=None), check=check, id="train-default")
