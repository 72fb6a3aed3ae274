"""Decode steps with weight-only quantized weights: tokens/s and the fraction of the memory
roofline, bfloat16 against int8 and int4 weights (compile spec ``quantize``), side by side
in one run on one GPU.

The model is gpu_bench_models.gemma3_decode (a Gemma3-like 1.1 B-parameter decoder, one
token over a 1k KV cache; --tiny for a smoke test). Each scheme is exported in its own
process (on its own GPU when there are several), then every program runs on GPU 0 in turn,
with Kiln's CUDA graphs, and its logits are compared with eager PyTorch evaluating the same
quantized weights (the exporter's graph after the quantization pass) on the same inputs.

Bytes per token are the program's weights plus the KV cache read and written; the roofline
is those bytes over the GPU's measured device-to-device copy bandwidth (read + write).

    python3 bench/models/quantized_decode.py [--schemes bf16,int8,int4] [--mode fallbacks]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

SCHEMES = {"bf16": "none", "int8": "int8", "int4": "int4,group=128", "int4-g64": "int4,group=64",
           "int8-emb": "int8,embedding=int8", "int4-emb": "int4,group=128,embedding=int8"}
MODES = {"fallbacks": {"triton_only": False, "max_autotune": False, "sdpa": "fused"},
         "triton-only": {"triton_only": True}}


def log(msg: str) -> None:
    print(f"[quantized_decode {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def export_one(scheme: str, args) -> dict:
    """Worker: exports the decode step with `scheme` and stores reference logits from eager
    PyTorch on the quantized graph."""
    import kiln
    from kiln.exporter import CudaBackend
    from kiln.exporter.passes.weight_quantization import parse_quantize_spec, quantize_weights

    import gpu_bench_models as models

    work = Path(args.workdir)
    torch.manual_seed(0)
    bm = models.gemma3_decode(torch.bfloat16, torch.device("cuda"), args.tiny)
    specs = {**MODES[args.mode], "quantize": SCHEMES[scheme]}
    t0 = time.perf_counter()
    with torch.no_grad():
        ep = torch.export.export(bm.module, bm.example)
    program = kiln.export(ep, backend=CudaBackend(), compile_specs=specs, verbose=False)
    program.save(str(work / f"{scheme}.kiln"))
    export_s = time.perf_counter() - t0
    # The reference: the same quantized weights in eager PyTorch.
    spec = parse_quantize_spec(SCHEMES[scheme])
    reference = quantize_weights(ep, spec) if spec.active() else ep
    weight_bytes = sum(t.numel() * t.element_size() for t in reference.state_dict.values())
    torch.manual_seed(1)
    inputs = bm.points[0].inputs()
    with torch.no_grad():
        logits = reference.module()(*inputs)[0]
    torch.save({"inputs": [t.cpu() for t in inputs], "logits": logits.float().cpu()}, work / f"{scheme}.ref.pt")
    return {"scheme": scheme, "export_s": export_s, "weight_bytes": weight_bytes, "kv_bytes": bm.kv_bytes}


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth, bytes read + written per second (median of 20)."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    times = []
    for _ in range(25):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    del src, dst
    return 2 * (1 << 30) / statistics.median(times[5:])


def run_one(scheme: str, info: dict, args) -> dict:
    from kiln.runtime import Module

    work = Path(args.workdir)
    ref = torch.load(work / f"{scheme}.ref.pt")
    inputs = [t.cuda() for t in ref["inputs"]]
    module = Module(str(work / f"{scheme}.kiln"))
    module.load({"aoti": {"keep_outputs_on_device": True, "cuda_graphs": True}})
    try:
        out = module.execute("forward", inputs, output="torch")
        logits = out[0].float().cpu()
        rel = float((logits - ref["logits"]).norm() / ref["logits"].norm())
        for _ in range(args.warmup):
            module.execute("forward", inputs, output="torch")
        torch.cuda.synchronize()
        samples = []
        for _ in range(args.rounds):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.calls):
                module.execute("forward", inputs, output="torch")
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / args.calls)
    finally:
        module.close()
    ms = statistics.median(samples)
    # KV cache: read once and written once (the step returns the grown cache).
    total = info["weight_bytes"] + 2 * info["kv_bytes"]
    return {**info, "ms": ms, "tokens_s": 1e3 / ms, "bytes": total, "rel_err_vs_eager_quantized": rel}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemes", default="bf16,int8,int4")
    ap.add_argument("--mode", choices=tuple(MODES), default="fallbacks")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--workdir", default=str(ROOT / "build-bench" / "quantized"))
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--_export", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    if args._export:
        result = export_one(args._export, args)
        (Path(args.workdir) / f"{args._export}.export.json").write_text(json.dumps(result))
        return 0
    schemes = [s for s in args.schemes.split(",") if s]
    bad = [s for s in schemes if s not in SCHEMES]
    if bad:
        ap.error(f"unknown schemes {bad}; known: {', '.join(SCHEMES)}")
    gpus = torch.cuda.device_count()
    procs = []
    for i, scheme in enumerate(schemes):
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(i % gpus)}
        cmd = [sys.executable, __file__, "--_export", scheme, "--mode", args.mode, "--workdir", args.workdir]
        if args.tiny:
            cmd.append("--tiny")
        log(f"export {scheme} ({SCHEMES[scheme]}) on GPU {i % gpus}")
        procs.append((scheme, subprocess.Popen(cmd, env=env)))
    infos = {}
    for scheme, proc in procs:
        if proc.wait() != 0:
            log(f"export {scheme} failed ({proc.returncode})")
            continue
        infos[scheme] = json.loads((Path(args.workdir) / f"{scheme}.export.json").read_text())
        log(f"exported {scheme} in {infos[scheme]['export_s']:.0f} s")
    bandwidth = copy_bandwidth()
    rows = []
    for scheme in schemes:
        if scheme in infos:
            try:
                rows.append(run_one(scheme, infos[scheme], args))
            except Exception as e:  # one failure must not hide the others
                log(f"run {scheme}: {type(e).__name__}: {e}")
    base = next((r for r in rows if r["scheme"] == "bf16"), None)
    lines = [f"GPU: {torch.cuda.get_device_name()}, copy bandwidth {bandwidth / 1e9:.0f} GB/s; "
             f"mode {args.mode}; gemma3_decode{' (tiny)' if args.tiny else ''}, CUDA graphs",
             "| scheme | weights MB | ms / token | tokens/s | vs bf16 | GB/s | of roofline | logits rel. err |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        speed = f"{base['ms'] / r['ms']:.2f}x" if base else "-"
        gbs = r["bytes"] / (r["ms"] / 1e3) / 1e9
        lines.append(f"| {r['scheme']} | {r['weight_bytes'] / 1e6:.0f} | {r['ms']:.3f} | {r['tokens_s']:.0f} | {speed} | "
                     f"{gbs:.0f} | {gbs * 1e9 / bandwidth:.2f} | {r['rel_err_vs_eager_quantized']:.1e} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "quantized_decode.md").write_text(table + "\n")
        (Path(args.out) / "quantized_decode.json").write_text(
            json.dumps({"bandwidth": bandwidth, "rows": rows, "mode": args.mode}, indent=1))
    return 0 if len(rows) == len(schemes) else 1


if __name__ == "__main__":
    sys.exit(main())
