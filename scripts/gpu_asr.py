"""examples/asr on a GPU: exports Whisper tiny.en for CUDA, runs the C++ runner kiln-asr on a
12.6 s recording (eager decoder steps, then CUDA graphs), checks it against eager PyTorch on the GPU
(method outputs on fresh random inputs; greedy ids on the runner's own log-mel), prints one table
and writes JSON + logs under --out. Run through scripts/gpu-asr.sh.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples" / "asr"))
import export_asr  # noqa: E402

AUDIO = REPO / "examples" / "asr" / "samples" / "kiln_speech.wav"
SPOKEN = ("Kiln runs PyTorch models compiled ahead of time, with no Python at run time. "
          "This example turns speech into text on the processor or on the graphics card.")


def log(message: str) -> None:
    print(f"[gpu-asr] {message}", flush=True)


def rel(a, b: torch.Tensor) -> float:
    b = b.detach().double().cpu().numpy()
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30))


def run_runner(runner: str, program: Path, out: Path, name: str, *extra: str) -> dict:
    cmd = [runner, str(program), "--json", "--repeat", "5", *extra, str(AUDIO)]
    log(" ".join(cmd))
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    (out / f"kiln-asr-{name}.stdout").write_text(proc.stdout)
    (out / f"kiln-asr-{name}.stderr").write_text(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"kiln-asr ({name}) failed with {proc.returncode}: {proc.stderr[-2000:]}")
    result = json.loads(proc.stdout)
    result["wall_s"] = time.perf_counter() - start
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", required=True, help="kiln-asr built with CUDA support")
    parser.add_argument("--work", default="/tmp/gpu-asr", help="where the program goes (not copied back)")
    parser.add_argument("--out", required=True, help="logs and JSON")
    args = parser.parse_args()
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        raise SystemExit("gpu-asr: torch sees no GPU")
    # Eager reference in true fp32 (no TF32 in convolutions or matmuls).
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    report: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}

    start = time.perf_counter()
    program = export_asr.export_program(work, device="cuda", verbose=True)
    report["export_s"] = time.perf_counter() - start
    log(f"exported {program} in {report['export_s']:.1f} s ({program.stat().st_size / 1e6:.1f} MB)")

    # 1. Methods against eager on the GPU, fresh random inputs.
    from kiln.runtime import Module

    model = export_asr.load_whisper().cuda()
    m = Module(program)
    m.load()
    g = torch.Generator(device="cuda").manual_seed(5)
    mel = torch.randn(1, export_asr.N_MELS, export_asr.N_FRAMES, device="cuda", generator=g)
    cache = (model.dims["decoder_layers"], export_asr.N_TEXT_CTX, model.dims["dim"])
    self_k = torch.randn(cache, device="cuda", generator=g)
    self_v = torch.randn(cache, device="cuda", generator=g)
    token, position = torch.tensor([4242], device="cuda"), torch.tensor([51], device="cuda")
    with torch.no_grad():
        ref_k, ref_v = model.encoder(mel)
        ref_step = model.decoder(token, position, self_k, self_v, ref_k, ref_v)
    host = lambda t: t.cpu().numpy()  # noqa: E731
    kiln_k, kiln_v = m.execute("encoder", [host(mel)])
    step = m.execute("decoder", [host(token), host(position), host(self_k), host(self_v), host(ref_k), host(ref_v)])
    report["parity"] = {"cross_k": rel(kiln_k, ref_k), "cross_v": rel(kiln_v, ref_v), "logits": rel(step[0], ref_step[0]),
                        "self_k": rel(step[1], ref_step[1]), "self_v": rel(step[2], ref_step[2])}
    del m

    # 2. The C++ runner, eager steps and CUDA graphs.
    runs = {"kiln-asr": run_runner(args.runner, program, out, "eager", "--dump-mel", str(work / "mel.npy")),
            "kiln-asr --cuda-graphs": run_runner(args.runner, program, out, "graphs", "--cuda-graphs")}

    # 3. Eager greedy decode on the GPU of the runner's log-mel; timed like the runner's decode.
    mel_cpp = torch.from_numpy(np.load(work / "mel.npy")).cuda()
    tok = export_asr.tokenizer_config()
    eager_ids = []
    times = []
    for _ in range(4):
        torch.cuda.synchronize()
        start = time.perf_counter()
        eager_ids = [export_asr.greedy_decode(model, mel_cpp[i : i + 1], tok) for i in range(mel_cpp.shape[0])]
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    report["eager_decode_ms"] = 1000 * sorted(times[1:])[len(times[1:]) // 2]
    for name, r in runs.items():
        f = r["files"][0]
        r["ids_match_eager"] = [w["ids"] for w in f["windows"]] == eager_ids
    report["runs"] = runs

    # Table.
    f0 = runs["kiln-asr"]["files"][0]
    lines = [f"device {report['device']}, torch {report['torch']}, export {report['export_s']:.1f} s",
             f"audio {AUDIO.name}: {f0['audio_seconds']:.2f} s at {f0['source_rate']} Hz",
             "Kiln methods vs eager (GPU, fp32, random inputs), relative error: "
             + ", ".join(f"{k} {v:.1e}" for k, v in report["parity"].items()),
             f"{'run':<24} {'load ms':>8} {'front ms':>9} {'enc ms':>8} {'dec ms':>8} {'steps':>6} {'total ms':>9} {'RTF':>7} {'x real time':>12}  ids == eager",
             ]
    for name, r in runs.items():
        f = r["files"][0]
        steps = sum(w["steps"] for w in f["windows"])
        lines.append(f"{name:<24} {r['load_ms']:8.1f} {f['frontend_ms']:9.1f} {f['encoder_ms']:8.1f} {f['decoder_ms']:8.1f} "
                     f"{steps:6d} {f['total_ms']:9.1f} {f['rtf']:7.4f} {f['audio_seconds'] * 1000 / f['total_ms']:12.1f}  {r['ids_match_eager']}")
    lines.append(f"{'eager PyTorch (GPU)':<24} {'':>8} {'':>9} {'':>8} {'':>8} {'':>6} {report['eager_decode_ms']:9.1f}"
                 f" {report['eager_decode_ms'] / 1000 / f0['audio_seconds']:7.4f}   (encoder + greedy loop, no front end)")
    lines.append(f"spoken:     {SPOKEN}")
    lines.append(f"transcript: {f0['text']}")
    table = "\n".join(lines)
    print(table, flush=True)
    (out / "gpu_asr_table.txt").write_text(table + "\n")
    (out / "gpu_asr.json").write_text(json.dumps(report, indent=1))
    ok = all(v <= 1e-4 for v in report["parity"].values()) and all(r["ids_match_eager"] for r in runs.values())
    log("PASS" if ok else "FAIL: see the table (parity above 1e-4 or ids differ)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
