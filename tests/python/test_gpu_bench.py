"""Unit tests of the GPU benchmark harness's pieces that need no GPU, no compile and no
transformers: target ratios, the Markdown report, quantiles, argument filters, the plot
data, and the transformer-block model. (The whole harness runs on CPU in its smoke
mode, `bench/models/gpu_bench.py --device cpu --tiny`, which takes minutes: not in CI.)"""

import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "bench" / "models"
sys.path.insert(0, str(BENCH))

import gpu_bench  # noqa: E402
import gpu_bench_models  # noqa: E402
import gpu_bench_report as report  # noqa: E402
import plot_gpu_bench  # noqa: E402


def _engine(p50, point="p", load_s=None, error=None):
    return {"error": error, "load_s": load_s, "points": {} if error else {point: {"p50_ms": p50, "p90_ms": p50 * 1.1}}}


def _results():
    return {
        "bandwidth": {"d2d_GBps": 3000.0, "h2d_pinned_GBps": 50.0},
        "models": {
            "gemma3_decode": {
                "headline": ["p"], "weight_bytes": 2_000_000_000, "kv_bytes": 100_000_000, "item_unit": "tokens",
                "engines": {"kiln": _engine(1.3, load_s=0.08), "kiln_graphs": _engine(0.9), "aoti": _engine(1.2)},
                "cold_start": {"kiln_cli_ms": 500.0, "python_aoti_ms": 8000.0, "ratio": 0.0625},
            },
            "resnet50": {
                "headline": ["p"], "weight_bytes": 50_000_000, "item_unit": "images",
                "engines": {"kiln": _engine(2.0), "kiln_graphs": _engine(None, error="KilnError: unknown option"),
                            "aoti": _engine(2.5)},
            },
        },
    }


def by_name(targets, target, model):
    (hit,) = [t for t in targets if t["target"] == target and t["model"].startswith(model)]
    return hit


def test_targets_ratios_and_verdicts():
    t = report.targets(_results())
    assert by_name(t, "per call kiln / AOTI loader", "gemma3_decode")["measured"] == pytest.approx(1.3 / 1.2)
    assert by_name(t, "per call kiln / AOTI loader", "gemma3_decode")["met"] is False
    assert by_name(t, "per call kiln / AOTI loader", "resnet50")["met"] is True
    assert by_name(t, "decode with CUDA graphs / AOTI loader", "gemma3")["measured"] == pytest.approx(0.75)
    assert by_name(t, "decode speed-up of CUDA graphs (kiln / kiln_graphs)", "gemma3")["measured"] == \
        pytest.approx(1.3 / 0.9)
    roof = by_name(t, "decode HBM roofline fraction (kiln_graphs)", "gemma3")
    assert roof["measured"] == pytest.approx(2.1e9 / 0.9e-3 / 1e9 / 3000.0)
    assert by_name(t, "cold start kiln run / python + aoti_load_package", "gemma3")["met"] is True
    weights = by_name(t, "weight load GB/s / pinned H2D GB/s", "gemma3")
    assert weights["measured"] == pytest.approx(2e9 / 0.08 / 1e9 / 50.0)
    # The ~50 MB model is below the 1 GB blob size of the weights target; a failed
    # graphs engine gives no ratio rather than a made-up one.
    assert not [x for x in t if x["target"].startswith("weight") and x["model"] == "resnet50"]
    assert not [x for x in t if x["model"].startswith("resnet50") and "kiln_graphs" in x["target"]]


def test_ratio_targets_prefer_the_interleaved_timing():
    results = _results()
    results["models"]["gemma3_decode"]["interleaved"] = {
        "engines": ["kiln", "kiln_graphs", "aoti"], "rounds": 100, "error": None,
        "points": {"p": {"kiln": {"p50_ms": 1.1, "p90_ms": 1.2, "calls": 100},
                         "kiln_graphs": {"p50_ms": 0.8, "p90_ms": 0.85, "calls": 100},
                         "aoti": {"p50_ms": 1.25, "p90_ms": 1.3, "calls": 100}}}}
    # A failed head-to-head falls back to each engine's own run.
    results["models"]["resnet50"]["interleaved"] = {"error": "RuntimeError: out of memory", "points": {}}
    t = report.targets(results)
    per_call = by_name(t, "per call kiln / AOTI loader", "gemma3_decode")
    assert per_call["measured"] == pytest.approx(1.1 / 1.25) and per_call["met"] is True
    assert per_call["detail"] == "interleaved"
    assert by_name(t, "decode speed-up of CUDA graphs (kiln / kiln_graphs)", "gemma3")["measured"] == \
        pytest.approx(1.1 / 0.8)
    roof = by_name(t, "decode HBM roofline fraction (kiln_graphs)", "gemma3")
    assert roof["measured"] == pytest.approx(2.1e9 / 0.8e-3 / 1e9 / 3000.0) and "(interleaved)" in roof["detail"]
    resnet = by_name(t, "per call kiln / AOTI loader", "resnet50")
    assert resnet["measured"] == pytest.approx(2.0 / 2.5) and resnet["detail"] == "sequential"
    results["targets"] = t
    md = report.markdown(results)
    assert "## Head to head" in md
    assert "| gemma3_decode | p | kiln_graphs | 0.800 | 0.850 | 100 | 0.64x |" in md
    assert "| resnet50 |  | ERROR | RuntimeError: out of memory |" in md


def test_markdown_lists_every_engine_and_error():
    results = _results()
    results["targets"] = report.targets(results)
    md = report.markdown(results)
    assert "| gemma3_decode | p | kiln | 1.300 |" in md
    assert "error: KilnError: unknown option" in md
    assert "## Targets" in md and "| NO |" in md


def test_quantile():
    assert gpu_bench._quantile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    assert gpu_bench._quantile([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], 0.9) == pytest.approx(10.0)


def test_decode_targets_cover_steps_with_caches_written_in_place():
    results = {"bandwidth": {"d2d_GBps": 4000.0}, "models": {"llm_decode_inplace": {
        "headline": ["p"], "weight_bytes": 2_000_000_000, "kv_bytes": 0, "item_unit": "tokens",
        "engines": {"kiln": _engine(2.0), "kiln_graphs": _engine(1.0), "aoti": _engine(4.0)}}}}
    t = report.targets(results)
    assert by_name(t, "decode with CUDA graphs / AOTI loader", "llm_decode_inplace")["measured"] == pytest.approx(0.25)
    roof = by_name(t, "decode HBM roofline fraction (kiln_graphs)", "llm_decode_inplace")
    assert roof["measured"] == pytest.approx(2e9 / 1e-3 / 1e9 / 4000.0)


def test_model_filters_and_unknown_names():
    args = gpu_bench.parse_args(["--models", "resnet50,gemma3_decode", "--skip", "gemma3_decode", "--device", "cpu"])
    assert args.model_list == ["resnet50"]
    with pytest.raises(SystemExit):
        gpu_bench.parse_args(["--models", "nope"])


def test_plot_series_sorted_by_x():
    model = {"point_x": {"seq=512": 512, "seq=128": 128},
             "engines": {"kiln": {"points": {"seq=512": {"p50_ms": 2.0}, "seq=128": {"p50_ms": 1.0}}}}}
    assert plot_gpu_bench.sweep_series(model) == {"kiln": [(128, 1.0), (512, 2.0)]}


def test_transformer_block_tiny_points():
    bm = gpu_bench_models.transformer_block(torch.float32, torch.device("cpu"), tiny=True)
    with torch.no_grad():
        for point in bm.points:
            (x,) = point.inputs()
            y = bm.module(x)
            assert y.shape == x.shape and torch.isfinite(y).all()
    assert bm.headline == [bm.points[0].label] and bm.sweep == "seq"


def test_merge_and_compatible_results(tmp_path):
    a = {"config": {"device": "cuda", "tiny": False, "dtype": "bf16", "mode": "triton-only"},
         "models": {"resnet50": {"x": 1}}, "bandwidth": {"d2d_GBps": 1.0}, "commands": ["a"]}
    b = {"config": dict(a["config"]), "models": {"gemma3_decode": {"x": 2}, "resnet50": {"x": 3}},
         "bandwidth": {"d2d_GBps": 2.0}, "commands": ["b"]}
    merged = report.merge([a, b])
    assert merged["models"] == {"resnet50": {"x": 3}, "gemma3_decode": {"x": 2}}
    assert merged["bandwidth"] == {"d2d_GBps": 2.0} and merged["commands"] == ["a", "b"]
    path = tmp_path / "r.json"
    path.write_text(__import__("json").dumps(a))
    assert report.load_compatible(path, a["config"])["models"] == a["models"]
    assert report.load_compatible(path, {**a["config"], "tiny": True}) is None
    assert report.load_compatible(tmp_path / "missing.json", a["config"]) is None
