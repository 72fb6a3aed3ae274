"""Matrix products: mm, addmm, bmm, baddbmm, addbmm, addmv, _addmm_activation, _int_mm."""

import torch

from op_case import Case, cases

# Every dtype ATen's CUDA products take (they refuse integers); the CPU takes these too.
MM_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.complex64, torch.complex128)
SINGLE = (torch.float32, torch.complex64)


@cases("mm_out")
def _mm(g):
    for dt in MM_DTYPES:
        tol = dict(rtol=1e-4, atol=1e-4) if dt in SINGLE else {}
        a, b = g.tensor((5, 7), dt), g.tensor((7, 3), dt)
        yield Case(dict(out=torch.empty(5, 3, dtype=dt), self=a, mat2=b), id=str(dt)[6:], **tol)
    yield Case(dict(out=torch.empty(0, 3), self=g.tensor((0, 4)), mat2=g.tensor((4, 3))), id="empty")
    yield Case(dict(out=torch.empty(2, 3), self=g.tensor((2, 4)), mat2=g.tensor((5, 3))), error="shape", id="mismatch")


@cases("addmm_out")
def _addmm(g):
    for dt in MM_DTYPES:
        yield Case(dict(out=torch.empty(4, 6, dtype=dt), self=g.tensor((6,), dt), mat1=g.tensor((4, 5), dt),
                        mat2=g.tensor((5, 6), dt), beta=0.5, alpha=2.0), rtol=1e-4, atol=1e-4, id=str(dt)[6:])
    yield Case(dict(out=torch.empty(4, 6), self=g.tensor((4, 6)), mat1=g.tensor((4, 5)), mat2=g.tensor((5, 6)),
                    beta=0.0, alpha=1.0), rtol=1e-4, atol=1e-4, id="beta0")
    # beta 1 with a contiguous bias row (nn.Linear): ATen's CUDA kernel, and Kiln's, add it in cuBLASLt's
    # bias epilogue when out is contiguous too.
    for dt in MM_DTYPES:
        tol = dict(rtol=1e-4, atol=1e-4) if dt in SINGLE else {}
        yield Case(dict(out=torch.empty(8, 24, dtype=dt), self=g.tensor((24,), dt), mat1=g.tensor((8, 16), dt),
                        mat2=g.tensor((16, 24), dt), beta=1.0, alpha=1.5), id=f"bias-{str(dt)[6:]}", **tol)


@cases("bmm_out")
def _bmm(g):
    for dt in MM_DTYPES:
        yield Case(dict(out=torch.empty(3, 4, 2, dtype=dt), self=g.tensor((3, 4, 5), dt), mat2=g.tensor((3, 5, 2), dt)),
                   rtol=1e-4, atol=1e-4, id=str(dt)[6:])
