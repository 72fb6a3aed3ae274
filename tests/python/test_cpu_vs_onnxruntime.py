"""Unit tests of bench/models/cpu_vs_onnxruntime.py's pieces that need no export, no
onnxruntime and no transformers: the output comparison, the quantiles and the
interleaved timing loop. (The benchmark itself exports seven models: not in CI.)"""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "models"))

import cpu_vs_onnxruntime as bench  # noqa: E402


def test_max_rel_err_compares_every_output_across_types():
    want = (torch.tensor([1.0, -4.0]), {"b": torch.tensor([[2.0]])})
    got = [np.array([1.0, -4.0], dtype=np.float32), np.array([[2.5]], dtype=np.float32)]
    # The second output is off by 0.5 on a scale of 2.
    assert bench.max_rel_err(got, want) == pytest.approx(0.25)
    assert bench.max_rel_err(want, want) == 0.0


def test_max_rel_err_refuses_mismatched_outputs_and_flags_nan():
    with pytest.raises(ValueError, match="2 outputs against 1"):
        bench.max_rel_err([np.zeros(2), np.zeros(2)], [np.zeros(2)])
    with pytest.raises(ValueError, match="shape"):
        bench.max_rel_err([np.zeros((2, 3))], [np.zeros((3, 2))])
    assert bench.max_rel_err([np.array([np.nan, 1.0])], [np.array([1.0, 1.0])]) == float("inf")
    assert bench.max_rel_err([np.array([1.0])], [np.array([0.0])]) == float("inf")
    assert bench.max_rel_err([np.zeros(3)], [np.zeros(3)]) == 0.0


def test_summary_quantiles():
    s = bench.summary([float(v) for v in range(1, 12)])  # 1..11
    assert (s["median"], s["p10"], s["p90"], s["calls"]) == (6.0, 2.0, 10.0, 11)


def test_interleaved_rotates_the_order_and_stops_at_the_budget():
    order = []
    fns = {name: (lambda n=name: order.append(n)) for name in ("a", "b", "c")}
    times = bench.interleaved(fns, calls=3, warmup=1, budget_s=60.0)
    assert order == list("abc") + list("abc") + list("bca") + list("cab")
    assert all(t["calls"] == 3 for t in times.values())
    # A budget already spent still leaves 3 rounds.
    times = bench.interleaved(fns, calls=100, warmup=0, budget_s=0.0)
    assert all(t["calls"] == 3 for t in times.values())


def test_ratio_svg_draws_each_measured_row_and_skips_failures():
    rows = [{"model": "m", "input": "1x8", "threads": 1, "error": None, "kiln_over_ort": 1.5, "eager_ms": 3.0,
             "ort_ms": 1.0},
            {"model": "broken", "error": "export failed"}]
    svg = bench.ratio_svg(rows, "t & u")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "m 1x8, 1 thr" in svg and "1.50" in svg and "3.00" in svg and "broken" not in svg
    assert "t &amp; u" in svg


def test_interleaved_bursts_time_all_but_the_first_call_of_each_burst():
    order = []
    fns = {name: (lambda n=name: order.append(n)) for name in ("a", "b")}
    times = bench.interleaved(fns, calls=2, warmup=0, budget_s=60.0, burst=3)
    assert order == list("aaabbb") + list("bbbaaa")
    assert all(t["calls"] == 4 for t in times.values())  # 2 rounds x (3 - 1) timed calls
