"""The parametrisation shared by the per-device op tests (test_cpu_ops.py here,
tests/gpu/test_cuda_ops.py): every implemented op of a device, each of its cases,
in each layout that applies."""

from __future__ import annotations

import pytest

import all_cases  # noqa: F401  (registers every op's cases)
from op_case import CASES, Gen
from op_inventory import implemented, suffix
from op_runner import LAYOUTS, applicable
from shim_caller import aten_op


def seed_of(name: str) -> int:
    return sum(map(ord, name))


def cases_of(name: str, device: str):
    return list(CASES[name](Gen(seed_of(name), device)))


def params(device: str):
    for function in implemented(device):
        name = suffix(function, device)
        if name not in CASES:
            continue
        op = aten_op(function, device)
        for index, case in enumerate(cases_of(name, "cpu")):
            for layout in LAYOUTS:
                if applicable(case, layout, op):
                    yield pytest.param(function, index, layout, id=f"{name}-{case.id or index}-{layout}")
