#!/usr/bin/env python3
"""Weight loading against the link's pinned host->device bandwidth (target:
>= 70 % of pinned H2D for a blob >= 1 GB), on one GPU.

Exports a synthetic bf16 model (a residual stack of up/down Linear pairs of
mixed widths, ~1.4 GB of weights in 200 constants, odd widths included so the
blob has misaligned neighbours) with the CUDA backend in `fallbacks` mode (no
autotuning: fast to export), then loads it with Kiln several times (a fresh
Module each time, the .kiln from the page cache, SHA-256 check off as in
bench/models/gpu_bench.py), reads Kiln's info log line for each load (`placed N weights
... allocation X s, upload Y s in R regions (Z GB/s)`), measures pinned H2D with
torch (1 GiB pinned tensor .cuda(non_blocking), median of 5), and checks Kiln's
output against eager bf16 and an fp32 reference on fresh inputs.

Run through bench/models/weights_upload.sh (library paths, logs under $OUT). --device
cpu --tiny runs the same flow on the CPU (no arena upload there for parameters:
CPU parameters stay in the mapping) to check the script itself.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Read once by the runtime at its first log call: set before kiln loads.
os.environ.setdefault("KILN_LOG_LEVEL", "info")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

HIDDEN = 2048
WIDTHS = (4096, 3001, 5632, 1000)  # 3001 and 1000: biases of 6002 and 2000 bytes misalign what follows
FALLBACKS = {"triton_only": False, "max_autotune": False, "sdpa": "fused"}  # bench/models/gpu_bench.py MODES

# Kiln's line (src/aoti/device_weights.cpp); "in one ... arena" and "in R regions"
# are optional so that a build without the arena (main before it) is read too.
PLACED = re.compile(r"placed (\d+) weights \(([\d.]+) GB\) on (\S+?)(?: in one ([\d.]+) GB arena)?: "
                    r"allocation ([\d.]+) s, upload ([\d.]+) s(?: in (\d+) regions)? \(([\d.]+) GB/s\)")

# The first large upload of a process pins its staging buffers (src/devices/cuda/cuda_upload.cpp).
PINNED = re.compile(r"upload: pinned (\d+) staging buffers \((\d+) MiB\) in ([\d.]+) s")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Block(nn.Module):
    def __init__(self, width: int, scale: float, with_buffer: bool = False):
        super().__init__()
        # A buffer is copied by Kiln even on the CPU (a model may write it), so
        # the CPU dry run logs a "placed" line too; the GPU model has none.
        self.register_buffer("gain", torch.ones(width) if with_buffer else None)
        self.up = nn.Linear(HIDDEN, width)
        self.down = nn.Linear(width, HIDDEN)
        # Unit gain into tanh, and a down projection small enough that the
        # residual stream grows slowly: every block's weights move the output.
        nn.init.normal_(self.up.weight, std=1.0 / math.sqrt(HIDDEN))
        nn.init.normal_(self.down.weight, std=scale / math.sqrt(width))
        nn.init.normal_(self.up.bias, std=0.1)
        nn.init.normal_(self.down.bias, std=0.1 * scale)

    def forward(self, x):
        h = torch.tanh(self.up(x))
        return x + self.down(h if self.gain is None else h * self.gain)


class Stack(nn.Module):
    def __init__(self, blocks: int, widths, with_buffers: bool = False):
        super().__init__()
        scale = 1.0 / math.sqrt(blocks)
        self.blocks = nn.ModuleList(Block(widths[i % len(widths)], scale, with_buffers) for i in range(blocks))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def weight_bytes(model: nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


class StderrCapture:
    """Captures file descriptor 2 (where the runtime's C++ log goes) and echoes it."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode(errors="replace")
        self.file.close()
        sys.stderr.write(self.text)
        sys.stderr.flush()


def export(model: nn.Module, example, path: Path, device: str) -> float:
    import kiln

    if device == "cuda":
        from kiln.exporter import CudaBackend

        backend, specs = CudaBackend(), dict(FALLBACKS)
        if "TORCH_CUDA_ARCH_LIST" not in os.environ:
            major, minor = torch.cuda.get_device_capability()
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"  # this GPU only: faster
    else:
        from kiln.exporter import CpuBackend

        backend, specs = CpuBackend(), {}
    t0 = time.perf_counter()
    with torch.no_grad(), backend.extra_compile_context(specs):
        ep = torch.export.export(model, example)
    program = kiln.export({"forward": ep}, backend=backend, compile_specs=specs, verbose=False)
    program.save(str(path))
    return time.perf_counter() - t0


def pinned_h2d_gbs(device: str, repeats: int = 5) -> float | None:
    if device != "cuda":
        return None
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    src.fill_(1)
    dst = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst.copy_(src, non_blocking=True)  # warm-up
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    del src, dst
    torch.cuda.empty_cache()
    return n / statistics.median(times) / 1e9


def load_once(path: Path, device: str):
    from kiln.runtime import Module

    opts = {"aoti": {"verify_weights": False, "weights": "kiln"}}
    if device == "cuda":
        opts["aoti"]["keep_outputs_on_device"] = True
    with StderrCapture() as cap:
        t0 = time.perf_counter()
        module = Module(str(path))
        module.load(opts)
        module.load_method("forward")
        load_s = time.perf_counter() - t0
    found = PLACED.findall(cap.text)
    row = {"load_s": load_s, "log": [line for line in cap.text.splitlines() if "placed" in line or "pinned" in line]}
    if pinned := PINNED.findall(cap.text):
        row["pinned_mib"] = sum(int(p[1]) for p in pinned)
        row["pinning_s_summed"] = sum(float(p[2]) for p in pinned)
    if found:
        n, gb, _dev, arena_gb, alloc_s, upload_s, regions, _gbs = found[-1]
        row.update({"placed": int(n), "uploaded_gb": float(gb), "arena_gb": float(arena_gb) if arena_gb else None,
                    "alloc_s": float(alloc_s), "upload_s": float(upload_s),
                    "regions": int(regions) if regions else None})
    return module, row


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--blocks", type=int, default=50, help="up/down pairs: 4 constants each (200 by default)")
    ap.add_argument("--loads", type=int, default=6, help="fresh Module loads (the first pays pool growth and pinning)")
    ap.add_argument("--tiny", action="store_true", help="a few MB of weights (to check the script itself)")
    ap.add_argument("--workdir", default=os.environ.get("KILN_WEIGHTS_WORKDIR", "/tmp/kiln-weights-check-work"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/kiln-weights-check"))
    args = ap.parse_args()
    out, work = Path(args.out), Path(args.workdir)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        print("torch has no CUDA device", file=sys.stderr)
        return 2

    global HIDDEN
    widths = WIDTHS
    if args.tiny:
        HIDDEN, widths = 64, (128, 67, 96, 33)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = Stack(args.blocks, widths, with_buffers=device == "cpu").to(device=device, dtype=dtype).eval()
    n_bytes = weight_bytes(model)
    n_constants = len(model.state_dict())
    example = (torch.randn(8, HIDDEN, device=device, dtype=dtype),)
    log(f"model: {args.blocks} blocks, {n_constants} constants, {n_bytes / 1e9:.3f} GB of {dtype} weights")

    path = work / f"weights_check_{device}{'_tiny' if args.tiny else ''}_{args.blocks}.kiln"
    export_s = export(model, example, path, device)
    log(f"exported {path} ({path.stat().st_size / 1e9:.3f} GB) in {export_s:.1f} s")

    h2d = pinned_h2d_gbs(device)
    if h2d:
        log(f"pinned H2D (torch, 1 GiB, median of 5): {h2d:.1f} GB/s")

    rows, module = [], None
    for i in range(args.loads):
        if module is not None:
            module.close()
            module = None
        module, row = load_once(path, device)
        rows.append(row)
        log(f"load {i + 1}: {row['load_s']:.4f} s total; " +
            (f"allocation {row['alloc_s']:.4f} s, upload {row['upload_s']:.4f} s in {row['regions']} regions"
             if "upload_s" in row else "no 'placed' line in the log") +
            (f" (pinned {row['pinned_mib']} MiB of staging: {row['pinning_s_summed']:.4f} s summed over workers)"
             if "pinned_mib" in row else ""))

    # Outputs of the last loaded module against eager bf16 and an fp32 reference.
    failures = []
    with torch.no_grad():
        reference = Stack(args.blocks, widths, with_buffers=device == "cpu").to(device=device, dtype=torch.float32).eval()
        reference.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
        checks = []
        for seed in (1, 2):
            g = torch.Generator(device=device).manual_seed(seed)
            x = torch.randn(8, HIDDEN, device=device, dtype=dtype, generator=g)
            if device == "cuda":
                (got,) = module.execute("forward", [x], output="torch")
            else:
                (got,) = module.execute("forward", [x.numpy()])
                got = torch.from_numpy(got)
            got = got.to(device)
            eager = model(x)
            fp32 = reference(x.float())
            c = {"kiln_vs_eager": rel_err(got, eager), "kiln_vs_fp32": rel_err(got, fp32),
                 "eager_vs_fp32": rel_err(eager, fp32)}
            checks.append(c)
            # Kiln may round differently from eager, not worse: within 2x eager's own
            # error against fp32 (bf16), or 1e-5 relative (fp32 on the CPU).
            bound = max(2 * c["eager_vs_fp32"], 1e-5 if dtype == torch.float32 else 1e-3)
            if not (c["kiln_vs_fp32"] <= bound):
                failures.append(f"seed {seed}: Kiln vs fp32 {c['kiln_vs_fp32']:.2e} > {bound:.2e}")
    module.close()
    log("outputs: " + "; ".join(f"kiln/eager {c['kiln_vs_eager']:.2e}, kiln/fp32 {c['kiln_vs_fp32']:.2e}, "
                                 f"eager/fp32 {c['eager_vs_fp32']:.2e}" for c in checks))

    later = rows[1:] if len(rows) > 1 else rows
    timed = [r for r in later if "upload_s" in r]
    summary = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
               "weight_bytes": n_bytes, "constants": n_constants, "blob_file_bytes": path.stat().st_size,
               "export_s": export_s, "pinned_h2d_gbs": h2d, "loads": rows, "checks": checks, "failures": failures}
    lines = ["| weights GB | constants | regions | load | alloc s | upload s | upload GB/s | place GB/s "
             "| whole load s | load GB/s | upload / pinned H2D |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rows):
        if "upload_s" not in r:
            lines.append(f"| {n_bytes / 1e9:.3f} | {n_constants} | - | {i + 1} | - | - | - | - | {r['load_s']:.4f} "
                         f"| {n_bytes / r['load_s'] / 1e9:.1f} | - |")
            continue
        up = n_bytes / max(r["upload_s"], 1e-9) / 1e9  # the log has 0.1 ms steps: tiny CPU runs read 0
        place = n_bytes / max(r["upload_s"] + r["alloc_s"], 1e-9) / 1e9
        frac = f"{up / h2d:.2f}" if h2d else "-"
        lines.append(f"| {n_bytes / 1e9:.3f} | {n_constants} | {r['regions']} | {i + 1} | {r['alloc_s']:.4f} "
                     f"| {r['upload_s']:.4f} | {up:.1f} | {place:.1f} | {r['load_s']:.4f} "
                     f"| {n_bytes / r['load_s'] / 1e9:.1f} | {frac} |")
    if timed:
        med_up = max(statistics.median(r["upload_s"] for r in timed), 1e-9)
        med_place = max(statistics.median(r["upload_s"] + r["alloc_s"] for r in timed), 1e-9)
        med_load = statistics.median(r["load_s"] for r in later)
        summary.update({"median_upload_s": med_up, "median_place_s": med_place, "median_load_s": med_load,
                        "upload_gbs": n_bytes / med_up / 1e9,
                        "fraction_of_pinned": (n_bytes / med_up / 1e9 / h2d) if h2d else None,
                        "place_fraction_of_pinned": (n_bytes / med_place / 1e9 / h2d) if h2d else None,
                        "load_fraction_of_pinned": (n_bytes / med_load / 1e9 / h2d) if h2d else None})
        lines.append("")
        lines.append(f"median of loads 2..{len(rows)}: upload {med_up:.4f} s = {n_bytes / med_up / 1e9:.1f} GB/s"
                     + (f" = {n_bytes / med_up / 1e9 / h2d:.2f} of pinned H2D ({h2d:.1f} GB/s)" if h2d else "")
                     + f"; allocation + upload {med_place:.4f} s"
                     + (f" ({summary['place_fraction_of_pinned']:.2f})" if h2d else "")
                     + f"; whole load {med_load:.4f} s"
                     + (f" ({summary['load_fraction_of_pinned']:.2f})" if h2d else ""))
    lines.append("")
    lines.append("outputs vs eager: " + ("OK" if not failures else "FAILED: " + "; ".join(failures)))
    table = "\n".join(lines)
    print(table, flush=True)
    (out / "weights_upload.md").write_text(table + "\n")
    (out / "weights_upload.json").write_text(json.dumps(summary, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
