"""examples/embed on a GPU: exports all-MiniLM-L6-v2 for CUDA (fp32), runs the C++ runner
kiln-embed on the GPU, checks every embedding against eager PyTorch on the GPU and against
sentence-transformers' encode() (computed on a CPU, stored in examples/embed/st_reference.json),
cosine >= 0.9999 per sentence, prints one table (with latency per batch, Kiln vs eager) and writes
JSON + logs under --out. Run through scripts/gpu-embed.sh.

Needs neither sentence-transformers nor a network: the model is built with transformers alone
(export_minilm.build_module(source="transformers"), which the CPU tests anchor to
sentence-transformers). With --device cpu and --program (a CPU export) it runs the same checks on
a CPU build, which is how tests/python/test_embed_example.py exercises this script.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples" / "embed"))
import export_minilm  # noqa: E402
import st_reference  # noqa: E402

#: Each Kiln embedding against the reference and against eager, per sentence.
MIN_COSINE = 0.9999
#: Compile specs of the export used where the default export (autotuned Triton GEMMs) does not
#: finish within --export-timeout: no autotuning, GEMMs through Kiln's cuBLASLt fallback.
FALLBACK_SPECS = {"triton_only": "0", "max_autotune": "0"}


def log(message: str) -> None:
    print(f"[gpu-embed] {message}", flush=True)


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


def table(report: dict, reference: dict) -> str:
    lines = [f"device {report['device']}, torch {report['torch']}, export {report['export_mode']} "
             f"{report['export_s']:.1f} s, program {report['program_mb']:.1f} MB, kiln-embed load "
             f"{report['batches']['reference']['kiln_load_ms']:.0f} ms",
             f"{'#':>2} {'tok':>4}  {'sentence':<44} {'cos vs ST':>11} {'(1-cos)':>9} {'cos vs eager':>12} "
             f"{'(1-cos)':>9}  ids==ST"]
    ref = report["batches"]["reference"]
    for i, sentence in enumerate(reference["sentences"]):
        shown = sentence if len(sentence) <= 44 else sentence[:41] + "..."
        st, eager = ref["cos_vs_st"][i], ref["cos_vs_eager"][i]
        lines.append(f"{i:2d} {len(reference['token_ids'][i]):4d}  {shown:<44} {st:11.8f} {1 - st:9.1e} "
                     f"{eager:12.8f} {1 - eager:9.1e}  {ref['ids_match_st'][i]}")
    lines.append(f"latency per batch (median of {report['repeat']}, host ids in, host embeddings out):")
    lines.append(f"  {'batch':<42} {'Kiln first':>10} {'Kiln ms':>8} {'eager ms':>9}  min cos vs ST / eager")
    for name, b in report["batches"].items():
        lines.append(f"  {b['label']:<42} {b['kiln_first_ms']:10.2f} {b['kiln_ms']:8.2f} {b['eager_ms']:9.2f}  "
                     f"{min(b['cos_vs_st']):.8f} / {min(b['cos_vs_eager']):.8f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", required=True, help="kiln-embed (built with CUDA support for --device cuda)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--program", help="an exported minilm.kiln to use instead of exporting (vocab.txt beside it)")
    parser.add_argument("--reference", default=str(st_reference.REFERENCE_PATH), help="sentence-transformers reference JSON")
    parser.add_argument("--work", default="/tmp/gpu-embed", help="where the program goes (not copied back)")
    parser.add_argument("--out", required=True, help="logs and JSON")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per batch after the first")
    parser.add_argument("--export-timeout", type=float, default=330,
                        help="seconds for the default export before falling back to FALLBACK_SPECS")
    args = parser.parse_args(argv)
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    device = args.device
    if device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("gpu-embed: torch sees no GPU")
        # Eager reference in true fp32.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    reference = st_reference.load(Path(args.reference))
    report: dict = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
                    "torch": torch.__version__, "repeat": args.repeat,
                    "reference": {"path": args.reference, "sentence_transformers": reference["sentence_transformers"]}}

    if args.program:
        program, report["export_mode"], report["export_s"] = Path(args.program), "given", 0.0
    else:
        program, report["export_mode"], report["export_s"] = export(work, device, out, args.export_timeout)
    report["program_mb"] = program.stat().st_size / 1e6
    log(f"program {program} ({report['program_mb']:.1f} MB, export {report['export_mode']}, {report['export_s']:.1f} s)")

    module = export_minilm.build_module(source="transformers").to(device)
    short = [reference["sentences"].index(s) for s in st_reference.SHORT_SENTENCES]
    batches = {"reference": (list(range(len(reference["sentences"]))),
                             f"{len(reference['sentences'])} sentences, padded to "
                             f"{max(len(t) for t in reference['token_ids'])} tokens"),
               "short": (short, f"{len(short)} short sentences (<= "
                                f"{max(len(reference['token_ids'][i]) for i in short)} tokens)")}
    report["batches"] = {}
    failures = []
    for name, (indices, label) in batches.items():
        sentences = [reference["sentences"][i] for i in indices]
        kiln = run_runner(args.runner, program, sentences, args.repeat, out, name)
        eager, eager_ms = eager_embeddings(module, kiln["token_ids"], device, args.repeat)
        result = compare(kiln, eager, reference, indices)
        result.update(label=label, kiln_ms=kiln["median_run_ms"], kiln_first_ms=kiln["first_run_ms"],
                      kiln_load_ms=kiln["load_ms"], eager_ms=eager_ms)
        report["batches"][name] = result
        failures += [f"{name}: {p}" for p in problems(result)]

    # examples/embed/README.md's command as a person runs it (text output), for its GPU numbers.
    print(run_runner(args.runner, program, st_reference.SHORT_SENTENCES, 5, out, "readme", as_json=False), flush=True)

    text = table(report, reference)
    print(text, flush=True)
    report["failures"] = failures
    (out / "gpu_embed_table.txt").write_text(text + "\n")
    (out / "gpu_embed.json").write_text(json.dumps(report, indent=1))
    log("PASS" if not failures else "FAIL: " + "; ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
