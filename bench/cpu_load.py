"""Load time, first call, per-call time and resident memory of a CPU program, each measured in
a fresh process (medians over --runs processes).

A load reads the program's header and FlatBuffer, then, for the method, its library and
weights blob with pread into private memory, hashing each while it is read
(docs/program-format.md, "What is verified is what runs"). This shows what that costs for a
given weight size.

    PYTHONPATH=python KILN_LIBRARY=build/libkiln.so python3 bench/cpu_load.py \\
        [--program P.kiln | --weights-mib 128] [--runs 9] [--threads 1]

Without --program it exports an MLP of Linear(2048, 2048) layers holding about
--weights-mib MiB of fp32 weights (needs torch) into a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, statistics, sys, time
import numpy as np
from kiln.runtime import Module
path = sys.argv[1]
t0 = time.perf_counter()
m = Module(path)
m.load()
m.load_method("forward")
t1 = time.perf_counter()
spec = m.method_meta("forward").inputs[0]
shape = [d if d is not None else 4 for d in spec.shape]
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
t2 = time.perf_counter()
m.forward(x)
t3 = time.perf_counter()
calls = []
for _ in range(20):
    t = time.perf_counter()
    m.forward(x)
    calls.append(time.perf_counter() - t)
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS"))
print(json.dumps({"load_ms": (t1 - t0) * 1e3, "first_call_ms": (t3 - t2) * 1e3,
                  "call_ms": statistics.median(calls) * 1e3, "rss_mib": rss / 1024}))
"""


def export_mlp(path: str, weights_mib: int) -> None:
    import torch

    import kiln

    layers = max(1, weights_mib // 16)  # one Linear(2048, 2048) holds 16 MiB of fp32 weights
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(layers) for m in (torch.nn.Linear(2048, 2048), torch.nn.ReLU())])
    ep = torch.export.export(model.eval(), (torch.randn(4, 2048),))
    kiln.export(ep, backend="cpu", verbose=False).save(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", help="a CPU program whose 'forward' takes one float32 input")
    parser.add_argument("--weights-mib", type=int, default=128)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiln-cpu-load-") as work:
        path = args.program
        if not path:
            path = os.path.join(work, "mlp.kiln")
            export_mlp(path, args.weights_mib)
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        samples = []
        for _ in range(args.runs):
            proc = subprocess.run([sys.executable, "-c", _CHILD, path], capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            samples.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        size_mib = os.path.getsize(path) / 2**20
        print(f"program {os.path.basename(path)}: {size_mib:.1f} MiB, {args.runs} processes, "
              f"{args.threads} thread(s), medians")
        for key in samples[0]:
            print(f"  {key:14s} {statistics.median(s[key] for s in samples):9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
