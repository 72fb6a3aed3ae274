#!/usr/bin/env python3
"""Kiln CUDA model suite (run through scripts/gpu-suite on a GPU machine).

For every model x dtype x export mode: export with kiln.export(..., backend="cuda"),
run in Kiln (kiln.runtime.Module over $KILN_LIBRARY) and in eager PyTorch on the
same inputs, and print one table: model, dtype, mode, max relative error
(max |kiln - eager| / max |eager|), pass/fail, Kiln ms, eager ms. With $OUT set
(or --json), the rows are also written as JSON.

Export modes:
  triton-only  GEMMs/convolutions from Triton templates, SDPA decomposed: the
               library calls no cuBLAS/cuDNN/attention fallback.
  fallbacks    no autotuning: GEMMs and convolutions become Kiln's cuBLASLt/cuDNN
               fallback shims (SDPA too, if the exporter lets fused SDPA through).

Adding models (e.g. from transformers): decorate a factory with @suite_model(name);
it takes (torch.dtype, torch.device) and returns (module, example_inputs tuple).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MODELS: dict[str, Callable] = {}


def suite_model(name: str):
    """Registers a model factory: (dtype, device) -> (nn.Module, tuple of inputs)."""

    def wrap(factory):
        MODELS[name] = factory
        return factory

    return wrap


class Mlp(nn.Module):
    def __init__(self, d=256, h=1024):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(d, h), nn.Linear(h, h), nn.Linear(h, 10)

    def forward(self, x):
        return self.fc3(F.gelu(self.fc2(F.relu(self.fc1(x)))))


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, padding=1)
        self.grouped = nn.Conv2d(32, 64, 3, stride=2, padding=1, groups=4)
        self.depthwise = nn.Conv2d(64, 64, 3, padding=1, groups=64)
        self.pointwise = nn.Conv2d(64, 64, 1)
        self.up = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.relu(self.grouped(x))
        x = F.relu(self.pointwise(self.depthwise(x)))
        x = F.relu(self.up(x))
        return self.head(x.mean(dim=(2, 3)))


class TransformerBlock(nn.Module):
    def __init__(self, d=256, heads=8):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


@suite_model("mlp")
def _mlp(dtype, device):
    return Mlp().to(device, dtype).eval(), (torch.randn(32, 256, device=device, dtype=dtype),)


@suite_model("cnn")
def _cnn(dtype, device):
    return SmallCnn().to(device, dtype).eval(), (torch.randn(4, 3, 32, 32, device=device, dtype=dtype),)


@suite_model("transformer")
def _transformer(dtype, device):
    return TransformerBlock().to(device, dtype).eval(), (torch.randn(2, 128, 256, device=device, dtype=dtype),)


MODES = {
    "triton-only": {"triton_only": True},
    "fallbacks": {"triton_only": False, "max_autotune": False},
}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
TOLERANCE = {"fp32": 1e-3, "fp16": 2e-2, "bf16": 2e-2}


def make_backend():
    from kiln.exporter.cuda_backend import CudaBackend

    return CudaBackend()


def time_ms(fn, iters: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1000.0 / iters


def flatten(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in flatten(o)]


def run_case(name, dtype_name, mode, workdir, iters) -> dict:
    import kiln
    from kiln.runtime import Module

    row = {"model": name, "dtype": dtype_name, "mode": mode, "max_rel_error": None, "passed": False,
           "kiln_ms": None, "eager_ms": None, "error": None, "imports": None}
    dtype = DTYPES[dtype_name]
    torch.manual_seed(0)
    model, inputs = MODELS[name](dtype, torch.device("cuda"))
    try:
        with torch.no_grad():
            want = flatten(model(*inputs))
            ep = torch.export.export(model, inputs)
        program = kiln.export(ep, backend=make_backend(), compile_specs=MODES[mode], verbose=False)
        imports = sorted({n for m in program.methods.values() for n in getattr(m, "shim_imports", []) or []
                          if n.startswith("aoti_torch_cuda")})
        row["imports"] = imports
        path = os.path.join(workdir, f"{name}_{dtype_name}_{mode}.kiln")
        program.save(path)
        module = Module(path)
        module.load()
        got = [g if isinstance(g, torch.Tensor) else torch.as_tensor(g) for g in module.forward(*inputs, output="torch")]
        torch.cuda.synchronize()
        if len(got) != len(want):
            raise RuntimeError(f"Kiln returned {len(got)} outputs, eager {len(want)}")
        err = 0.0
        for g, w in zip(got, want):
            g, w = g.to(w.device).float(), w.float()
            err = max(err, ((g - w).abs().max() / w.abs().max().clamp_min(1e-12)).item())
        row["max_rel_error"] = err
        row["passed"] = err <= TOLERANCE[dtype_name]
        row["kiln_ms"] = time_ms(lambda: module.forward(*inputs, output="torch"), iters)
        with torch.no_grad():
            row["eager_ms"] = time_ms(lambda: model(*inputs), iters)
    except Exception as e:  # one broken case must not hide the others
        row["error"] = f"{type(e).__name__}: {e}".strip()[:2000]
        traceback.print_exc()
    return row


def print_table(rows):
    head = ["model", "dtype", "mode", "max rel err", "result", "kiln ms", "eager ms"]
    lines = []
    for r in rows:
        err = "-" if r["max_rel_error"] is None else f"{r['max_rel_error']:.2e}"
        res = "pass" if r["passed"] else ("ERROR" if r["error"] else "FAIL")
        km = "-" if r["kiln_ms"] is None else f"{r['kiln_ms']:.3f}"
        em = "-" if r["eager_ms"] is None else f"{r['eager_ms']:.3f}"
        lines.append([r["model"], r["dtype"], r["mode"], err, res, km, em])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*head))
    print(fmt.format(*["-" * w for w in widths]))
    for ln in lines:
        print(fmt.format(*ln))
    for r in rows:
        if r["error"]:
            print(f"\n{r['model']}/{r['dtype']}/{r['mode']}: {r['error'].splitlines()[0]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of " + ", ".join(MODELS))
    ap.add_argument("--dtypes", default="fp32,fp16,bf16")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json", help="write rows here (default $OUT/gpu_suite.json when OUT is set)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_suite: torch sees no GPU", file=sys.stderr)
        return 2
    # Strict float32 on both sides: eager's cuDNN would otherwise use TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    with tempfile.TemporaryDirectory(prefix="kiln-gpu-suite-") as workdir:
        for name in args.models.split(","):
            for dt in args.dtypes.split(","):
                for mode in args.modes.split(","):
                    print(f"== {name} {dt} {mode}", flush=True)
                    rows.append(run_case(name, dt, mode, workdir, args.iters))
    print()
    print_table(rows)
    out = args.json or (os.path.join(os.environ["OUT"], "gpu_suite.json") if os.environ.get("OUT") else None)
    if out:
        with open(out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
