"""Where one call's time goes, engine by engine, for a model bench/models/gpu_bench.sh exported.

For Kiln (each stream policy, with and without CUDA graphs) and PyTorch's AOTI loader
on the model's headline input:
  * event ms: the bench's own per-call measure (CUDA events around one call, then sync);
  * host us: wall time of the call on the host;
  * pipelined ms: mean over 200 calls issued back to back with one sync at the end
    (what a serving loop that does not wait per call sees);
  * the CUDA API calls each call makes (torch.profiler with CUPTI records those of
    every library in the process, Kiln's included), per call;
  * the Python functions that take the host time (cProfile), for Kiln.
Run it on the GPU machine after `bench/models/gpu_bench.sh --phase export --models NAME`, in the
environment bench/models/gpu_bench.sh sets up (scripts/gpu_env.sh, the libstdc++ preload):
    source scripts/gpu_env.sh build-cuda
    LD_PRELOAD=/lib/x86_64-linux-gnu/libstdc++.so.6 python3 bench/diagnostics/gpu_call_profile.py \
        --model transformer_block [--workdir build-bench/cuda] [--details]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))  # gpu_bench and its models
import gpu_bench  # noqa: E402
import gpu_bench_models as models  # noqa: E402


def host_us(fn, iters=50) -> float:
    samples = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples)


def pipelined_ms(fn, calls=200) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3 / calls


def cuda_api_per_call(fn, calls=20, kernels=15) -> str:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        name = e.key
        if not (name.startswith("cuda") or name.startswith("cu")) and e.device_type.name != "CUDA":
            continue
        device_us = getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0)) / calls
        rows.append((e.self_cpu_time_total / calls, device_us, e.count / calls, name[:70]))
    header = f"    {'host us/call':>12} {'GPU us/call':>11} {'n/call':>7}  name"
    show = lambda picked: [f"    {h:12.1f} {d:11.1f} {n:7.1f}  {name}" for h, d, n, name in picked]  # noqa: E731
    by_host = sorted(rows, reverse=True)[:18]
    # Kernels take no host time of their own: listed apart, by GPU time.
    on_gpu = sorted((r for r in rows if r[0] == 0 and r[1] > 0), key=lambda r: -r[1])
    total = f"    kernels: {sum(r[1] for r in on_gpu):.1f} GPU us and {sum(r[2] for r in on_gpu):.1f} launches per call"
    return "\n".join([header] + show(by_host) + ["    kernels by GPU time:", total, header] + show(on_gpu[:kernels]))


def python_profile(fn, calls=200) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(10)
    return "\n".join("    " + line for line in text.getvalue().splitlines() if line.strip())[:3000]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="transformer_block")
    ap.add_argument("--workdir", default="build-bench/cuda")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--details", action="store_true", help="also print CUDA API and Python profiles")
    ap.add_argument("--kernels", type=int, default=15, help="kernels listed with --details (by GPU time)")
    ap.add_argument("--engines", default="all", help="'all', or a comma list of: per_method, caller, aoti")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    paths = gpu_bench.paths_for(Path(args.workdir), args.model)
    bm = models.MODELS[args.model](gpu_bench.DTYPES[args.dtype], torch.device("cuda"), False)
    torch.manual_seed(1234)
    point = next(p for p in bm.points if p.label == bm.headline[0])
    inputs = list(point.inputs())
    print(f"{args.model} {point.label}: {len(inputs)} inputs, {torch.cuda.get_device_name()}")

    timer = gpu_bench.Timer("cuda")
    bench_args = argparse.Namespace(device="cuda", kiln_stream="per_method", kiln_verify_weights=False)
    kcuda_holder = []

    def kcuda():
        if not kcuda_holder:
            kcuda_holder.append(gpu_bench.KilnCuda())
        return kcuda_holder[0]

    variants = []
    wanted = {"per_method", "caller", "aoti"} if args.engines == "all" else set(args.engines.split(","))
    for stream in ("per_method", "caller"):
        for graphs in (False, True):
            if stream in wanted:
                variants.append((f"kiln {stream}{' graphs' if graphs else ''}", stream, graphs))
    if "aoti" in wanted:
        variants.append(("aoti loader", None, False))
    print(f"{'engine':24s} {'event ms':>9} {'host us':>9} {'pipelined ms':>13}")
    for label, stream, graphs in variants:
        if stream is None:
            engine = gpu_bench.AotiEngine(paths["pt2"], {"pt2_done": paths["pt2"].exists()})
        else:
            bench_args.kiln_stream = stream
            engine = gpu_bench.KilnEngine(paths["kiln"], bench_args, graphs, kcuda)

        def call():
            return engine.call(inputs)

        for _ in range(10):
            call()
        torch.cuda.synchronize()
        event_p50 = timer.measure(call, warmup=0, iters=50)["p50_ms"]  # the bench's own measure
        print(f"{label:24s} {event_p50:9.3f} {host_us(call):9.1f} {pipelined_ms(call):13.3f}", flush=True)
        if args.details and not graphs:
            try:
                print(cuda_api_per_call(call, kernels=args.kernels))
                if stream is not None:
                    print(python_profile(call))
            except Exception as e:  # a profiler problem must not hide the timings
                print(f"    profile failed: {type(e).__name__}: {e}")
        engine.close()
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
