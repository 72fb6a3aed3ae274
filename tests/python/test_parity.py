"""CPU parity suite: every model is exported with the real AOTInductor, run by
Kiln through the Python wrapper and through the `kiln` CLI, and compared with
eager PyTorch on fresh random inputs (other sizes where dims are dynamic).
Allocations are poisoned with NaN so an unwritten output cannot pass."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import kiln
from kiln.runtime import Module
from parity_models import build_cases

CASES = {case.name: case for case in build_cases()}
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2}

os.environ["KILN_POISON_ALLOCATIONS"] = "1"


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    actual, expected = actual.double(), expected.double()
    scale = max(expected.abs().max().item(), 1e-6)
    return (actual - expected).abs().max().item() / scale


def flat_outputs(result) -> list[torch.Tensor]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """name -> path of the saved program; compiled once per test run, or once per
    $KILN_PARITY_PROGRAM_DIR (scripts/test.sh shares one between this run and the
    sanitizer run of scripts/sanitize.sh, which would otherwise export again)."""
    shared = os.environ.get("KILN_PARITY_PROGRAM_DIR")
    out_dir = Path(shared) if shared else tmp_path_factory.mktemp("programs")
    paths = {}

    def get(name):
        if name not in paths and shared and (out_dir / f"{name}.kiln").is_file():
            paths[name] = out_dir / f"{name}.kiln"
        if name not in paths:
            case = CASES[name]
            programs = {}
            for method, (module, example, dynamic, _) in case.methods.items():
                programs[method] = torch.export.export(module, example, dynamic_shapes=dynamic)
            path = out_dir / f"{name}.kiln"
            kiln.export(programs, backend="cpu").save(str(path))
            paths[name] = path
        return paths[name]

    return get


@pytest.mark.parametrize("name", list(CASES))
def test_python_wrapper_matches_eager(name, exported):
    case = CASES[name]
    module = Module(str(exported(name)))
    module.load()
    assert sorted(module.method_names()) == sorted(case.methods)
    for method, (model, _, _, fresh) in case.methods.items():
        torch.manual_seed(1234)
        inputs = fresh()
        with torch.no_grad():
            expected = flat_outputs(model(*inputs))
        actual = module.execute(method, list(inputs), output="torch")
        assert len(actual) == len(expected)
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert a.shape == e.shape, f"{name}.{method} output {i}: {tuple(a.shape)} vs {tuple(e.shape)}"
            assert a.dtype == e.dtype
            err = relative_error(a, e)
            assert err <= TOLERANCE[case.dtype], f"{name}.{method} output {i}: relative error {err:.3g}"


CLI_CASES = [name for name, case in CASES.items() if case.cli]


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_matches_eager(name, exported, tmp_path):
    cli = os.environ.get("KILN_CLI", str(Path(__file__).resolve().parents[2] / "build" / "kiln"))
    case = CASES[name]
    for method, (model, _, _, fresh) in case.methods.items():
        torch.manual_seed(4321)
        inputs = fresh()
        with torch.no_grad():
            expected = flat_outputs(model(*inputs))
        args = [cli, "run", str(exported(name)), "--method", method, "--output-dir", str(tmp_path / method)]
        for i, x in enumerate(inputs):
            path = tmp_path / f"{method}_in{i}.npy"
            np.save(path, x.numpy())
            args += ["--input", str(path)]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outputs = sorted((tmp_path / method).glob("out_*.npy"), key=lambda p: int(p.name.split("_")[1]))
        assert len(outputs) == len(expected), proc.stdout
        for i, (path, e) in enumerate(zip(outputs, expected)):
            a = torch.from_numpy(np.load(path))
            assert a.shape == e.shape
            err = relative_error(a, e)
            assert err <= TOLERANCE[case.dtype], f"{name}.{method} output {i} (CLI): relative error {err:.3g}"
