"""Every CPU fallback op Kiln implements, against ATen on the same inputs.

The ops under test are the functions of torch's generated c_shim_cpu.h that
src/shims/cpu/shims.txt lists, so an op cannot be added without cases here:
test_every_op_has_cases fails first. tests/gpu/test_cuda_ops.py runs the same
cases against the CUDA ops (op_suite.py holds what both share).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from op_case import CASES, Gen
from op_inventory import implemented, suffix
from op_runner import run_case
from op_suite import cases_of, params, seed_of
from shim_caller import ShimLibrary

DEVICE = "cpu"
ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = implemented(DEVICE)


@pytest.fixture(scope="module")
def lib():
    path = os.environ.get("KILN_LIBRARY", str(ROOT / "build" / "libkiln.so"))
    if not Path(path).exists():
        pytest.fail(f"libkiln.so not found at {path}: build first or set KILN_LIBRARY")
    return ShimLibrary(path)


def test_some_ops_are_implemented():
    assert len(FUNCTIONS) >= 5


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_op_has_cases(function):
    name = suffix(function, DEVICE)
    assert name in CASES, f"{function} is implemented but tests/ops has no cases for {name}"
    assert list(CASES[name](Gen(seed_of(name), DEVICE))), f"no cases generated for {name}"


@pytest.mark.parametrize("function,index,layout", list(params(DEVICE)))
def test_op_matches_aten(lib, function, index, layout):
    case = cases_of(suffix(function, DEVICE), DEVICE)[index]
    run_case(lib, function, DEVICE, case, layout)
