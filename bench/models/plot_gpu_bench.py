#!/usr/bin/env python3
"""PNG plots from bench/models/gpu_bench.py's JSON (run where matplotlib is installed; the
GPU machine need not have it):

    python3 bench/models/plot_gpu_bench.py gpu_bench.json --out docs/images

One plot per swept model (latency p50 against batch size or sequence length, one line
per engine, log-log), plus a bar chart of the headline p50 of every model relative to
PyTorch's AOTI loader. Prints the paths it wrote.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ENGINE_STYLE = {"kiln": "o-", "kiln_graphs": "s-", "aoti": "^--", "eager": "x:", "compile": "d-."}


def sweep_series(model: dict) -> dict[str, list[tuple[int, float]]]:
    """engine -> [(x, p50 ms)] sorted by x, from one model's results."""
    xs = model.get("point_x") or {}
    series = {}
    for engine, row in (model.get("engines") or {}).items():
        pts = [(xs[p], r["p50_ms"]) for p, r in (row.get("points") or {}).items() if p in xs and r.get("p50_ms")]
        if pts:
            series[engine] = sorted(pts)
    return series


def relative_to_aoti(results: dict) -> dict[str, dict[str, float]]:
    """label -> {engine: p50 / AOTI loader p50} over every model's headline inputs."""
    out = {}
    for name, m in (results.get("models") or {}).items():
        engines = m.get("engines") or {}
        for point in m.get("headline") or []:
            aoti = ((engines.get("aoti") or {}).get("points") or {}).get(point, {}).get("p50_ms")
            if not aoti:
                continue
            out[f"{name}\n{point}"] = {e: r["points"][point]["p50_ms"] / aoti for e, r in engines.items()
                                       if point in (r.get("points") or {})}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("--out", default="docs/images")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = json.loads(Path(args.json).read_text())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = (results.get("machine") or {}).get("gpu") or "CPU"
    written = []
    for name, m in (results.get("models") or {}).items():
        if m.get("error") or not m.get("sweep"):
            continue
        series = sweep_series(m)
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for engine, pts in series.items():
            ax.plot([x for x, _ in pts], [y for _, y in pts], ENGINE_STYLE.get(engine, "o-"), label=engine)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size" if m["sweep"] == "batch" else "sequence length")
        ax.set_ylabel("latency p50 (ms)")
        ax.set_title(f"{name} on {gpu}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        path = out / f"gpu_bench_{name}_{m['sweep']}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    rel = relative_to_aoti(results)
    if rel:
        engines = sorted({e for v in rel.values() for e in v}, key=lambda e: list(ENGINE_STYLE).index(e)
                         if e in ENGINE_STYLE else 99)
        fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(rel)), 4))
        width = 0.8 / len(engines)
        for i, engine in enumerate(engines):
            ax.bar([j + i * width for j in range(len(rel))], [v.get(engine, 0) for v in rel.values()], width,
                   label=engine)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_yscale("log")  # ratios: 0.5x and 2x equally far from the loader
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rel))], list(rel), fontsize=7)
        ax.set_ylabel("p50 latency / AOTI loader (log; lower is better)")
        ax.set_title(f"Per-call latency relative to PyTorch's AOTI loader, {gpu}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / "gpu_bench_vs_aoti.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
