"""The OpenMP thread count of CPU methods is chosen at run time (aoti.num_threads).

Kiln exports CPU kernels with Inductor's cpp.dynamic_threads, so the library holds no
thread count of the export machine, and the runtime sets the count on the calling thread
for each execute. The count actually used is observed from outside: libgomp starts its
worker threads the first time a parallel region asks for more than one thread and keeps
them, so the threads of a fresh process (/proc/self/task) grow by N - 1 when a region
first runs with N threads, and not at all with 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import kiln
from kiln import program as kiln_program
from kiln.runtime import KilnError, Module
from parity_models import TransformerBlock

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


class Pointwise(torch.nn.Module):
    """Only Inductor-generated kernels (each opens an OpenMP region): no fallback op."""

    def forward(self, x):
        return torch.nn.functional.gelu(x) * 2.0 + x.sum(-1, keepdim=True)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    x = torch.randn(64, 512)
    ep = torch.export.export(Pointwise().eval(), (x,))
    path = tmp_path_factory.mktemp("threads") / "pointwise.kiln"
    kiln.export({"forward": ep}, backend="cpu", verbose=False).save(str(path))
    with torch.no_grad():
        want = Pointwise()(x).numpy()
    return path, x.numpy(), want


def test_export_does_not_bake_a_thread_count(exported):
    path, _, _ = exported
    (method,) = kiln_program.load(str(path)).methods
    assert json.loads(method.metadata["aoti_options"])["cpp.dynamic_threads"] is True
    assert "omp_num_threads_baked" not in method.metadata


# Runs in a fresh process so that no OpenMP worker exists before the first call.
_CHILD = r"""
import ctypes, json, os, sys
import numpy as np
from kiln.runtime import Module

path, x_path, want_path = sys.argv[1:4]
x, want = np.load(x_path), np.load(want_path)

def threads():
    return len(os.listdir("/proc/self/task"))

def run(options):
    m = Module(path)
    m.load(options)
    before = threads()
    out = m.execute("forward", [x])[0]
    grown = threads() - before
    err = float(np.max(np.abs(out - want)) / np.max(np.abs(want)))
    return m, grown, err

report = {}
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # default: the CPUs of the affinity mask
keep = []
for name, options in (("default_1cpu", None), ("one", {"aoti": {"num_threads": 1}}),
                      ("three", {"aoti": {"num_threads": 3}}), ("three_again", {"aoti": {"num_threads": 3}})):
    m, grown, err = run(options)
    keep.append(m)
    report[name] = {"grown": grown, "err": err}
# The calling thread's own OpenMP setting is given back after each call.
gomp = ctypes.CDLL("libgomp.so.1")
report["caller_max_threads"] = gomp.omp_get_max_threads()
print(json.dumps(report))
"""


def test_num_threads_is_the_count_the_kernels_run_with(exported, tmp_path):
    path, x, want = exported
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", want)
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "OMP_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp_path / "x.npy"),
                          str(tmp_path / "want.npy")], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    for name in ("default_1cpu", "one", "three", "three_again"):
        assert report[name]["err"] < 1e-5, (name, report)
    # One CPU in the affinity mask (default) and num_threads=1: no worker thread.
    assert report["default_1cpu"]["grown"] == 0, report
    assert report["one"]["grown"] == 0, report
    # num_threads=3: the region ran with 3 threads, i.e. 2 new workers (kept for reuse).
    assert report["three"]["grown"] == 2, report
    assert report["three_again"]["grown"] == 0, report
    # OMP_NUM_THREADS=2 set the caller's own count; Kiln's calls left it as it was.
    assert report["caller_max_threads"] == 2, report


@pytest.mark.parametrize("value, message", [(0, "outside [1, 4096]"), (5000, "outside [1, 4096]"),
                                            ("2", "must be an integer")])
def test_bad_num_threads_is_refused_by_name(exported, value, message):
    path, _, _ = exported
    m = Module(str(path))
    with pytest.raises(KilnError) as info:
        m.load({"aoti": {"num_threads": value}})
    assert "num_threads" in str(info.value) and message in str(info.value)
    m.load({"aoti": {"num_threads": 2}})  # the module still loads with a good value
    m.load_method("forward")
    assert m.is_method_loaded("forward")


def test_fallback_ops_give_the_same_results_with_any_thread_count(tmp_path):
    """Attention and the linear layers' GEMMs (Kiln's CPU fallback ops) spread over
    the call's threads: a 4-head masked transformer block with batch 2 (8 (batch,
    head) pairs) matches eager at every count, at a length whose GEMMs are split
    over the team (37) and one whose larger GEMMs use OpenBLAS's threading (128)."""
    torch.manual_seed(0)
    block = TransformerBlock(causal=False).eval()
    seq = torch.export.Dim("seq", min=2, max=160)
    example = (torch.randn(2, 16, 64), torch.randn(2, 1, 16, 16))
    ep = torch.export.export(block, example, dynamic_shapes=({1: seq}, {2: seq, 3: seq}))
    path = tmp_path / "block.kiln"
    kiln.export({"forward": ep}, backend="cpu", verbose=False).save(str(path))
    inputs = {t: (torch.randn(2, t, 64), torch.randn(2, 1, t, t)) for t in (37, 128)}
    with torch.no_grad():
        want = {t: block(*x).numpy() for t, x in inputs.items()}
    got = {}
    for threads in (1, 2, 3):
        m = Module(str(path))
        m.load({"aoti": {"num_threads": threads}})
        for t, x in inputs.items():
            out = m.execute("forward", [z.numpy() for z in x])[0]
            err = float(np.max(np.abs(out - want[t])) / np.max(np.abs(want[t])))
            assert err < 1e-5, (threads, t, err)
            got[threads, t] = out
        m.close()
    # Across thread counts, within float32 rounding of each other (the generated
    # kernels' reductions may be split differently; attention is bitwise the same).
    for t in inputs:
        for threads in (2, 3):
            diff = float(np.max(np.abs(got[threads, t] - got[1, t])) / np.max(np.abs(got[1, t])))
            assert diff < 1e-6, (threads, t, diff)
