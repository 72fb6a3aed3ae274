"""CPU benchmarks for the closing notes of the foundation issue, measured side by
side in one run on this machine:

1. Cold start: `kiln run` on the MLP (process start -> output written) against a
   fresh Python process loading the same model with
   torch._inductor.aoti_load_package (compiled with libtorch linking) and
   running it once. Median of N runs each, and the ratio.
2. Per-call latency of the transformer block: Kiln (Python wrapper) vs eager
   vs PyTorch's AOTI loader, with 1 thread and with all the CPUs of the
   process. The .pt2 is compiled with the same Inductor kernel options as Kiln's
   CPU export (cpp.dynamic_threads), so both run the same generated kernels;
   the thread count is torch.set_num_threads for eager and the loader and
   aoti.num_threads for Kiln. Calls of the three are interleaved (one of each
   per round) so load from other processes hits them alike; medians.
3. Size of the stripped runtime library and CLI, and their ldd.

    PYTHONPATH=python python3 bench/models/cpu_bench.py [--runs 7] [--calls 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import kiln  # noqa: E402
from kiln.exporter import CpuBackend  # noqa: E402
from kiln.runtime import Module  # noqa: E402
from parity_models import Mlp, TransformerBlock  # noqa: E402

BUILD = Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build"))
CLI = BUILD / "kiln"


def export_both(model, example, dynamic, workdir: Path, name: str):
    """The same model as a .kiln program and as a libtorch-linked .pt2 package."""
    ep = torch.export.export(model, example, dynamic_shapes=dynamic)
    kiln_path = workdir / f"{name}.kiln"
    kiln.export({"forward": ep}, backend="cpu", verbose=False).save(str(kiln_path))
    pt2_path = workdir / f"{name}.pt2"
    # Kiln's kernel options without its packaging ones (aot_inductor.*, which only
    # decide how the library and weights are stored and linked).
    kernel_options = {k: v for k, v in CpuBackend().aoti_compile_options({}).items()
                      if not k.startswith("aot_inductor.")}
    torch._inductor.aoti_compile_and_package(ep, package_path=str(pt2_path), inductor_configs=kernel_options)
    return kiln_path, pt2_path


def median_ms(samples):
    return statistics.median(samples) * 1e3


def cold_start(kiln_path: Path, pt2_path: Path, example: torch.Tensor, runs: int, workdir: Path):
    x_path = workdir / "x.npy"
    np.save(x_path, example.numpy())
    out_dir = workdir / "cold_out"
    kiln_times, torch_times = [], []
    loader = (
        "import sys, torch\n"
        "m = torch._inductor.aoti_load_package(sys.argv[1])\n"
        "import numpy as np\n"
        "y = m(torch.from_numpy(np.load(sys.argv[2])))\n"
        "torch.save(y, sys.argv[3])\n"
    )
    for _ in range(runs):
        shutil.rmtree(out_dir, ignore_errors=True)
        t = time.perf_counter()
        subprocess.run([str(CLI), "run", str(kiln_path), "--input", str(x_path), "--output-dir", str(out_dir)],
                       check=True, capture_output=True)
        kiln_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", loader, str(pt2_path), str(x_path), str(workdir / "y.pt")],
                       check=True, capture_output=True)
        torch_times.append(time.perf_counter() - t)
    return median_ms(kiln_times), median_ms(torch_times)


def interleaved_medians(fns: dict, calls: int) -> dict:
    """Median ms per call of each function, calling them in turn (one of each per round)."""
    samples = {name: [] for name in fns}
    for _ in range(10):
        for fn in fns.values():
            fn()
    for _ in range(calls):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t)
    return {name: median_ms(s) for name, s in samples.items()}


def latency_table(kiln_path: Path, pt2_path: Path, model, x: torch.Tensor, calls: int):
    rows = []
    aoti = torch._inductor.aoti_load_package(str(pt2_path))
    x_np = x.numpy()
    with torch.no_grad():
        want = model(x).numpy()
    for threads in (1, len(os.sched_getaffinity(0))):
        torch.set_num_threads(threads)
        module = Module(str(kiln_path))
        module.load({"aoti": {"num_threads": threads}})
        err = float(np.abs(module.execute("forward", [x_np])[0] - want).max() / np.abs(want).max())
        with torch.no_grad():
            t = interleaved_medians({"kiln": lambda: module.execute("forward", [x_np]),
                                     "eager": lambda: model(x), "loader": lambda: aoti(x)}, calls)
        module.close()
        rows.append({"threads": threads, "kiln_ms": t["kiln"], "eager_ms": t["eager"],
                     "aoti_loader_ms": t["loader"], "kiln_max_rel_err": err})
    return rows


def sizes():
    out = {}
    for name in ("libkiln.so", "kiln"):
        path = BUILD / name
        stripped = Path(tempfile.mkdtemp()) / name
        shutil.copy(path.resolve(), stripped)
        subprocess.run(["strip", str(stripped)], check=True)
        ldd = subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout
        out[name] = {"stripped_bytes": stripped.stat().st_size,
                     "ldd": [line.strip().split(" ")[0] for line in ldd.splitlines() if line.strip()]}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.manual_seed(0)
    workdir = Path(tempfile.mkdtemp(prefix="kiln-bench-"))
    batch = torch.export.Dim("batch", min=1, max=64)
    mlp = Mlp().eval()
    mlp_x = torch.randn(8, 32)
    mlp_kiln, mlp_pt2 = export_both(mlp, (mlp_x,), ({0: batch},), workdir, "mlp")
    block = TransformerBlock().eval()
    block_x = torch.randn(1, 128, 64)
    seq = torch.export.Dim("seq", min=2, max=512)
    block_kiln, block_pt2 = export_both(block, (block_x,), ({1: seq},), workdir, "block")

    kiln_cold, torch_cold = cold_start(mlp_kiln, mlp_pt2, mlp_x, args.runs, workdir)
    latency = latency_table(block_kiln, block_pt2, block, block_x, args.calls)
    size = sizes()
    result = {"machine": f"{os.cpu_count()} cores, {os.uname().machine}, {torch.__version__}",
              "load_average": os.getloadavg(),
              "cold_start_ms": {"kiln_cli": kiln_cold, "python_aoti_load_package": torch_cold,
                                "ratio": kiln_cold / torch_cold},
              "transformer_block_latency": latency, "sizes": size}
    print(f"machine: {result['machine']}; load average {os.getloadavg()[0]:.1f}")
    print(f"cold start (median of {args.runs}): kiln run {kiln_cold:.1f} ms | python + aoti_load_package "
          f"{torch_cold:.1f} ms | ratio {kiln_cold / torch_cold:.3f}")
    print("transformer block [1,128,64], median per call:")
    print("  threads | kiln ms | eager ms | aoti loader ms | kiln/loader | kiln max rel err")
    for r in latency:
        print(f"  {r['threads']:7d} | {r['kiln_ms']:7.3f} | {r['eager_ms']:8.3f} | {r['aoti_loader_ms']:14.3f} | "
              f"{r['kiln_ms'] / r['aoti_loader_ms']:11.3f} | {r['kiln_max_rel_err']:.1e}")
    for name, info in size.items():
        print(f"{name}: stripped {info['stripped_bytes'] / 1e6:.2f} MB; ldd: {', '.join(info['ldd'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
