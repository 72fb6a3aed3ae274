"""Kiln's own op kiln::grouped_mm on the CPU (aoti_torch_cpu_grouped_mm, called through
ctypes: torch's header, which tests/ops reads signatures from, does not declare it),
against transformers' fallback and torch._grouped_mm on random inputs, with empty
groups, rows past the last group, strided operands and offs that must be refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# Kiln's allocations start as NaN, so a row the op leaves unwritten fails the comparison.
os.environ["KILN_POISON_ALLOCATIONS"] = "1"

from grouped_mm_cases import bad_offs, call_grouped_mm, cases, fallback  # noqa: E402
from shim_caller import KilnError, ShimLibrary  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.bfloat16: dict(rtol=1.6e-2, atol=2e-2)}


@pytest.fixture(scope="module")
def lib():
    path = os.environ.get("KILN_LIBRARY", str(ROOT / "build" / "libkiln.so"))
    if not Path(path).exists():
        pytest.fail(f"libkiln.so not found at {path}: build first or set KILN_LIBRARY")
    return ShimLibrary(path)


@pytest.fixture(scope="module")
def transformers_fallback():
    moe = pytest.importorskip("transformers.integrations.moe")  # registers transformers::grouped_mm_fallback
    del moe
    return torch.ops.transformers.grouped_mm_fallback


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_matches_the_transformers_fallback(lib, transformers_fallback, dtype):
    for case in cases(dtype):
        got = call_grouped_mm(lib, "cpu", case.x, case.w, case.offs)
        want = transformers_fallback(case.x, case.w, case.offs)
        assert got.dtype == dtype and got.shape == want.shape, case.name
        assert got.stride() == (case.w.shape[2], 1) or got.numel() == 0, case.name
        torch.testing.assert_close(got, want, **TOL[dtype], msg=lambda m, c=case: f"{c.name}: {m}")
        torch.testing.assert_close(got, fallback(case.x, case.w, case.offs), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_matches_torch_grouped_mm_and_zeroes_rows_past_the_last_group(lib, dtype):
    for case in cases(dtype):
        got = call_grouped_mm(lib, "cpu", case.x, case.w, case.offs)
        end = int(case.offs[-1]) if case.offs.numel() else 0
        # torch._grouped_mm leaves the rows past the last group unwritten; Kiln zeroes them.
        want = torch._grouped_mm(case.x.contiguous(), case.w, offs=case.offs.to(torch.int32))
        torch.testing.assert_close(got[:end], want[:end], **TOL[dtype], msg=lambda m, c=case: f"{c.name}: {m}")
        assert torch.equal(got[end:], torch.zeros_like(got[end:])), case.name


def test_float64_and_float16(lib):
    for dtype in (torch.float64, torch.float16):
        case = cases(torch.float32)[0]
        x, w = case.x.to(dtype), case.w.to(dtype)
        got = call_grouped_mm(lib, "cpu", x, w, case.offs)
        tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=2e-3, atol=2e-3)
        torch.testing.assert_close(got, fallback(x.double(), w.double(), case.offs).to(dtype), **tol)


@pytest.mark.parametrize("name,x,w,offs,message", bad_offs(), ids=[b[0] for b in bad_offs()])
def test_bad_offs_are_errors_naming_the_value(lib, name, x, w, offs, message):
    with pytest.raises(KilnError, match=message):
        call_grouped_mm(lib, "cpu", x, w, offs)


def test_mismatched_arguments_are_errors(lib):
    x, w = torch.randn(4, 8), torch.randn(2, 8, 3)
    offs = torch.tensor([1, 4], dtype=torch.int32)
    with pytest.raises(KilnError, match="disagree in K"):
        call_grouped_mm(lib, "cpu", torch.randn(4, 5), w, offs)
    with pytest.raises(KilnError, match="disagree in K or the number of groups"):
        call_grouped_mm(lib, "cpu", x, w, torch.tensor([4], dtype=torch.int32))
    with pytest.raises(KilnError, match="not int32 or int64"):
        call_grouped_mm(lib, "cpu", x, w, offs.float())
    with pytest.raises(KilnError, match="weight"):
        call_grouped_mm(lib, "cpu", x, w.double(), offs)
    with pytest.raises(KilnError, match="is not supported"):
        call_grouped_mm(lib, "cpu", x.int(), w.int(), offs)
