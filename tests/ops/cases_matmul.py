"""Matrix products: mm, addmm, bmm and mm with out_dtype (the others are in cases_pool.py)."""

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


@cases("mm_dtype_out")
def _mm_dtype(g):
    # float16/bfloat16 operands into a float32 out: the float32 accumulator, never rounded to 16 bits.
    for dt in (torch.float16, torch.bfloat16):
        for m, k, n in ((5, 7, 3), (33, 64, 40)):
            yield Case(dict(out=torch.empty(m, n), self=g.tensor((m, k), dt), mat2=g.tensor((k, n), dt),
                            out_dtype=torch.float32), rtol=1e-4, atol=1e-4, id=f"{str(dt)[6:]}-float32-{m}x{k}x{n}")
    # out_dtype may also be the operands' own dtype.
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        tol = dict(rtol=1e-4, atol=1e-4) if dt == torch.float32 else {}
        yield Case(dict(out=torch.empty(6, 4, dtype=dt), self=g.tensor((6, 9), dt), mat2=g.tensor((9, 4), dt),
                        out_dtype=dt), id=f"{str(dt)[6:]}-same", **tol)
    yield Case(dict(out=torch.empty(5, 3, dtype=torch.float16), self=g.tensor((5, 7)), mat2=g.tensor((7, 3)),
                    out_dtype=torch.float16), error="out_dtype must be the same as input dtype or fp32", id="narrowing")
    yield Case(dict(out=torch.empty(5, 3), self=g.tensor((5, 7), torch.float16), mat2=g.tensor((7, 3), torch.float16),
                    out_dtype=torch.float16), error="dtype of the provided out tensor", id="out-dtype-differs")
    yield Case(dict(out=torch.empty(5, 3), self=g.tensor((5, 7), torch.float16), mat2=g.tensor((6, 3), torch.float16),
                    out_dtype=torch.float32), error="cannot be multiplied", id="mismatch")
