#!/usr/bin/env python3
"""examples/llm on a GPU (run through scripts/gpu-llm.sh).

For each (config, dtype): export prefill + decode for CUDA (examples/llm/export_llm.py, exports
in parallel worker processes), then with the C++ runner kiln-llm:
  parity   greedy generation compared with eager PyTorch on the GPU running the same
           prefill + decode loop (same weights, dtype, prompt): do the tokens agree, and how
           far apart are the logits when both are fed the same tokens (teacher forcing with
           eager's greedy tokens, so one early near-tie cannot make the rest incomparable);
  speed    prefill and decode tokens/s of kiln-llm (one warm-up generation first), next to
           eager PyTorch's for the same loop.
Prints one table; writes $OUT/gpu_llm.json and per-step logs under $OUT/logs. Programs are
written to a temporary directory (not $OUT: the 100m fp32 one is ~0.5 GB).

Pass criteria: fp32: identical greedy tokens and teacher-forced logits within 1e-4 relative
error (max |kiln - eager| / max |eager| per step, max over steps; 1e-3 for the 100m model, whose
12 layers accumulate more reordering); bf16: teacher-forced logits within 5e-2 (bf16 has 8
mantissa bits: Inductor's fused kernels round at other places than eager's op-by-op ones),
greedy tokens reported only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "examples" / "llm"))

# (config, dtype, prompt tokens, new tokens) for the speed runs; parity uses shorter runs.
RUNS = {
    "tiny": {"prompt": 16, "new": 32, "parity_steps": 16},
    "100m": {"prompt": 256, "new": 256, "parity_steps": 32},
}
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}
TOLERANCE = {("tiny", "fp32"): 1e-4, ("100m", "fp32"): 1e-3, ("tiny", "bf16"): 5e-2, ("100m", "bf16"): 5e-2}


def export_worker(config: str, dtype: str, out_dir: str, autotune: bool, log_path: str,
                  device: str = "cuda") -> tuple[str, float]:
    """Runs in a spawned process: exports one program, returns (path, seconds)."""
    import contextlib

    import export_llm

    start = time.perf_counter()
    specs = None if autotune or device != "cuda" else {"max_autotune": False}
    with open(log_path, "w") as log, contextlib.redirect_stderr(log), contextlib.redirect_stdout(log):
        path = export_llm.export_program(Path(out_dir), config=config, device=device, dtype=DTYPES[dtype],
                                         compile_specs=specs, verbose=True)
    return str(path), time.perf_counter() - start


def run_runner(runner: str, program: str, args: list[str], log) -> tuple[dict, "np.ndarray | None"]:
    import numpy as np

    logits_file = tempfile.NamedTemporaryFile(suffix=".bin", delete=False).name
    cmd = [runner, program, "--json", "--logits-out", logits_file, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    log.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        raise RuntimeError(f"kiln-llm failed ({proc.returncode}): {proc.stderr.strip()}")
    result = json.loads(proc.stdout)
    logits = np.fromfile(logits_file, dtype=np.float32).reshape(-1, result["vocab_size"])
    os.unlink(logits_file)
    return result, logits


def rel_err(a, b) -> float:
    import numpy as np

    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def eager_speed(model, prompt: list[int], new_tokens: int) -> tuple[float, float]:
    """Eager PyTorch's prefill and decode tokens/s for the runner's loop (greedy, warm-up first)."""
    import torch

    import export_llm

    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype

    def once():
        kc, vc = export_llm.new_caches(model.cfg, device, dtype)
        ids = torch.tensor([prompt], device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = model.prefill(ids, kc, vc)
        nxt = int(torch.argmax(logits[0]))  # synchronises, as the runner's copy to the host does
        t1 = time.perf_counter()
        for i in range(new_tokens - 1):
            logits = model.decode(torch.tensor([[nxt]], device=device), torch.tensor([len(prompt) + i], device=device),
                                  kc, vc)
            nxt = int(torch.argmax(logits[0]))
        t2 = time.perf_counter()
        return len(prompt) / (t1 - t0), (new_tokens - 1) / (t2 - t1)

    with torch.no_grad():
        once()
        return once()


def check(config: str, dtype: str, program: str, runner: str, logs: Path, device: str = "cuda") -> dict:
    import numpy as np
    import torch

    import export_llm

    row = {"config": config, "dtype": dtype, "program": program}
    model = export_llm.build_model(config, seed=0, device=device, dtype=getattr(torch, DTYPES[dtype]))
    row["parameters_m"] = round(export_llm.CONFIGS[config].num_parameters() / 1e6, 1)
    spec = RUNS[config]
    steps = spec["parity_steps"]
    prompt = np.random.default_rng(5).integers(0, model.cfg.vocab_size, size=min(spec["prompt"], 64)).tolist()
    with open(logs / f"{config}_{dtype}.log", "w") as log:
        # Parity: free-running greedy, then teacher-forced with eager's tokens.
        ids = " ".join(map(str, prompt))
        greedy, _ = run_runner(runner, program, ["--prompt", ids, "--max-new-tokens", str(steps), "--warmup", "0"], log)
        ref_tokens, ref_logits = export_llm.reference_run(model, prompt, steps)
        ref = torch.stack(ref_logits).numpy()
        ours = greedy["tokens"]
        first_diff = next((i for i, (a, b) in enumerate(zip(ours, ref_tokens)) if a != b), None)
        row["device"] = greedy["device"]
        row["greedy_tokens_equal"] = ours == ref_tokens
        row["first_token_difference"] = first_diff
        forced, logits = run_runner(runner, program, ["--prompt", ids, "--force", " ".join(map(str, ref_tokens)),
                                                      "--warmup", "0"], log)
        errors = [rel_err(logits[i], ref[i]) for i in range(len(ref))]
        row["logits_rel_err"] = max(errors)
        row["top1_agreement"] = float(np.mean([int(np.argmax(logits[i])) == int(np.argmax(ref[i]))
                                               for i in range(len(ref))]))
        tol = TOLERANCE[(config, dtype)]
        row["tolerance"] = tol
        ok = row["logits_rel_err"] <= tol and row["device"].startswith(device)
        if dtype == "fp32":
            ok = ok and row["greedy_tokens_equal"]
        row["pass"] = ok
        log.write(f"eager greedy tokens: {ref_tokens}\nper-step rel err: {errors}\n")

        # Speed.
        speed, _ = run_runner(runner, program, ["--prompt-len", str(spec["prompt"]), "--max-new-tokens",
                                                str(spec["new"]), "--warmup", "1"], log)
        row["prefill_tokens"] = len(speed["prompt"])
        row["decode_tokens"] = speed["decode_calls"]
        row["kiln_prefill_tok_s"] = speed["prefill_tokens_per_s"]
        row["kiln_decode_tok_s"] = speed["decode_tokens_per_s"]
        row["kiln_decode_step_ms"] = speed["decode_step_median_ms"]
        row["eager_prefill_tok_s"], row["eager_decode_tok_s"] = eager_speed(model, speed["prompt"], spec["new"])
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="tiny,100m", help="comma-separated: tiny, 100m (default both)")
    ap.add_argument("--dtypes", default="fp32,bf16", help="comma-separated: fp32, bf16 (default both)")
    ap.add_argument("--runner", default=os.environ.get("KILN_LLM", ""), help="kiln-llm (default $KILN_LLM)")
    ap.add_argument("--jobs", type=int, default=4, help="parallel export processes (default 4)")
    ap.add_argument("--autotune", action="store_true", help="export with GEMM autotuning (slower exports)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: a dry run of this script's own logic on a machine without a GPU")
    args = ap.parse_args()

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_llm: torch sees no GPU", file=sys.stderr)
        return 2
    if not args.runner or not Path(args.runner).is_file():
        print(f"gpu_llm: kiln-llm not found ({args.runner!r}); set KILN_LLM or --runner", file=sys.stderr)
        return 2
    out = Path(os.environ.get("OUT") or tempfile.mkdtemp(prefix="gpu_llm_out_"))
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu_llm_programs_"))
    jobs = [(c, d) for c in args.configs.split(",") for d in args.dtypes.split(",")]
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "none (--device cpu)"
    print(f"GPU: {gpu}, torch {torch.__version__}; exporting {len(jobs)} programs "
          f"({args.jobs} at a time, autotune {'on' if args.autotune else 'off'}) into {work}", flush=True)

    start = time.perf_counter()
    programs: dict[tuple[str, str], str] = {}
    export_s: dict[tuple[str, str], float] = {}
    failures: dict[tuple[str, str], str] = {}
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        futures = {
            pool.submit(export_worker, c, d, str(work / f"{c}_{d}"), args.autotune, str(logs / f"export_{c}_{d}.log"),
                        args.device): (c, d)
            for c, d in jobs
        }
        for fut in concurrent.futures.as_completed(futures):
            key = futures[fut]
            try:
                programs[key], export_s[key] = fut.result()
                print(f"  exported {key[0]} {key[1]} in {export_s[key]:.0f} s", flush=True)
            except Exception as e:  # noqa: BLE001 - reported in the table
                failures[key] = f"export failed: {e}"
                print(f"  export {key[0]} {key[1]} FAILED: {e} (log: {logs}/export_{key[0]}_{key[1]}.log)", flush=True)
    print(f"exports done in {time.perf_counter() - start:.0f} s", flush=True)

    rows = []
    for key in jobs:
        if key in failures:
            rows.append({"config": key[0], "dtype": key[1], "pass": False, "error": failures[key]})
            continue
        try:
            row = check(key[0], key[1], programs[key], args.runner, logs, args.device)
            row["export_s"] = round(export_s[key], 1)
        except Exception as e:  # noqa: BLE001
            row = {"config": key[0], "dtype": key[1], "pass": False, "error": str(e)}
        rows.append(row)
        print(f"  checked {key[0]} {key[1]}: {'PASS' if row['pass'] else 'FAIL'}", flush=True)

    header = (f"{'config':6} {'dtype':5} {'params':>7} {'tokens=':>7} {'1st diff':>8} {'logits err':>10} {'top1':>5} "
              f"{'result':6} | {'prefill tok/s':>13} {'(eager)':>9} | {'decode tok/s':>12} {'(eager)':>9} {'step ms':>8}")
    print("\n" + header)
    print("-" * len(header))
    for r in rows:
        if "error" in r:
            print(f"{r['config']:6} {r['dtype']:5} ERROR: {r['error']}")
            continue
        diff = "-" if r["first_token_difference"] is None else str(r["first_token_difference"])
        print(f"{r['config']:6} {r['dtype']:5} {r['parameters_m']:>6}M {str(r['greedy_tokens_equal']):>7} {diff:>8} "
              f"{r['logits_rel_err']:>10.2e} {r['top1_agreement']:>5.2f} {'PASS' if r['pass'] else 'FAIL':6} | "
              f"{r['kiln_prefill_tok_s']:>13.0f} {r['eager_prefill_tok_s']:>9.0f} | {r['kiln_decode_tok_s']:>12.1f} "
              f"{r['eager_decode_tok_s']:>9.1f} {r['kiln_decode_step_ms']:>8.3f}")
    print(f"\nprefill/decode tokens: tiny {RUNS['tiny']['prompt']}/{RUNS['tiny']['new'] - 1}, "
          f"100m {RUNS['100m']['prompt']}/{RUNS['100m']['new'] - 1} (batch 1, one warm-up generation first)")
    (out / "gpu_llm.json").write_text(json.dumps(rows, indent=2))
    print(f"wrote {out / 'gpu_llm.json'} and logs in {logs}; total {time.perf_counter() - start:.0f} s")
    return 0 if all(r["pass"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
