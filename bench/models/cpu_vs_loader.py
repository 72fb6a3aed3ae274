"""Per-call CPU latency of every benchmark model on its headline inputs: Kiln against
PyTorch's AOTI loader, calls interleaved, at each thread count.

bench/models/gpu_bench.py --device cpu times each engine in turn, so whatever else the machine
does during one engine's turn lands on that engine alone. Here each round calls Kiln and
the loader back to back (alternating which goes first), on the same input, so load from
other processes hits both alike; the ratio of the medians is what the CPU target
(Kiln <= 1.05x the loader) is checked against. Both run the same generated kernels (the
.pt2 is compiled with Kiln's CPU Inductor options); Kiln's own fallback ops (GEMM,
convolution, attention) and its call path are what differ, plus Kiln's export-time
projection fusion when the workdir was exported with it.

Run after exporting with bench/models/gpu_bench.py on the CPU, e.g.
    PYTHONPATH=python KILN_LIBRARY=build/libkiln.so python3 bench/models/gpu_bench.py --device cpu \\
        --tiny --dtype fp32 --phase export --workdir build-bench/cpu-tiny
    PYTHONPATH=python KILN_LIBRARY=build/libkiln.so python3 bench/models/cpu_vs_loader.py \\
        --workdir build-bench/cpu-tiny [--threads 1,2] [--calls 300] [--json out.json]
Every output is compared with the loader's (relative error printed; over 1e-4 fails).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_bench  # noqa: E402
import gpu_bench_models as models  # noqa: E402


def max_rel_err_vs_loader(kiln_outputs, loader_out) -> float:
    """Largest relative difference over the outputs (the loader returns the model's own
    output structure, Kiln a flat list of arrays)."""
    want = gpu_bench.flatten(loader_out)
    got = [torch.as_tensor(a) for a in kiln_outputs]
    if len(got) != len(want) or any(tuple(g.shape) != tuple(w.shape) for g, w in zip(got, want)):
        raise RuntimeError(f"Kiln's outputs {[tuple(g.shape) for g in got]} do not match the loader's "
                           f"{[tuple(w.shape) for w in want]}")
    return gpu_bench.max_rel_err(got, want)


def interleaved_ms(kiln_call, loader_call, calls: int) -> tuple[float, float]:
    kiln_t, loader_t = [], []
    for i in range(calls):
        order = ((kiln_call, kiln_t), (loader_call, loader_t))
        for fn, samples in (order if i % 2 == 0 else order[::-1]):
            t = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(kiln_t), statistics.median(loader_t)


def measure(name: str, workdir: Path, threads: int, calls: int, warmup: int) -> list[dict]:
    from kiln.runtime import Module

    stamp = json.loads(gpu_bench.paths_for(workdir, name)["stamp"].read_text())
    if stamp.get("device") != "cpu" or not stamp.get("pt2_done"):
        return [{"model": name, "threads": threads, "error": "not exported for the CPU with its .pt2"}]
    paths = gpu_bench.paths_for(workdir, name)
    bm = models.MODELS[name](gpu_bench.DTYPES[stamp["dtype"]], torch.device("cpu"), stamp["tiny"])
    torch.set_num_threads(threads)
    loader = torch._inductor.aoti_load_package(str(paths["pt2"]))
    module = Module(str(paths["kiln"]))
    module.load({"aoti": {"num_threads": threads}})
    rows = []
    for label in bm.headline:  # the headline inputs: e.g. batch 1 and 32 for the ResNet
        torch.manual_seed(1234)
        inputs = list(next(p for p in bm.points if p.label == label).inputs())
        arrays = [t.numpy() for t in inputs]

        def kiln_call():
            return module.execute("forward", arrays)

        def loader_call():
            with torch.no_grad():
                return loader(*inputs)

        err = max_rel_err_vs_loader(kiln_call(), loader_call())
        for _ in range(warmup):
            kiln_call(), loader_call()
        kiln_ms, loader_ms = interleaved_ms(kiln_call, loader_call, calls)
        rows.append({"model": name, "input": label, "threads": threads, "kiln_ms": kiln_ms, "loader_ms": loader_ms,
                     "ratio": kiln_ms / loader_ms, "max_rel_err_vs_loader": err,
                     "fuse_projections": stamp.get("fuse_projections"), "error": None})
    module.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", required=True, help="a bench/models/gpu_bench.py --device cpu export directory")
    ap.add_argument("--models", default=",".join(models.MODELS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    workdir = Path(args.workdir)
    rows = []
    print(f"{'model':18s} {'input':22s} {'threads':>7} {'kiln ms':>9} {'loader ms':>10} {'ratio':>6} {'rel err':>8}")
    for name in [m for m in args.models.split(",") if m]:
        if not gpu_bench.paths_for(workdir, name)["stamp"].exists():
            continue
        for threads in [int(t) for t in args.threads.split(",")]:
            for row in measure(name, workdir, threads, args.calls, args.warmup):
                rows.append(row)
                if row["error"]:
                    print(f"{name:18s} {row['error']}")
                    continue
                print(f"{name:18s} {row['input']:22s} {threads:7d} {row['kiln_ms']:9.3f} {row['loader_ms']:10.3f} "
                      f"{row['ratio']:6.2f} {row['max_rel_err_vs_loader']:8.1e}", flush=True)
    if args.json:
        machine = {"host": platform.node(), "cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
                   "torch": torch.__version__}
        Path(args.json).write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    bad = [r for r in rows if not r["error"] and r["max_rel_err_vs_loader"] > 1e-4]
    for r in bad:
        print(f"FAIL: {r['model']} at {r['threads']} thread(s): Kiln's outputs differ from the loader's by "
              f"{r['max_rel_err_vs_loader']:.1e}", file=sys.stderr)
    return 1 if bad or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
