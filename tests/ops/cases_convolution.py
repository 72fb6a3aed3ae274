"""aten::convolution: 1-3 spatial dims, groups, transposed."""

import torch

from op_case import Case, cases


@cases("convolution")
def _convolution(g):
    common = dict(rtol=1e-4, atol=1e-4)
    yield Case(dict(input=g.tensor((2, 4, 9, 9)), weight=g.tensor((6, 4, 3, 3)), bias=g.tensor((6,)), stride=[1, 2],
                    padding=[1, 0], dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1),
               id="2d", **common)
    yield Case(dict(input=g.tensor((1, 6, 11)), weight=g.tensor((6, 2, 3)), bias=None, stride=[2], padding=[1],
                    dilation=[2], transposed=False, output_padding=[0], groups=3), id="1d-groups", **common)
    yield Case(dict(input=g.tensor((1, 4, 5, 5)), weight=g.tensor((4, 3, 3, 3)), bias=g.tensor((3,)), stride=[2, 2],
                    padding=[1, 1], dilation=[1, 1], transposed=True, output_padding=[1, 1], groups=1),
               id="transposed", **common)
