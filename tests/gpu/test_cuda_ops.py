"""Every CUDA fallback op Kiln implements, against ATen on the same inputs: the cases of
tests/ops (written once for every device) through libkiln_cuda.so's functions, with the
signatures of torch's c_shim_cuda.h."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))

import gpu_support  # noqa: E402
from op_case import CASES  # noqa: E402
from op_inventory import implemented, suffix  # noqa: E402
from op_runner import run_case  # noqa: E402
from op_suite import cases_of, params  # noqa: E402
from shim_caller import ShimLibrary  # noqa: E402

DEVICE = "cuda"
FUNCTIONS = implemented(DEVICE)


@pytest.fixture(scope="module")
def lib():
    import ctypes

    base = gpu_support.BUILD / "libkiln.so"
    kiln = ctypes.CDLL(str(base))
    kiln.kiln_cuda_device_count.restype = ctypes.c_int32
    assert kiln.kiln_cuda_device_count() > 0, "Kiln sees no CUDA device (libkiln_cuda.so not loaded?)"
    return ShimLibrary(str(base), str(gpu_support.BUILD / "libkiln_cuda.so"))


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_cuda_op_has_cases(function):
    assert suffix(function, DEVICE) in CASES, f"{function} has no cases in tests/ops"


@pytest.mark.parametrize("function,index,layout", list(params(DEVICE)))
def test_cuda_op_matches_aten(lib, function, index, layout):
    case = cases_of(suffix(function, DEVICE), DEVICE)[index]
    run_case(lib, function, DEVICE, case, layout)
