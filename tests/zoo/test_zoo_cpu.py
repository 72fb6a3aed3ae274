"""The model zoo on the CPU: every architecture of zoo_models.ZOO exported with torch.export and
kiln.export(ep, "cpu"), run by Kiln through the Python wrapper on fresh random inputs (other
batch / sequence sizes where dims are dynamic) and compared with eager PyTorch.

Outcomes (zoo_report.OUTCOMES): a failure of torch.export or of AOTInductor itself (stock
aoti_compile_and_package fails too) is an xfail with the error's first line; Kiln refusing the
export for missing fallback ops, failing where stock AOTInductor compiles, failing to run, or
differing from eager is a failure. The selected models are exported first, together, in
KILN_ZOO_JOBS (default 2) worker processes; see conftest.py for the other settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

import zoo_report
from zoo_models import ZOO, first_line

#: fp32 bound on max |kiln - eager| / max |eager|; a family needing more states it in ZOO.
TOLERANCE = 1e-4
JOBS = int(os.environ.get("KILN_ZOO_JOBS") or 2)


@pytest.fixture(scope="session")
def exports(request, tmp_path_factory) -> dict[str, dict]:
    """name -> {status, detail, missing, export_s, path} for every selected model."""
    shared = os.environ.get("KILN_ZOO_DIR")
    out_dir = Path(shared) if shared else tmp_path_factory.mktemp("zoo")
    out_dir.mkdir(parents=True, exist_ok=True)
    names = [item.callspec.params["name"] for item in request.session.items
             if getattr(item, "originalname", None) == "test_zoo_cpu"]
    paths = {n: out_dir / f"{n}.kiln" for n in names}
    jobs = {n: (n, str(paths[n])) for n in names if not paths[n].is_file()}
    results = zoo_report.export_all(jobs, _export_worker, JOBS)
    out = {}
    for n in names:
        reused = {"status": "ok", "detail": "", "missing": [], "export_s": None}
        out[n] = {**results.get(n, reused), "path": paths[n]}
    return out


def _export_worker(name: str, path: str) -> dict:
    from zoo_models import export_model

    return export_model(name, path, "cpu")


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_cpu(name, exports):
    from kiln.runtime import Module

    entry = ZOO[name]
    exported = exports[name]
    tolerance = entry.tolerance or TOLERANCE
    row = {"name": name, "family": entry.family, "kind": entry.kind, "status": exported["status"],
           "detail": exported["detail"], "missing": exported["missing"], "export_s": exported["export_s"],
           "max_rel_error": None, "tolerance": tolerance}
    zoo_report.ROWS.append(row)
    if row["status"] in zoo_report.XFAIL:
        pytest.xfail(f"{zoo_report.OUTCOMES[row['status']]}: {row['detail']}")
    if row["status"] == "missing_ops":
        pytest.fail(f"{name}: Kiln lacks fallback ops: {', '.join(row['missing'])}", pytrace=False)
    if row["status"] != "ok":
        pytest.fail(f"{name}: {row['detail']}", pytrace=False)

    built = entry.factory(torch.float32, torch.device("cpu"))
    fresh = built.fresh()
    assert len(fresh) >= 2
    if built.dynamic_shapes is not None:
        sizes = {tuple(tuple(x.shape) for x in inputs) for inputs in fresh + [built.example]}
        assert len(sizes) >= 3, f"{name}: dynamic dims but fresh inputs of the export's sizes only"
    try:
        module = Module(str(exported["path"]))
        module.load()
        run = lambda inputs: module.execute("forward", list(inputs), output="torch")  # noqa: E731
        row["max_rel_error"], problems = zoo_report.compare(built.module, fresh, run, tolerance)
    except Exception as e:
        row.update(status="run_failed", detail=first_line(e))
        raise
    row["status"] = "mismatch" if problems else "pass"
    row["detail"] = "; ".join(problems)
    assert not problems, f"{name}: " + "; ".join(problems)

