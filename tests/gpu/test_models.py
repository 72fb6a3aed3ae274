"""The CUDA model suite: every model x dtype x export mode of suite_models.py exported for CUDA
with this machine's torch, run in Kiln and in eager PyTorch, within the dtype's tolerance.

One test per case, named model-dtype-mode (select with -k, e.g. -k "mlp and fp32"). The
selected cases are exported first, together, in KILN_GPU_JOBS worker processes; the runs and
timings then happen one at a time. Options (environment):
  KILN_GPU_ITERS=N          timed calls per case (default 50)
  KILN_GPU_CUDA_GRAPHS=1    also run each program with aoti.cuda_graphs (parity on fresh
                            inputs + replay timing)
  KILN_GPU_SPECS=K=V,...    extra CUDA compile specs for every export, e.g. fuse_norm_linear=on
  KILN_GPU_KEEP=DIR         keep the exported programs in DIR
  KILN_GPU_REUSE=1          with KILN_GPU_KEEP: run programs already exported there
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import gpu_support
import suite_models

pytestmark = gpu_support.cuda_only

ITERS = int(os.environ.get("KILN_GPU_ITERS", "50"))
CUDA_GRAPHS = os.environ.get("KILN_GPU_CUDA_GRAPHS") == "1"
KEEP = os.environ.get("KILN_GPU_KEEP")
REUSE = os.environ.get("KILN_GPU_REUSE") == "1"


def _extra_specs() -> dict[str, str]:
    text = os.environ.get("KILN_GPU_SPECS", "")
    specs = [s for s in text.split(",") if s]
    bad = [s for s in specs if "=" not in s]
    if bad:
        raise pytest.UsageError(f"KILN_GPU_SPECS takes KEY=VALUE[,KEY=VALUE...], got {bad}")
    return dict(s.split("=", 1) for s in specs)


EXTRA_SPECS = _extra_specs()
CASES = [(name, dtype, mode)
         for name, model in suite_models.MODELS.items()
         for dtype in model.dtypes or tuple(suite_models.DTYPES)
         for mode in suite_models.MODES]
SECTION = gpu_support.section("gpu_suite", suite_models.render_table)


@pytest.fixture(scope="module")
def programs(request, tmp_path_factory) -> dict[tuple, dict]:
    """Every selected case exported (or its export error): case -> {path, imports, export_s, error}."""
    workdir = Path(KEEP) if KEEP else tmp_path_factory.mktemp("programs")
    workdir.mkdir(parents=True, exist_ok=True)
    cases = [c for c in gpu_support.selected_params(request, "test_model", "case")
             if not suite_models.MODELS[c[0]].unavailable]
    paths = {c: str(workdir / "{}_{}_{}.kiln".format(*c)) for c in cases}
    reused = {c for c in cases if REUSE and os.path.exists(paths[c])}
    jobs = {c: (*c, paths[c], EXTRA_SPECS) for c in cases if c not in reused}
    results = gpu_support.export_in_workers(jobs, suite_models.export_case, " ".join)
    out = {}
    for c in cases:
        result = {"imports": None, "export_s": None, "error": None} if c in reused else results[c]
        if isinstance(result, Exception):  # the worker died (segfault, out of memory)
            result = {"imports": None, "export_s": None, "error": f"export worker: {result}"}
        out[c] = {"path": paths[c], **result}
    return out


@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_model(case, programs):
    name, dtype, mode = case
    why = suite_models.MODELS[name].unavailable
    if why:
        pytest.skip(f"{name}: {why}")
    exported = programs[case]
    row = SECTION.add({"model": name, "dtype": dtype, "mode": mode, "imports": exported["imports"],
                       "export_s": exported["export_s"], "error": exported["error"], "passed": False,
                       "max_rel_error": None, "kiln_ms": None, "eager_ms": None,
                       "graph_rel_error": None, "graph_ms": None})
    if row["error"]:
        pytest.fail(row["error"], pytrace=False)
    try:
        problems = suite_models.run_case(name, dtype, exported["path"], ITERS, CUDA_GRAPHS, row)
    except Exception as e:
        row["error"] = f"run: {type(e).__name__}: {e}".strip()[:2000]
        raise
    row["passed"], row["problems"] = not problems, problems
    assert not problems, "; ".join(problems)
