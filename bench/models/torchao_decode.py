#!/usr/bin/env python3
"""One decode step of examples/llm's model, per token: Kiln against what a user would pick
instead, torch.compile(mode="max-autotune", CUDA graphs included) with torchao's int4
weight-only quantization, on one GPU.

    python3 bench/models/torchao_decode.py --config 1.1b --kiln bf16=out/bf16/llm.kiln \\
        --kiln int4=out/int4/llm.kiln --out results/

The Kiln programs are export_llm.py's (decode writes its KV cache in place and replays as a
CUDA graph bound to it). The torch side decodes with the same architecture and config: its
caches are module buffers, so CUDA graphs (cudagraph trees) see fixed addresses, and the
linear layers are quantized by torchao's Int4WeightOnlyConfig(group_size=128): int4 codes
with a scale and zero point per group of 128 inputs, Kiln's own int4 scheme. Weights are
random in both (the same seed, but each side quantizes its own copy), so the comparison is of
speed; parity of Kiln's quantized programs is the GPU suite's job. Every step runs at
position max_seq - 1, so attention reads the whole cache on both sides. Per engine: --warmup
steps, then --steps steps each timed with CUDA events; median and p90 in ms, tokens/s.
Writes torchao_decode.json and .md to --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "llm"))
import export_llm  # noqa: E402


class StepWithCache(nn.Module):
    """decode(token, pos) with the caches as buffers (fixed addresses for CUDA graphs)."""

    def __init__(self, model: export_llm.LlamaLM, dtype: torch.dtype):
        super().__init__()
        self.model = model
        k, v = export_llm.new_caches(model.cfg, "cuda", dtype)
        self.register_buffer("k_cache", k)
        self.register_buffer("v_cache", v)

    def forward(self, token: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self.model.decode(token, pos, self.k_cache, self.v_cache)


def time_steps(step, steps: int, warmup: int) -> dict:
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    samples = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    samples.sort()
    p50 = statistics.median(samples)
    return {"p50_ms": p50, "p90_ms": samples[int(0.9 * (len(samples) - 1))], "tokens_per_s": 1000.0 / p50}


def torch_engine(config: str, quantize: bool, token, pos, args) -> dict:
    t0 = time.perf_counter()
    model = export_llm.build_model(config, seed=0, device="cuda", dtype=torch.bfloat16)
    note = "torch.compile(max-autotune), bf16"
    if quantize:
        from torchao.quantization import Int4WeightOnlyConfig, quantize_

        try:
            quantize_(model, Int4WeightOnlyConfig(group_size=128, int4_packing_format="tile_packed_to_4d"))
            note = "torch.compile(max-autotune) + torchao Int4WeightOnlyConfig(group 128, tile_packed_to_4d)"
        except TypeError:  # an older torchao without int4_packing_format
            quantize_(model, Int4WeightOnlyConfig(group_size=128))
            note = "torch.compile(max-autotune) + torchao Int4WeightOnlyConfig(group 128)"
    step = StepWithCache(model, torch.bfloat16).eval()
    compiled = torch.compile(step, mode="max-autotune")
    with torch.no_grad():
        compiled(token, pos)  # compiles (and autotunes)
        compile_s = time.perf_counter() - t0
        result = time_steps(lambda: compiled(token, pos), args.steps, args.warmup)
    return {**result, "note": note, "compile_s": compile_s}


def kiln_engine(path: str, config: str, token, pos, args) -> dict:
    from kiln.runtime import Module

    cfg = export_llm.CONFIGS[config]
    module = Module(path)
    module.load({"aoti": {"cuda_graphs": True, "keep_outputs_on_device": True, "stream": "caller"}})
    k, v = export_llm.new_caches(cfg, "cuda", torch.bfloat16)
    try:
        result = time_steps(lambda: module.execute("decode", [token, pos, k, v], output="torch"), args.steps,
                            args.warmup)
    finally:
        module.close()
    return {**result, "note": f"Kiln {Path(path).name}, CUDA graphs, Python wrapper"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="1.1b", choices=sorted(export_llm.CONFIGS))
    ap.add_argument("--kiln", action="append", default=[], metavar="NAME=PROGRAM",
                    help="a Kiln program exported by export_llm.py (bfloat16), e.g. int4=out/llm.kiln")
    ap.add_argument("--torch", default="bf16,int4", help="torch engines: bf16 and/or int4 (torchao)")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out", default=".")
    args = ap.parse_args(argv)
    cfg = export_llm.CONFIGS[args.config]
    token = torch.tensor([[7]], device="cuda")
    pos = torch.tensor([cfg.max_seq - 1], device="cuda")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    machine = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    try:
        import torchao

        machine["torchao"] = torchao.__version__
    except ImportError:
        machine["torchao"] = None
    results: dict[str, dict] = {}

    def save() -> None:  # after every engine: a later one that runs out of time loses only itself
        (out / "torchao_decode.json").write_text(json.dumps({"config": args.config, "machine": machine,
                                                             "results": results}, indent=1))
        lines = [f"decode step, config {args.config} ({cfg.num_parameters() / 1e9:.2f} B parameters), position "
                 f"{cfg.max_seq - 1}, {machine}", "", "| engine | p50 ms | p90 ms | tokens/s | note |",
                 "|---|---|---|---|---|"]
        for name, r in results.items():
            if "error" in r:
                lines.append(f"| {name} | error | | | {r['error'].splitlines()[0][:200]} |")
            else:
                lines.append(f"| {name} | {r['p50_ms']:.3f} | {r['p90_ms']:.3f} | {r['tokens_per_s']:.0f} | "
                             f"{r['note']} |")
        (out / "torchao_decode.md").write_text("\n".join(lines) + "\n")
        print(lines[-1], flush=True)

    for spec in args.kiln:
        name, _, path = spec.partition("=")
        try:
            results[f"kiln {name}"] = kiln_engine(path, args.config, token, pos, args)
        except Exception as e:  # one engine failing must not hide the others
            traceback.print_exc()
            results[f"kiln {name}"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        save()
    for name in filter(None, args.torch.split(",")):
        try:
            results[f"torch.compile {name}"] = torch_engine(args.config, name == "int4", token, pos, args)
        except Exception as e:
            traceback.print_exc()
            results[f"torch.compile {name}"] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        torch.cuda.empty_cache()
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
