"""What the GPU tests share: the device and the build under test, prerequisites, parallel
exports, and the summary tables printed after the run (and written under $OUT).

Environment (scripts/gpu_test.sh sets the first three):
  KILN_BUILD_DIR      the Kiln build under test (default build-cuda, or build with
                      KILN_GPU_DEVICE=cpu), relative to the repository root or absolute
  KILN_GPU_REQUIRED   1: a missing GPU, build file or runner fails the test instead of
                      skipping it (on a GPU machine nothing may pass by not running)
  KILN_GPU_DEVICE     cuda (default) or cpu: the CPU smoke run of the tests that have one,
                      with a CPU build, to check the tests' own logic on a machine without a GPU
  OUT                 where the summary tables, their JSON and the logs go (not written when unset)
  KILN_GPU_JOBS       export worker processes (default: half the cores, at most 8)
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

REPO = Path(__file__).resolve().parents[2]
DEVICE = os.environ.get("KILN_GPU_DEVICE", "cuda")
if DEVICE not in ("cuda", "cpu"):
    raise pytest.UsageError(f"KILN_GPU_DEVICE is {DEVICE!r}; expected cuda or cpu")
REQUIRED = os.environ.get("KILN_GPU_REQUIRED") == "1"
BUILD = (REPO / os.environ.get("KILN_BUILD_DIR", "build-cuda" if DEVICE == "cuda" else "build")).resolve()
JOBS = int(os.environ.get("KILN_GPU_JOBS") or max(1, min(8, (os.cpu_count() or 2) // 2)))

#: For the tests that run on CUDA only (no CPU smoke run): `pytestmark = cuda_only`.
cuda_only = pytest.mark.skipif(DEVICE != "cuda", reason="CUDA only (KILN_GPU_DEVICE=cpu)")


def missing(why: str):
    """A prerequisite is missing: fails the test where the suite must run (KILN_GPU_REQUIRED=1),
    skips it elsewhere."""
    if REQUIRED:
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def visible_gpus() -> list[str]:
    """The CUDA device ids this process may use, as CUDA_VISIBLE_DEVICES names them for a child
    process (every GPU torch sees where the variable is unset)."""
    import torch

    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d.strip() for d in listed.split(",") if d.strip()]
    return [str(i) for i in range(torch.cuda.device_count())]


def build_file(relative: str, how: str = "") -> Path:
    """A file of the build under test; missing() when it is not there."""
    path = BUILD / relative
    if not path.exists():
        missing(f"{path} is missing{f' ({how})' if how else ''}; KILN_BUILD_DIR names the build under test")
    return path


def gtest_binary(name: str) -> Path:
    """A CUDA unit test binary of the build (tests/devices/cuda/NAME, or NAME at its top)."""
    for candidate in (BUILD / "tests" / "devices" / "cuda" / name, BUILD / name):
        if candidate.is_file():
            return candidate
    missing(f"{name} is not built in {BUILD} (configure with -DKILN_WITH_CUDA=ON, build target {name})")


def out_dir() -> Path | None:
    """$OUT, created, or None when it is unset."""
    out = os.environ.get("OUT")
    if not out:
        return None
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    return path


def log_dir(tmp_path: Path) -> Path:
    """Where a test writes its logs: $OUT when set, else its temporary directory."""
    return out_dir() or tmp_path


def environment() -> dict[str, str]:
    """The machine the numbers come from, for the JSON."""
    import torch

    env = {"device": DEVICE, "torch": torch.__version__}
    if DEVICE == "cuda" and torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name()
    return env


def sync() -> None:
    if DEVICE == "cuda":
        import torch

        torch.cuda.synchronize()


# ---- parallel exports ------------------------------------------------------------------------


def selected_params(request, test_name: str, argname: str) -> list:
    """The `argname` parameters of the tests named test_name (of the requesting module) that this
    run selected (after -k and -m), in order: what the run's exports must cover."""
    module = request.module.__name__
    return [item.callspec.params[argname] for item in request.session.items
            if getattr(item, "originalname", None) == test_name and item.module.__name__ == module]


def export_in_workers(jobs: dict[Any, tuple], worker: Callable, describe: Callable[[Any], str]) -> dict[Any, Any]:
    """Runs worker(*args) for every key -> args of jobs in spawned processes (exports are mostly
    CPU-bound compiles, and each gets a fresh Inductor), KILN_GPU_JOBS at a time. Returns key ->
    the worker's result, or the exception that ended it (a worker that died included)."""
    results: dict[Any, Any] = {}
    if not jobs:
        return results
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(JOBS, len(jobs)), mp_context=ctx) as pool:
        futures = {pool.submit(worker, *args): key for key, args in jobs.items()}
        for fut in concurrent.futures.as_completed(futures):
            key = futures[fut]
            try:
                results[key] = fut.result()
            except Exception as e:  # noqa: BLE001 - reported by the test of that key
                results[key] = e
            result = results[key]
            failed = isinstance(result, Exception) or (isinstance(result, dict) and result.get("error"))
            state = "FAILED" if failed else "ok"
            print(f"[kiln gpu] exported {describe(key)}: {state}", flush=True)
    return results


# ---- summary tables --------------------------------------------------------------------------


@dataclass
class Section:
    """One table of the run's summary: tests add rows as they go (a failing test's row too);
    after the run the table is printed and, with $OUT set, written to $OUT/<name>_table.txt
    and $OUT/<name>.json (rows and `extra`, with the machine's environment())."""

    name: str
    render: Callable[["Section"], str]
    rows: list[dict] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, row: dict) -> dict:
        self.rows.append(row)
        return row

    def write(self, out: Path) -> None:
        (out / f"{self.name}_table.txt").write_text(self.render(self) + "\n")
        doc = {**environment(), **self.extra, "rows": self.rows}
        (out / f"{self.name}.json").write_text(json.dumps(doc, indent=1, default=str))


SECTIONS: dict[str, Section] = {}


def section(name: str, render: Callable[[Section], str]) -> Section:
    """The summary section `name`, created on first use."""
    if name not in SECTIONS:
        SECTIONS[name] = Section(name, render)
    return SECTIONS[name]


def check_table(title: str) -> Callable[[Section], str]:
    """Renders rows {check, max_rel_err, ok, note} (the layout and .pt2 tables)."""

    def render(sec: Section) -> str:
        lines = [title, f"{'check':<64} {'max rel err':>11}  result  note", "-" * 106]
        for r in sec.rows:
            err = "-" if r.get("max_rel_err") is None else f"{r['max_rel_err']:.2e}"
            note = str(r.get("note", "")).replace("\n", " ")
            lines.append(f"{r['check']:<64} {err:>11}  {'pass' if r['ok'] else 'FAIL':<6}  {note[:120]}")
        passed = sum(r["ok"] for r in sec.rows)
        lines.append(f"{passed}/{len(sec.rows)} rows pass")
        return "\n".join(lines)

    return render


def checked(sec: Section, check: str, fn: Callable[[], tuple[float | None, bool, str]]) -> None:
    """Runs fn() -> (max relative error or None, ok, note), adds the row to `sec` (an exception
    is a failed row with its message) and fails the test unless ok."""
    row = sec.add({"check": check, "max_rel_err": None, "ok": False, "note": ""})
    try:
        row["max_rel_err"], row["ok"], row["note"] = fn()
    except Exception as e:
        row["note"] = f"{type(e).__name__}: {str(e)[:300]}"
        raise
    assert row["ok"], f"{check}: {row['note']} (max rel err {row['max_rel_err']})"


def cuda_shim_library():
    """tests/ops' ShimLibrary over this build's libkiln.so with the CUDA plugin's ops, after
    checking that Kiln sees a CUDA device (the plugin is loaded)."""
    import ctypes
    import sys

    ops_dir = str(REPO / "tests" / "ops")
    if ops_dir not in sys.path:
        sys.path.insert(0, ops_dir)
    from shim_caller import ShimLibrary

    base = BUILD / "libkiln.so"
    kiln = ctypes.CDLL(str(base))
    kiln.kiln_cuda_device_count.restype = ctypes.c_int32
    assert kiln.kiln_cuda_device_count() > 0, "Kiln sees no CUDA device (libkiln_cuda.so not loaded?)"
    return ShimLibrary(str(base), str(BUILD / "libkiln_cuda.so"))
