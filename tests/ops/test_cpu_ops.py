"""Every CPU fallback op Kiln implements, against ATen on the same inputs.

The ops under test are the functions of torch's generated c_shim_cpu.h that
src/shims/cpu/shims.txt lists, so an op cannot be added without cases here:
test_every_op_has_cases fails first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import all_cases  # noqa: F401,E402  (registers every op's cases)
from op_case import CASES, Gen  # noqa: E402
from op_inventory import implemented, suffix  # noqa: E402
from op_runner import LAYOUTS, applicable, run_case  # noqa: E402
from shim_caller import ShimLibrary, aten_op  # noqa: E402

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
    assert list(CASES[name](Gen(0, DEVICE))), f"no cases generated for {name}"


def _params():
    for function in FUNCTIONS:
        name = suffix(function, DEVICE)
        if name not in CASES:
            continue
        op = aten_op(function, DEVICE)
        for index, case in enumerate(CASES[name](Gen(index_seed(name), DEVICE))):
            for layout in LAYOUTS:
                if applicable(case, layout, op):
                    yield pytest.param(function, index, layout, id=f"{name}-{case.id or index}-{layout}")


def index_seed(name: str) -> int:
    return sum(map(ord, name))


@pytest.mark.parametrize("function,index,layout", list(_params()))
def test_op_matches_aten(lib, function, index, layout):
    name = suffix(function, DEVICE)
    case = list(CASES[name](Gen(index_seed(name), DEVICE)))[index]
    run_case(lib, function, DEVICE, case, layout)
