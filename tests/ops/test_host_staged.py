"""The host-staged CUDA ops (src/shims/cuda/host_staged_ops.inc), checked without a GPU: the table is what
scripts/gen_host_staged.py derives from torch's headers and schemas, its roles agree with the ATen schema
read independently, and every staged op has the cases tests/gpu/test_cuda_ops.py runs it with."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import all_cases  # noqa: F401  (registers every op's cases)
from op_case import CASES, Gen
from op_inventory import host_staged, kiln_functions, suffix
from op_runner import written_args
from op_suite import seed_of
from shim_caller import aten_op, declarations

ROOT = Path(__file__).resolve().parents[2]
INC = ROOT / "src/shims/cuda/host_staged_ops.inc"


def _entries() -> dict[str, tuple[str, str]]:
    """op -> (roles, C parameter list) as the table states them."""
    out = {}
    for m in re.finditer(r'^KILN_HOST_STAGED\((\w+), "([^"]*)", \(([^)]*)\), \(([^)]*)\)\)$', INC.read_text(), re.M):
        out[m.group(1)] = (m.group(2), m.group(3))
    return out


STAGED = sorted(_entries())


def test_table_and_list_are_generated():
    result = subprocess.run([sys.executable, str(ROOT / "scripts/gen_host_staged.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_table_parses():
    # Empty while every CUDA op has native code: the generator stages an op again only when a
    # torch release declares one the CPU implements and the CUDA plugin lacks.
    assert {suffix(f, "cuda") for f in host_staged()} == set(STAGED)


@pytest.mark.parametrize("op", STAGED)
def test_staged_op_is_listed_and_runs_a_cpu_op_of_the_same_signature(op):
    assert f"aoti_torch_cuda_{op}" in kiln_functions("cuda")
    assert f"aoti_torch_cpu_{op}" in kiln_functions("cpu")
    cuda = declarations("cuda")[f"aoti_torch_cuda_{op}"]
    assert declarations("cpu")[f"aoti_torch_cpu_{op}"] == cuda
    _, params = _entries()[op]
    assert params == ", ".join(f"{p.ctype} {p.name}" for p in cuda)


@pytest.mark.parametrize("op", STAGED)
def test_written_roles_match_the_schema(op):
    roles, _ = _entries()[op]
    params = declarations("cuda")[f"aoti_torch_cuda_{op}"]
    assert len(roles) == len(params)
    written = {p.name for p, r in zip(params, roles) if r == "w"}
    assert written == set(written_args(aten_op(f"aoti_torch_cpu_{op}", "cpu")))
    # What torchgen names writes: out= overloads and in-place ops (trailing underscore).
    if written:
        assert op.endswith("_out") or op.endswith("_") or "__" in op.lstrip("_"), op
    for p, r in zip(params, roles):
        if re.fullmatch(r"ret\d+", p.name) and p.ctype == "AtenTensorHandle*":
            assert r in "rTC", f"{p.name} of {op} must be returned"


@pytest.mark.parametrize("op", STAGED)
def test_staged_op_has_cases(op):
    assert op in CASES, f"aoti_torch_cuda_{op} is staged but tests/ops has no cases for it"
    assert list(CASES[op](Gen(seed_of(op), "cpu")))


def test_no_staged_op_has_native_code():
    """An op with its own CUDA file must leave the staged list (the generator reads the hand-written list)."""
    native = set()
    for source in (ROOT / "src/shims/cuda").glob("*.cpp"):
        if source.name == "host_staged.cpp":
            continue
        native |= set(re.findall(r"AOTITorchError\s+aoti_torch_cuda_(\w+)\s*\(", source.read_text()))
    assert not native & set(STAGED)


def _error_cases():
    for op in STAGED:
        if op not in CASES:
            continue
        for index, case in enumerate(CASES[op](Gen(seed_of(op), "cpu"))):
            if case.error is not None:
                yield pytest.param(op, index, id=f"{op}-{case.id or index}")


@pytest.fixture(scope="module")
def staged_lib():
    """libkiln.so of a CUDA build (KILN_LIBRARY) with libkiln_cuda.so beside it; no GPU needed."""
    import os

    from shim_caller import ShimLibrary

    base = Path(os.environ.get("KILN_LIBRARY", str(ROOT / "build" / "libkiln.so")))
    plugin = base.parent / "libkiln_cuda.so"
    if not base.exists() or not plugin.exists():
        pytest.skip(f"no libkiln_cuda.so beside {base} (a build without CUDA)")
    return ShimLibrary(str(base), str(plugin))


@pytest.mark.parametrize("op,index", list(_error_cases()))
def test_staged_op_reports_the_cpu_ops_error_under_its_cuda_name(staged_lib, op, index):
    """With host tensors nothing is copied, so the staging runs without a GPU up to the CPU op: its arguments
    (lists, optional lists, optional tensors, scalars) reach the CPU op intact and its error comes back
    named after the CUDA op."""
    from shim_caller import KilnError, call_shim

    case = list(CASES[op](Gen(seed_of(op), "cpu")))[index]
    function = f"aoti_torch_cuda_{op}"
    with pytest.raises(KilnError) as info:
        call_shim(staged_lib, function, "cuda", dict(case.kwargs))
    message = str(info.value)
    assert case.error in message, message
    assert message.startswith(f"{function}: {function}: ") and "aoti_torch_cpu_" not in message, message
