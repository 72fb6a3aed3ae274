"""Scans along a dimension: cumsum, cumprod, logcumsumexp, cummax, cummin."""

import torch

from op_case import FLOATS, INTS, COMPLEX, Case, cases


@cases("cumsum", "cumprod")
def _cumulative(g):
    for dt in FLOATS + INTS + COMPLEX + (torch.bool,):
        x = g.tensor((3, 4, 5), dt, low=0.5, high=1.5) if dt.is_floating_point else g.tensor((3, 4, 5), dt, low=-2, high=3)
        yield Case(dict(self=x, dim=1, dtype=None), id=f"{str(dt)[6:]}-dim1", rtol=1e-2 if dt in (torch.float16, torch.bfloat16) else None)
    yield Case(dict(self=g.tensor((4, 6)), dim=-1, dtype=torch.float64), id="to-float64")
    yield Case(dict(self=g.tensor((4, 6), torch.int32), dim=0, dtype=torch.float32), id="int-to-float32")
    yield Case(dict(self=g.tensor((2, 0, 3)), dim=1, dtype=None), id="empty")
    yield Case(dict(self=g.tensor(()), dim=0, dtype=None), id="scalar")
    yield Case(dict(self=g.tensor((7,)), dim=0, dtype=None), id="1d")
    yield Case(dict(self=g.tensor((2, 3)), dim=2, dtype=None), error="out of range", id="bad-dim")
