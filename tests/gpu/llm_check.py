"""examples/llm on a GPU, the pieces of tests/gpu/test_examples_llm.py.

For each (config, dtype): export prefill + decode (examples/llm/export_llm.py, in worker
processes), then with the C++ runner kiln-llm:
  parity   greedy generation compared with eager PyTorch on the GPU running the same
           prefill + decode loop (same weights, dtype, prompt): do the tokens agree, and how
           far apart are the logits when both are fed the same tokens (teacher forcing with
           eager's greedy tokens, so one early near-tie cannot make the rest incomparable);
  speed    prefill and decode tokens/s of kiln-llm (one warm-up generation first), next to
           eager PyTorch's for the same loop.

Pass criteria: fp32: identical greedy tokens and teacher-forced logits within 1e-4 relative
error (max |kiln - eager| / max |eager| per step, max over steps; 1e-3 for the 100m model, whose
12 layers accumulate more reordering); bf16: teacher-forced logits within 5e-2 (bf16 has 8
mantissa bits: Inductor's fused kernels round at other places than eager's op-by-op ones),
greedy tokens reported only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
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


def run_runner(runner: str, program: str, args: list[str], log, logits_file: Path) -> tuple[dict, np.ndarray]:
    """kiln-llm --json on the program with args; (its JSON result, the logits it wrote)."""
    cmd = [runner, program, "--json", "--logits-out", str(logits_file), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    log.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        raise RuntimeError(f"kiln-llm failed ({proc.returncode}): {proc.stderr.strip()}")
    result = json.loads(proc.stdout)
    logits = np.fromfile(logits_file, dtype=np.float32).reshape(-1, result["vocab_size"])
    logits_file.unlink()
    return result, logits


def rel_err(a, b) -> float:
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


def check(config: str, dtype: str, program: str, runner: str, logs: Path, work: Path, row: dict,
          device: str = "cuda") -> None:
    """Parity and speed of one exported program, into `row` (row["pass"]: the pass criteria)."""
    import torch

    import export_llm

    logits_file = work / f"{config}_{dtype}_logits.bin"
    model = export_llm.build_model(config, seed=0, device=device, dtype=getattr(torch, DTYPES[dtype]))
    row["parameters_m"] = round(export_llm.CONFIGS[config].num_parameters() / 1e6, 1)
    spec = RUNS[config]
    steps = spec["parity_steps"]
    prompt = np.random.default_rng(5).integers(0, model.cfg.vocab_size, size=min(spec["prompt"], 64)).tolist()
    with open(logs / f"{config}_{dtype}.log", "w") as log:
        # Parity: free-running greedy, then teacher-forced with eager's tokens.
        ids = " ".join(map(str, prompt))
        greedy, _ = run_runner(runner, program, ["--prompt", ids, "--max-new-tokens", str(steps), "--warmup", "0"], log,
                               logits_file)
        ref_tokens, ref_logits = export_llm.reference_run(model, prompt, steps)
        ref = torch.stack(ref_logits).numpy()
        ours = greedy["tokens"]
        first_diff = next((i for i, (a, b) in enumerate(zip(ours, ref_tokens)) if a != b), None)
        row["device"] = greedy["device"]
        row["greedy_tokens_equal"] = ours == ref_tokens
        row["first_token_difference"] = first_diff
        forced, logits = run_runner(runner, program, ["--prompt", ids, "--force", " ".join(map(str, ref_tokens)),
                                                      "--warmup", "0"], log, logits_file)
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
                                                str(spec["new"]), "--warmup", "1"], log, logits_file)
        row["prefill_tokens"] = len(speed["prompt"])
        row["decode_tokens"] = speed["decode_calls"]
        row["kiln_prefill_tok_s"] = speed["prefill_tokens_per_s"]
        row["kiln_decode_tok_s"] = speed["decode_tokens_per_s"]
        row["kiln_decode_step_ms"] = speed["decode_step_median_ms"]
        row["eager_prefill_tok_s"], row["eager_decode_tok_s"] = eager_speed(model, speed["prompt"], spec["new"])
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
