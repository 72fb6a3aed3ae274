"""The models of the GPU benchmark (bench/models/gpu_bench.py), at benchmark size or tiny.

Every builder takes (dtype, device, tiny) and returns a BenchModel: the module in eval
mode, the example inputs it is exported with, its dynamic shapes, and the points it
is timed at (the first point is the headline row of the tables; the others make the
latency-vs-batch / latency-vs-sequence plots). Weights are random (seeded): speed does
not depend on their values.

  transformer_block  pre-LN block (d 1024, 16 heads, GELU MLP) over [1, seq, 1024];
                     seq is dynamic: 512 (headline), sweep 128..2048.
  whisper_decoder    one whisper-base-sized decoder step (d 512, 6 layers, 8 heads,
                     vocab 51865) with 64 past tokens of self-attention cache and a
                     1500-frame cross-attention cache (the encoder states' K/V,
                     projected once per utterance as a real decoder loop does).
  parakeet_encoder   FastConformer encoder + CTC head over 10 s of audio (1000 mel
                     frames of 128 bins, 8x subsampling), d 512, 12 layers, 8 heads.
  gemma3_decode      a Gemma3-like text decoder of 1,143,106,560 parameters (2.29 GB in
                     bf16): hidden 2048, 18 layers, 8 query heads and 1
                     KV head of dim 256, MLP 8192, vocab 32768 (tied embedding),
                     sliding window 512 on 5 of every 6 layers. One token at batch 1
                     over a 1024-token KV cache.
  gemma3_prefill     the same model over a 512-token prompt.
  whisper_decoder_inplace  the whisper-base-sized step of examples/asr (d 512, 6 layers,
                     8 heads): a fixed 448-slot self-attention cache written in place
                     at the step's position (here 64), and the 1500-frame cross cache.
  llm_decode_inplace examples/llm's decode step at TinyLlama-1.1B's shape (1,100,048,384
                     parameters, 2.2 GB in bf16: dim 2048, 22 layers, 32 query and 4
                     KV heads of dim 64, MLP 5632, vocab 32000), one token at position
                     1023 of a 1024-slot KV cache written in place.
  resnet50           ResNet-50 (bottleneck blocks 3/4/6/3) at 224x224; batch is dynamic:
                     1 and 32 (headline rows), sweep 1..32.

KV caches cross the model boundary stacked, one key and one value tensor for all
layers ([layers, batch, kv_heads, seq, head_dim]), so a call passes 3 (Gemma) or 5
(Whisper) tensors instead of two per layer; the grown caches come back the same way.
The *_inplace models keep their caches in fixed-size input tensors that the step writes
in place (one slot per layer) and return only the logits: the form that runs under CUDA
graphs, which bind those inputs by address. Every call writes the same slot, so repeated
calls on one set of inputs compute the same logits.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import sys
from pathlib import Path

import torch
import torch.nn as nn

# The thin transformers wrappers are the GPU test suite's (same models, bigger configs here).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "gpu"))
from hf_suite_models import ParakeetCtc, ResNetLogits, _transformers  # noqa: E402

# The examples' own decode steps, which write their caches in place.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "asr"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "llm"))

# The causal pre-norm block of the parity tests, at benchmark size.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
from parity_models import TransformerBlock  # noqa: E402


@dataclasses.dataclass
class Point:
    """One timed input: `label` (e.g. "seq=512"), `x` (the swept value, for plots),
    `inputs` (a function of the device returning fresh inputs) and `items` (what one
    call produces, for throughput: images, tokens, seconds of audio)."""

    label: str
    x: int
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    items: float


@dataclasses.dataclass
class BenchModel:
    module: nn.Module
    example: tuple[torch.Tensor, ...]
    dynamic_shapes: tuple | None
    points: list[Point]
    headline: list[str]  # labels of the rows that go into the summary table
    sweep: str | None  # "batch" or "seq": the x axis of the plot, or None
    item_unit: str  # "images", "tokens", "s audio", "sequences"
    kv_bytes: int = 0  # bytes of KV cache one call reads (decode roofline)


def param_bytes(module: nn.Module) -> int:
    """Bytes of parameters and buffers (parameters() already yields tied weights once)."""
    return sum(t.numel() * t.element_size() for t in list(module.parameters()) + list(module.buffers()))


def param_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _randn(shape, dtype, device):
    return lambda: (torch.randn(*shape, dtype=dtype, device=device),)


# ---------------------------------------------------------------- transformer block


def transformer_block(dtype, device, tiny):
    d, heads = (64, 4) if tiny else (1024, 16)
    seqs = [32, 16, 64] if tiny else [512, 128, 256, 1024, 2048]
    torch.manual_seed(0)
    module = TransformerBlock(d, heads).to(device, dtype).eval()
    seq = torch.export.Dim("seq", min=8, max=max(seqs))
    points = [Point(f"seq={s}", s, _randn((1, s, d), dtype, device), s) for s in seqs]
    return BenchModel(module, points[0].inputs(), ({1: seq},), points, [points[0].label], "seq", "tokens")


# ---------------------------------------------------------------- Whisper decoder step


class WhisperDecoderStep(nn.Module):
    """One decoder token: forward(ids [B,1], self_k, self_v [L,B,H,past,hd], cross_k,
    cross_v [L,B,H,frames,hd]) -> (logits [B,1,vocab], self_k', self_v' with past+1).

    The cross-attention cache is given filled, so transformers reads K/V from it and
    does not project the encoder states again (the encoder-states argument it still
    needs to take the cross-attention path is a 1-frame placeholder it never reads)."""

    def __init__(self, whisper):
        super().__init__()
        self.decoder = whisper.get_decoder()
        self.proj_out = whisper.proj_out
        self.num_layers = whisper.config.decoder_layers
        self.d_model = whisper.config.d_model

    def forward(self, ids, self_k, self_v, cross_k, cross_v):
        tf = _transformers()
        own = tf.DynamicCache([(self_k[i], self_v[i]) for i in range(self.num_layers)])
        cross = tf.DynamicCache([(cross_k[i], cross_v[i]) for i in range(self.num_layers)])
        cache = tf.EncoderDecoderCache(own, cross)
        placeholder = cross_k.new_zeros(ids.shape[0], 1, self.d_model)
        hidden = self.decoder(input_ids=ids, encoder_hidden_states=placeholder, past_key_values=cache,
                              use_cache=True).last_hidden_state
        layers = cache.self_attention_cache.layers
        return (self.proj_out(hidden), torch.stack([layer.keys for layer in layers]),
                torch.stack([layer.values for layer in layers]))


def whisper_config(tiny):
    tf = _transformers()
    size = dict(vocab_size=512, d_model=64, layers=2, heads=4, ffn=128, frames=30) if tiny else \
        dict(vocab_size=51865, d_model=512, layers=6, heads=8, ffn=2048, frames=1500)
    return tf.WhisperConfig(
        vocab_size=size["vocab_size"], num_mel_bins=80, d_model=size["d_model"],
        encoder_layers=size["layers"], decoder_layers=size["layers"],
        encoder_attention_heads=size["heads"], decoder_attention_heads=size["heads"],
        encoder_ffn_dim=size["ffn"], decoder_ffn_dim=size["ffn"],
        max_source_positions=size["frames"], max_target_positions=448,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=3,
        begin_suppress_tokens=None, attn_implementation="sdpa", use_cache=True)


WHISPER_PAST = 64


def whisper_decoder(dtype, device, tiny):
    tf = _transformers()
    config = whisper_config(tiny)
    torch.manual_seed(0)
    whisper = tf.WhisperForConditionalGeneration(config).to(device, dtype).eval()
    module = WhisperDecoderStep(whisper).eval()
    c = config
    hd = c.d_model // c.decoder_attention_heads
    past = 8 if tiny else WHISPER_PAST
    layers, heads, frames = c.decoder_layers, c.decoder_attention_heads, c.max_source_positions

    def inputs():
        return (torch.randint(0, c.vocab_size, (1, 1), device=device),
                torch.randn(layers, 1, heads, past, hd, dtype=dtype, device=device),
                torch.randn(layers, 1, heads, past, hd, dtype=dtype, device=device),
                torch.randn(layers, 1, heads, frames, hd, dtype=dtype, device=device),
                torch.randn(layers, 1, heads, frames, hd, dtype=dtype, device=device))

    point = Point(f"past={past},frames={frames}", past, inputs, 1)
    kv = 2 * layers * heads * (past + frames) * hd * torch.empty((), dtype=dtype).element_size()
    return BenchModel(module, inputs(), None, [point], [point.label], None, "tokens", kv)


# ---------------------------------------------------------------- Parakeet


def parakeet_encoder(dtype, device, tiny):
    tf = _transformers()
    size = dict(d=64, layers=2, heads=4, ffn=128, ch=32, frames=128) if tiny else \
        dict(d=512, layers=12, heads=8, ffn=2048, ch=256, frames=1000)
    encoder = tf.ParakeetEncoderConfig(
        hidden_size=size["d"], num_hidden_layers=size["layers"], num_attention_heads=size["heads"],
        intermediate_size=size["ffn"], conv_kernel_size=9, subsampling_factor=8,
        subsampling_conv_channels=size["ch"], num_mel_bins=128, max_position_embeddings=5000)
    config = tf.ParakeetCTCConfig(vocab_size=1025, pad_token_id=1024, encoder_config=encoder.to_dict(),
                                  attn_implementation="sdpa")
    config.use_cache = False
    torch.manual_seed(0)
    module = ParakeetCtc(tf.ParakeetForCTC(config).to(device, dtype).eval()).eval()
    frames = size["frames"]
    point = Point(f"frames={frames}", frames, _randn((1, frames, 128), dtype, device), frames / 100.0)
    return BenchModel(module, point.inputs(), None, [point], [point.label], None, "s audio")


# ---------------------------------------------------------------- Gemma 3


def gemma3_config(tiny):
    tf = _transformers()
    if tiny:
        size = dict(vocab=512, hidden=128, inter=256, layers=2, heads=4, kv=1, hd=32, window=8)
    else:
        size = dict(vocab=32768, hidden=2048, inter=8192, layers=18, heads=8, kv=1, hd=256, window=512)
    layer_types = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(size["layers"])]
    if tiny:
        layer_types = ["sliding_attention", "full_attention"]
    config = tf.Gemma3TextConfig(
        vocab_size=size["vocab"], hidden_size=size["hidden"], intermediate_size=size["inter"],
        num_hidden_layers=size["layers"], num_attention_heads=size["heads"], num_key_value_heads=size["kv"],
        head_dim=size["hd"], query_pre_attn_scalar=size["hd"], max_position_embeddings=4096,
        sliding_window=size["window"], layer_types=layer_types, attn_implementation="sdpa")
    config.use_cache = True
    return config


class CausalLmStep(nn.Module):
    """One step of a Hugging Face causal LM with its KV cache as tensors (Gemma3 here, Llama in
    cpu_vs_onnxruntime.py): forward(ids [B,T], past_k, past_v [L,B,kv,past,hd]) ->
    (logits [B,T,vocab], k', v' [L,B,kv,past+T,hd]); prefill passes no cache tensors.
    Gemma3's sliding-window layers keep their full history and the window is applied by
    the mask, so one layout serves every layer."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.num_layers = model.config.num_hidden_layers

    def forward(self, ids, past_k=None, past_v=None):
        tf = _transformers()
        if past_k is None:
            cache = tf.DynamicCache()
        else:
            cache = tf.DynamicCache([(past_k[i], past_v[i]) for i in range(self.num_layers)])
        logits = self.model(input_ids=ids, past_key_values=cache, use_cache=True).logits
        return (logits, torch.stack([layer.keys for layer in cache.layers]),
                torch.stack([layer.values for layer in cache.layers]))


def _gemma3(dtype, device, tiny):
    tf = _transformers()
    config = gemma3_config(tiny)
    torch.manual_seed(0)
    with torch.device(device):
        model = tf.Gemma3ForCausalLM(config)
    return CausalLmStep(model.to(device, dtype).eval()).eval(), config


GEMMA_PAST = 1024
GEMMA_PROMPT = 512


def gemma3_decode(dtype, device, tiny):
    module, c = _gemma3(dtype, device, tiny)
    past = 16 if tiny else GEMMA_PAST

    def inputs():
        shape = (c.num_hidden_layers, 1, c.num_key_value_heads, past, c.head_dim)
        return (torch.randint(0, c.vocab_size, (1, 1), device=device),
                torch.randn(*shape, dtype=dtype, device=device), torch.randn(*shape, dtype=dtype, device=device))

    point = Point(f"past={past}", past, inputs, 1)
    kv = 2 * c.num_hidden_layers * c.num_key_value_heads * past * c.head_dim * torch.empty((), dtype=dtype).element_size()
    return BenchModel(module, inputs(), None, [point], [point.label], None, "tokens", kv)


def gemma3_prefill(dtype, device, tiny):
    module, c = _gemma3(dtype, device, tiny)
    prompt = 16 if tiny else GEMMA_PROMPT
    point = Point(f"prompt={prompt}", prompt, lambda: (torch.randint(0, c.vocab_size, (1, prompt), device=device),),
                  prompt)
    return BenchModel(module, point.inputs(), None, [point], [point.label], None, "tokens")


# ---------------------------------------------------------------- ResNet


def resnet50(dtype, device, tiny):
    tf = _transformers()
    if tiny:
        config = tf.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                                 layer_type="basic", num_labels=10)
        side, batches = 32, [1, 4, 2]
    else:
        config = tf.ResNetConfig(embedding_size=64, hidden_sizes=[256, 512, 1024, 2048], depths=[3, 4, 6, 3],
                                 layer_type="bottleneck", num_labels=1000)
        side, batches = 224, [1, 32, 4, 8, 16]
    torch.manual_seed(0)
    module = ResNetLogits(tf.ResNetForImageClassification(config).to(device, dtype).eval()).eval()
    batch = torch.export.Dim("batch", min=1, max=max(batches))
    points = [Point(f"batch={b}", b, _randn((b, 3, side, side), dtype, device), b) for b in batches]
    # Exported with batch 2: an example of size 1 would make torch.export specialise it.
    example = (torch.randn(2, 3, side, side, dtype=dtype, device=device),)
    return BenchModel(module, example, ({0: batch},), points, [points[0].label, points[1].label], "batch", "images")


# ---------------------------------------------------------------- decode steps with in-place caches


def whisper_decoder_inplace(dtype, device, tiny):
    import export_asr

    dim, heads, layers, vocab, frames = (64, 4, 2, 512, 30) if tiny else (512, 8, 6, 51865, 1500)
    torch.manual_seed(0)
    module = export_asr.DecoderStep(dim, heads, layers, vocab).to(device, dtype).eval()
    slots, position = export_asr.N_TEXT_CTX, 8 if tiny else WHISPER_PAST

    def inputs():
        return (torch.randint(0, vocab, (1,), device=device), torch.tensor([position], device=device),
                torch.randn(layers, slots, dim, dtype=dtype, device=device),
                torch.randn(layers, slots, dim, dtype=dtype, device=device),
                torch.randn(layers, frames, dim, dtype=dtype, device=device),
                torch.randn(layers, frames, dim, dtype=dtype, device=device))

    point = Point(f"pos={position},frames={frames}", position, inputs, 1)
    # The masked attention reads every slot of the cache.
    kv = 2 * layers * (slots + frames) * dim * torch.empty((), dtype=dtype).element_size()
    return BenchModel(module, inputs(), None, [point], [point.label], None, "tokens", kv)


def llm_decode_inplace(dtype, device, tiny):
    import export_llm

    config = "tiny" if tiny else "1.1b"
    cfg = export_llm.CONFIGS[config]
    module = export_llm.DecodeMethod(export_llm.build_model(config, device=str(device), dtype=dtype)).eval()
    position = cfg.max_seq - 1

    def inputs():
        return (torch.randint(0, cfg.vocab_size, (1, 1), device=device), torch.tensor([position], device=device),
                torch.randn(cfg.cache_shape(), dtype=dtype, device=device),
                torch.randn(cfg.cache_shape(), dtype=dtype, device=device))

    point = Point(f"pos={position}", position, inputs, 1)
    kv = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.max_seq * cfg.head_dim * torch.empty((), dtype=dtype).element_size()
    return BenchModel(module, inputs(), None, [point], [point.label], None, "tokens", kv)


MODELS: dict[str, Callable[[torch.dtype, torch.device, bool], BenchModel]] = {
    "transformer_block": transformer_block,
    "whisper_decoder": whisper_decoder,
    "parakeet_encoder": parakeet_encoder,
    "gemma3_decode": gemma3_decode,
    "gemma3_prefill": gemma3_prefill,
    "resnet50": resnet50,
    "whisper_decoder_inplace": whisper_decoder_inplace,
    "llm_decode_inplace": llm_decode_inplace,
}
