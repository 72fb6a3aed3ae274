"""Cold-process load time, first call, per-call time and resident memory of a program, for one
or several Kiln runtimes side by side (each measured in fresh processes, the runtimes
alternating, medians over --runs processes each).

A load opens the program, reads its header and FlatBuffer, and for the method its library
and weights blob into private memory, hashing each while it is read (docs/program-format.md,
"What is verified is what runs"); a CUDA method whose weights go unchecked
(`--verify-weights` off, the default here as in bench/models/gpu_bench.py) uploads them from the
file straight into its pinned staging buffers instead. This shows what that costs.

    PYTHONPATH=python KILN_LIBRARY=build/libkiln.so python3 bench/models/load_time.py \\
        [--device cpu|cuda] [--program P.kiln | --weights-mib 128] [--dtype float32|bfloat16] \\
        [--verify-weights] [--runs 9] [--threads 1] \\
        [--runtime NAME=LIBKILN[:PYTHONPATH] ...]

Without --program it exports an MLP of Linear(2048, 2048) layers holding about
--weights-mib MiB of weights into a temporary directory (needs torch; CUDA in Kiln's
`fallbacks` mode, no autotuning). Without --runtime it measures $KILN_LIBRARY with this
tree's Python wrapper; give several to compare builds (an older build with its own
wrapper: NAME=/old/build/libkiln.so:/old/python).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, statistics, sys, time
import numpy as np
from kiln.runtime import Module
path, verify = sys.argv[1], sys.argv[2] == "1"
t0 = time.perf_counter()
m = Module(path)
m.load({"aoti": {"verify_weights": verify}})
m.load_method("forward")
t1 = time.perf_counter()
spec = m.method_meta("forward").inputs[0]
shape = [d if d is not None else 4 for d in spec.shape]
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
output = "numpy"
if spec.dtype == "bfloat16":  # numpy has no bfloat16: torch in and out
    import torch
    x, output = torch.from_numpy(x).to(torch.bfloat16), "torch"
t2 = time.perf_counter()
m.forward(x, output=output)  # outputs come back to the host: the call has finished
t3 = time.perf_counter()
calls = []
for _ in range(20):
    t = time.perf_counter()
    m.forward(x, output=output)
    calls.append(time.perf_counter() - t)
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS"))
print(json.dumps({"load_ms": (t1 - t0) * 1e3, "first_call_ms": (t3 - t2) * 1e3,
                  "call_ms": statistics.median(calls) * 1e3, "rss_mib": rss / 1024}))
"""


def export_mlp(path: str, weights_mib: int, device: str, dtype: str) -> None:
    import torch

    import kiln

    torch_dtype = getattr(torch, dtype)
    per_layer_mib = 2048 * 2048 * torch.tensor([], dtype=torch_dtype).element_size() / 2**20
    layers = max(1, round(weights_mib / per_layer_mib))
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(layers) for m in (torch.nn.Linear(2048, 2048), torch.nn.ReLU())])
    model = model.eval().to(device=device, dtype=torch_dtype)
    example = (torch.randn(4, 2048, device=device, dtype=torch_dtype),)
    if device == "cuda":
        from kiln.exporter import CudaBackend

        backend, specs = CudaBackend(), {"triton_only": False, "max_autotune": False, "sdpa": "fused"}
        with torch.no_grad(), backend.extra_compile_context(specs):
            ep = torch.export.export(model, example)
        kiln.export({"forward": ep}, backend=backend, compile_specs=specs, verbose=False).save(path)
    else:
        with torch.no_grad():
            ep = torch.export.export(model, example)
        kiln.export(ep, backend="cpu", verbose=False).save(path)


def parse_runtime(text: str) -> tuple[str, str, str]:
    name, _, rest = text.partition("=")
    library, _, python_path = rest.partition(":")
    if not name or not library:
        raise SystemExit(f"--runtime {text!r}: expected NAME=LIBKILN[:PYTHONPATH]")
    return name, library, python_path or str(REPO / "python")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--program", help="a program whose 'forward' takes one float input")
    parser.add_argument("--weights-mib", type=int, default=128)
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--verify-weights", action="store_true", help="check the weights' SHA-256 at load")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runtime", action="append", default=[], help="NAME=LIBKILN[:PYTHONPATH]")
    parser.add_argument("--json", help="write the medians here")
    args = parser.parse_args()
    runtimes = [parse_runtime(r) for r in args.runtime] or [
        ("kiln", os.environ.get("KILN_LIBRARY", str(REPO / "build" / "libkiln.so")), str(REPO / "python"))]
    with tempfile.TemporaryDirectory(prefix="kiln-load-time-") as work:
        path = args.program
        if not path:
            path = os.path.join(work, "mlp.kiln")
            export_mlp(path, args.weights_mib, args.device, args.dtype)
        samples: dict[str, list[dict]] = {name: [] for name, _, _ in runtimes}
        for run in range(args.runs):
            order = runtimes if run % 2 == 0 else runtimes[::-1]
            for name, library, python_path in order:
                env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), KILN_LIBRARY=library,
                           PYTHONPATH=python_path + os.pathsep + os.environ.get("PYTHONPATH", ""))
                proc = subprocess.run([sys.executable, "-c", _CHILD, path, "1" if args.verify_weights else "0"],
                                      capture_output=True, text=True, env=env)
                if proc.returncode != 0:
                    print(f"{name}: {proc.stderr}", file=sys.stderr)
                    return 1
                samples[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        size_mib = os.path.getsize(path) / 2**20
        print(f"program {os.path.basename(path)} ({size_mib:.1f} MiB, {args.device}), verify_weights="
              f"{args.verify_weights}, {args.runs} processes per runtime, medians")
        keys = list(next(iter(samples.values()))[0])
        print(f"{'runtime':12s}" + "".join(f"{k:>15s}" for k in keys))
        medians = {}
        for name, rows in samples.items():
            medians[name] = {k: statistics.median(r[k] for r in rows) for k in keys}
            print(f"{name:12s}" + "".join(f"{medians[name][k]:15.1f}" for k in keys))
        if args.json:
            Path(args.json).write_text(json.dumps({"program_mib": size_mib, "device": args.device,
                                                   "verify_weights": args.verify_weights, "medians": medians},
                                                  indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
