"""Weight-only quantized linear layers on the CPU: Kiln's aoti_torch_cpu__weight_int8pack_mm
(int8 weight, a scale per output column) and aoti_torch_cpu_int4_linear (4-bit codes, a scale
and zero per group of 128 input features) against torch's float32 product x @ W^T (F.linear)
on the same shapes, float32 activations, with 1 thread and with all the CPUs of the process.
Median milliseconds of --calls calls after 3 warm-up calls.

Threads: torch runs with torch.set_num_threads(t). Kiln's CPU ops take their thread count from
the model call that invokes them (aoti.num_threads, published to the ops for the call:
src/devices/cpu/parallel_for.h); a shim called directly from Python has no such call and runs
on one thread. So Kiln's columns come from build/kiln-quantized-linear-bench
(bench/cpu/quantized_linear_bench.cpp), which runs the ops inside an OpenMP thread scope of t
threads over libgomp, as a model call does.

    cmake --build build --target kiln_quantized_linear_bench
    python3 bench/cpu/quantized_linear.py [--shapes 1x2048x2048,64x2048x2048] [--calls 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def median_ms(fn, calls: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def kiln_ms(binary: Path, m: int, k: int, n: int, threads: int, calls: int) -> tuple[float, float]:
    """(int8pack ms, int4 g128 ms) from the C++ benchmark at `threads` threads."""
    out = subprocess.run([str(binary), str(m), str(k), str(n), str(threads), str(calls)], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1x2048x2048,4x2048x2048,64x2048x2048,1x4096x4096",
                        help="comma-separated MxKxN (K a multiple of 128)")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--binary", default=str(ROOT / "build" / "kiln-quantized-linear-bench"))
    args = parser.parse_args()
    binary = Path(args.binary)
    if not binary.exists():
        print(f"{binary} not found: cmake --build build --target kiln_quantized_linear_bench", file=sys.stderr)
        return 1
    all_threads = len(os.sched_getaffinity(0))
    print(f"median ms of {args.calls} calls, float32 activations")
    print(f"{'M x K x N':>14} | {'threads':>7} | {'torch fp32':>10} | {'kiln int8pack':>13} | {'kiln int4 g128':>14}")
    for shape in args.shapes.split(","):
        m, k, n = (int(v) for v in shape.split("x"))
        g = torch.Generator().manual_seed(0)
        x = torch.randn(m, k, generator=g)
        w = torch.randn(n, k, generator=g)
        for threads in sorted({1, all_threads}):
            torch.set_num_threads(threads)
            t_torch = median_ms(lambda: torch.nn.functional.linear(x, w), args.calls)
            t8, t4 = kiln_ms(binary, m, k, n, threads, args.calls)
            print(f"{shape:>14} | {threads:>7} | {t_torch:10.3f} | {t8:13.3f} | {t4:14.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
