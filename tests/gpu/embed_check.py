"""examples/embed on a GPU, the pieces of tests/gpu/test_examples_embed.py: exporting
all-MiniLM-L6-v2 with the example's exporter, running the C++ runner kiln-embed, eager
embeddings timed like the runner's, and comparing both with sentence-transformers' encode()
(computed on a CPU, stored in examples/embed/st_reference.json). Needs neither
sentence-transformers nor a network: the model is built with transformers alone
(export_minilm.build_module(source="transformers"), which the CPU tests anchor to
sentence-transformers). tests/python/test_gpu_embed_pieces.py checks compare() and problems().
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "embed"))
import export_minilm  # noqa: E402
import st_reference  # noqa: E402

#: Each Kiln embedding against the reference and against eager, per sentence.
MIN_COSINE = 0.9999
#: Compile specs of the export used where the default export (autotuned Triton GEMMs) does not
#: finish within its timeout: no autotuning, GEMMs through Kiln's cuBLASLt fallback.
FALLBACK_SPECS = {"triton_only": "0", "max_autotune": "0"}


def log(message: str) -> None:
    print(f"[kiln gpu embed] {message}", flush=True)


def export(work: Path, device: str, out: Path, timeout_s: float) -> tuple[Path, str, float]:
    """Exports with export_minilm.py's command line (the documented way); on timeout once more with
    FALLBACK_SPECS. Returns (program, mode, seconds)."""
    attempts = [("default", {})] + ([("fallbacks", FALLBACK_SPECS)] if device == "cuda" else [])
    log_path = out / "export.log"
    for mode, specs in attempts:
        cmd = [sys.executable, str(REPO / "examples" / "embed" / "export_minilm.py"), "--out-dir", str(work),
               "--device", device, *[f"--compile-spec={k}={v}" for k, v in specs.items()]]
        log(f"export ({mode}): {' '.join(cmd)}")
        start = time.perf_counter()
        with open(log_path, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n")
            f.flush()
            # A process group of its own, so a timeout also ends Inductor's compile workers.
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                log(f"export ({mode}) did not finish in {timeout_s:.0f} s")
                continue
        seconds = time.perf_counter() - start
        if rc != 0:
            raise RuntimeError(f"export_minilm.py ({mode}) failed with {rc}: see {log_path}")
        return work / "minilm.kiln", mode, seconds
    raise RuntimeError(f"no export finished within {timeout_s:.0f} s: see {log_path}")


def run_runner(runner: str, program: Path, sentences: list[str], repeat: int, out: Path | None,
               name: str, as_json: bool = True) -> dict | str:
    cmd = [runner, str(program), *(["--json"] if as_json else []), "--repeat", str(repeat), "--", *sentences]
    log(f"{runner} {program} {'--json ' if as_json else ''}--repeat {repeat} -- <{len(sentences)} sentences>")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if out is not None:
        if as_json:
            (out / f"kiln-embed-{name}.json").write_text(proc.stdout)
        with open(out / "kiln-embed.stderr", "a") as f:
            f.write(f"--- {name}\n{proc.stderr}")
    if proc.returncode != 0:
        raise RuntimeError(f"kiln-embed ({name}) failed with {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout) if as_json else proc.stdout


def eager_embeddings(module, token_ids: list[list[int]], device: str, repeat: int) -> tuple[np.ndarray, float]:
    """Eager embeddings of already tokenized sentences and the median ms per batch, timed like
    kiln-embed's runs: host token ids in, host embeddings out."""
    ids, mask = export_minilm.pad_token_ids(token_ids)
    times = []
    result = None
    with torch.no_grad():
        for _ in range(repeat + 1):
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            result = module(ids.to(device), mask.to(device)).cpu()
            times.append(1000 * (time.perf_counter() - start))
    return result.double().numpy(), float(np.median(times[1:])) if repeat else times[0]


def compare(kiln: dict, eager: np.ndarray, reference: dict, indices: list[int]) -> dict:
    """Per-sentence cosines of Kiln's embeddings with eager and with the reference rows `indices`,
    and whether Kiln's token ids are sentence-transformers' ones."""
    ours = np.asarray(kiln["embeddings"], dtype=np.float64)
    ref = reference["embeddings"][indices]
    ref_ids = [reference["token_ids"][i] for i in indices]
    return {
        "cos_vs_st": st_reference.row_cosines(ours, ref).tolist(),
        "cos_vs_eager": st_reference.row_cosines(ours, eager).tolist(),
        "eager_cos_vs_st": st_reference.row_cosines(eager, ref).tolist(),
        "max_abs_vs_eager": float(np.abs(ours - eager).max()),
        "ids_match_st": [a == b for a, b in zip(kiln["token_ids"], ref_ids)],
    }


def problems(result: dict, min_cosine: float = MIN_COSINE) -> list[str]:
    """What fails in one compare() result (empty: all good)."""
    found = []
    for key in ("cos_vs_st", "cos_vs_eager"):
        bad = [i for i, c in enumerate(result[key]) if not c >= min_cosine]
        if bad:
            found.append(f"{key} < {min_cosine} for sentences {bad}: {[round(result[key][i], 6) for i in bad]}")
    if not all(result["ids_match_st"]):
        found.append(f"token ids differ from sentence-transformers' for sentences "
                     f"{[i for i, ok in enumerate(result['ids_match_st']) if not ok]}")
    return found


def render(sec) -> str:
    """The gpu_embed table: per sentence of the reference batch, cosines with sentence-transformers
    and with eager; per batch, latencies; then what the README's command prints."""
    extra, batches = sec.extra, {r["batch"]: r for r in sec.rows}
    reference = st_reference.load(Path(extra["reference"]["path"])) if "reference" in extra else st_reference.load()
    lines = [f"export {extra.get('export_mode')} {extra.get('export_s', 0):.1f} s, program "
             f"{extra.get('program_mb', 0):.1f} MB"]
    ref = batches.get("reference")
    if ref is not None and "cos_vs_st" in ref:
        lines.append(f"kiln-embed load {ref['kiln_load_ms']:.0f} ms")
        lines.append(f"{'#':>2} {'tok':>4}  {'sentence':<44} {'cos vs ST':>11} {'(1-cos)':>9} {'cos vs eager':>12} "
                     f"{'(1-cos)':>9}  ids==ST")
        for i, sentence in enumerate(reference["sentences"]):
            shown = sentence if len(sentence) <= 44 else sentence[:41] + "..."
            st, eager = ref["cos_vs_st"][i], ref["cos_vs_eager"][i]
            lines.append(f"{i:2d} {len(reference['token_ids'][i]):4d}  {shown:<44} {st:11.8f} {1 - st:9.1e} "
                         f"{eager:12.8f} {1 - eager:9.1e}  {ref['ids_match_st'][i]}")
    lines.append(f"latency per batch (median of {extra.get('repeat')}, host ids in, host embeddings out):")
    lines.append(f"  {'batch':<42} {'Kiln first':>10} {'Kiln ms':>8} {'eager ms':>9}  min cos vs ST / eager")
    for b in sec.rows:
        if "cos_vs_st" not in b:
            lines.append(f"  {b['label']:<42} ERROR: {b.get('error')}")
            continue
        lines.append(f"  {b['label']:<42} {b['kiln_first_ms']:10.2f} {b['kiln_ms']:8.2f} {b['eager_ms']:9.2f}  "
                     f"{min(b['cos_vs_st']):.8f} / {min(b['cos_vs_eager']):.8f}")
    if extra.get("readme_output"):
        lines += ["what the README's command prints:", extra["readme_output"].rstrip()]
    return "\n".join(lines)
