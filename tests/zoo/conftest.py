"""The model zoo (zoo_models.py) on the CPU: paths, and the JSON report written after the run.

Environment:
  KILN_ZOO_DIR     where exported programs are kept and reused (default: the run's temporary
                   directory); a program found there is not exported again, so clear it after
                   changing the models, torch or Kiln's exporter
  KILN_ZOO_REPORT  path of the JSON report of the run (one row per model), which
                   scripts/zoo_coverage.py turns into docs/coverage.md
  KILN_ZOO_JOBS    export worker processes (default 2)
"""

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE.parents[1] / "python", HERE):
    sys.path.insert(0, str(path))

import zoo_report  # noqa: E402


def pytest_sessionfinish(session):
    path = os.environ.get("KILN_ZOO_REPORT")
    if not path or not zoo_report.ROWS:
        return
    import torch

    doc = {"device": "cpu", "torch": torch.__version__, "rows": sorted(zoo_report.ROWS, key=lambda r: r["name"])}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")
