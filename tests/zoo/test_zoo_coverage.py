"""scripts/zoo_coverage.py keeps the zoo's reports in docs/data and merges the runs of part of
the zoo into them; checked on made-up reports in a temporary directory."""

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("zoo_coverage", REPO / "scripts" / "zoo_coverage.py")
zoo_coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo_coverage)


def _row(name, dtype, mode, status, detail=""):
    return {"name": name, "dtype": dtype, "mode": mode, "status": status, "detail": detail, "missing": []}


def test_a_later_run_replaces_only_its_own_rows_and_records_its_torch():
    kept = {"device": "cuda", "torch": "2.10", "gpu": "H200",
            "rows": [_row("llama", "bf16", "triton-only", "out_of_memory", "CUDA error: out of memory"),
                     _row("llama", "fp32", "triton-only", "pass"), _row("bert", "bf16", "fallbacks", "pass")]}
    report = {"device": "cuda", "torch": "2.11", "gpu": "H100",
              "rows": [_row("llama", "bf16", "triton-only", "pass"), _row("gpt2", "fp32", "fallbacks", "pass")]}
    merged = zoo_coverage.merge(kept, [report], lambda r: (r["name"], r["dtype"], r["mode"]))
    rows = {(r["name"], r["dtype"], r["mode"]): r for r in merged["rows"]}
    assert len(rows) == 4
    assert rows["llama", "bf16", "triton-only"]["status"] == "pass"
    assert rows["llama", "bf16", "triton-only"]["torch"] == "2.11"
    assert rows["llama", "fp32", "triton-only"]["torch"] == "2.10"  # kept, with its own run's torch
    assert rows["gpt2", "fp32", "fallbacks"]["gpu"] == "H100"
    assert set(zoo_coverage.environments(merged).split(", ")) == {"torch 2.10 on H200", "torch 2.11 on H100"}


def test_the_page_is_written_from_the_kept_reports(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "zoo_cpu.json").write_text(json.dumps(
        {"device": "cpu", "torch": "2.11", "rows": [{**_row("llama", None, None, "pass"), "tolerance": 1e-4}]}))
    cuda = tmp_path / "run.json"
    cuda.write_text(json.dumps({"device": "cuda", "torch": "2.11", "gpu": "H100",
                                "rows": [_row("llama", "bf16", "fallbacks", "mismatch", "output 0: 0.5 from eager")]}))
    out = tmp_path / "coverage.md"
    monkeypatch.setattr("sys.argv", ["zoo_coverage.py", "--data", str(data), "--cuda", str(cuda), "--out", str(out)])
    assert zoo_coverage.main() == 0
    page = out.read_text()
    llama = next(line for line in page.splitlines() if "(`llama`)" in line)
    assert llama.split(" | ")[2:5] == ["pass", "not run", "bf16: **differs**"]
    assert "CUDA fallbacks bf16: output 0: 0.5 from eager" in llama
    # The CUDA run is kept beside the CPU report for the next partial run.
    kept = json.loads((data / "zoo_cuda.json").read_text())
    assert [r["status"] for r in kept["rows"]] == ["mismatch"]
