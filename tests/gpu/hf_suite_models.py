"""Small random-weight Hugging Face `transformers` models for Kiln's GPU parity suite.

HF_MODELS maps a suite name to a factory (torch.dtype, torch.device) -> (module in eval
mode, tuple of example inputs), the same contract as @suite_model in tests/gpu/suite_models.py.
The configs are tiny, so that every model exports and compiles quickly, but each keeps
the op mix of its family:

  whisper_encoder       Whisper encoder: conv1d stem, sinusoidal positions, SDPA.
  whisper_decoder_step  one Whisper decoder token with an 8-token self-attention KV
                        cache and cross-attention over encoder states.
  parakeet_ctc          FastConformer (Parakeet) CTC: conv2d subsampling, depthwise
                        conv1d + batch norm, relative-position attention.
  gemma3_prefill        Gemma 3 text model: GQA, RoPE, RMSNorm, one sliding-window and
                        one global layer; 16-token prefill.
  gemma3_decode         one Gemma 3 token on top of a 16-token KV cache.
  resnet                ResNet (basic blocks) image classifier.

HF models return ModelOutput / Cache objects, which torch.export can flatten but Kiln's
suite compares as plain tensors, so each model sits in a small wrapper whose forward
takes and returns only tensors. KV caches cross the wrapper boundary as plain tensors,
one key and one value tensor per layer, shaped [batch, kv_heads, seq, head_dim]; the
wrapper rebuilds the transformers Cache object inside forward and returns the grown
key/value tensors (seq + new tokens), so a decode loop can feed outputs back in.

`transformers` is imported only inside the factories: importing this module works
without it, and calling a factory without it raises an ImportError naming the package.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn as nn

# Token counts used by the examples.
WHISPER_SOURCE_POSITIONS = 150  # encoder frames after the stride-2 conv; mel frames = 2x
WHISPER_PAST = 8  # decoder tokens already in the self-attention cache
GEMMA_PREFILL = 16
GEMMA_SLIDING_WINDOW = 8  # smaller than the prompt, so the sliding mask matters
PARAKEET_FRAMES = 128  # mel frames; 8x subsampling -> 16 encoder frames


def _transformers():
    """Imports transformers on first use, with an error that says what to install."""
    try:
        import transformers
    except ImportError as e:
        raise ImportError(
            "hf_suite_models needs the 'transformers' package (tested with 5.17.0): "
            "python3 -m pip install transformers"
        ) from e
    return transformers


def _finish(model: nn.Module, dtype: torch.dtype, device: torch.device) -> nn.Module:
    return model.to(device=device, dtype=dtype).eval()


def _flat_kv(cache, num_layers: int) -> tuple[torch.Tensor, ...]:
    """(k0, v0, k1, v1, ...) from a DynamicCache."""
    out = []
    for i in range(num_layers):
        layer = cache.layers[i]
        out += [layer.keys, layer.values]
    return tuple(out)


def _pairs(flat: tuple[torch.Tensor, ...]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """[(k0, v0), (k1, v1), ...] from (k0, v0, k1, v1, ...)."""
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


# ---------------------------------------------------------------- Whisper


def _whisper(dtype, device):
    tf = _transformers()
    config = tf.WhisperConfig(
        vocab_size=512,
        num_mel_bins=80,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_source_positions=WHISPER_SOURCE_POSITIONS,
        max_target_positions=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=3,
        begin_suppress_tokens=None,
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    return _finish(tf.WhisperForConditionalGeneration(config), dtype, device)


class WhisperEncoder(nn.Module):
    """Whisper's encoder alone; returns last_hidden_state instead of a ModelOutput."""

    def __init__(self, whisper):
        super().__init__()
        self.encoder = whisper.get_encoder()

    def forward(self, input_features):
        return self.encoder(input_features=input_features).last_hidden_state


class WhisperDecoderStep(nn.Module):
    """One Whisper decoder step over a self-attention KV cache given as tensors.

    forward(decoder_input_ids [B, 1], encoder_hidden_states [B, S, d], k0, v0, k1, v1, ...)
    -> (logits [B, 1, vocab], k0', v0', ...), where each k/v is [B, heads, past, head_dim]
    and each k'/v' has past + 1 positions. The wrapper exists to turn those tensors into
    the EncoderDecoderCache the decoder needs and the grown cache back into tensors. The
    cross-attention cache starts empty, so cross-attention K/V are projected from
    encoder_hidden_states in this step (no cross-attention tensors to pass in).
    """

    def __init__(self, whisper):
        super().__init__()
        self.decoder = whisper.get_decoder()
        self.proj_out = whisper.proj_out
        self.num_layers = whisper.config.decoder_layers

    def forward(self, decoder_input_ids, encoder_hidden_states, *past_kv):
        tf = _transformers()
        cache = tf.EncoderDecoderCache(tf.DynamicCache(_pairs(past_kv)), tf.DynamicCache())
        hidden = self.decoder(
            input_ids=decoder_input_ids,
            encoder_hidden_states=encoder_hidden_states,
            past_key_values=cache,
            use_cache=True,
        ).last_hidden_state
        return (self.proj_out(hidden),) + _flat_kv(cache.self_attention_cache, self.num_layers)


def whisper_encoder(dtype, device):
    whisper = _whisper(dtype, device)
    whisper.config.use_cache = False
    c = whisper.config
    feats = torch.randn(1, c.num_mel_bins, 2 * c.max_source_positions, device=device, dtype=dtype)
    return WhisperEncoder(whisper).eval(), (feats,)


def whisper_decoder_step(dtype, device):
    whisper = _whisper(dtype, device)
    whisper.config.use_cache = True
    c = whisper.config
    head_dim = c.d_model // c.decoder_attention_heads
    ids = torch.tensor([[5]], device=device, dtype=torch.int64)
    enc = torch.randn(1, c.max_source_positions, c.d_model, device=device, dtype=dtype)
    past = tuple(
        torch.randn(1, c.decoder_attention_heads, WHISPER_PAST, head_dim, device=device, dtype=dtype)
        for _ in range(2 * c.decoder_layers)
    )
    return WhisperDecoderStep(whisper).eval(), (ids, enc) + past


# ---------------------------------------------------------------- Parakeet


class ParakeetCtc(nn.Module):
    """ParakeetForCTC returning the CTC logits tensor [B, frames/8, vocab]."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_features):
        return self.model(input_features=input_features).logits


def parakeet_ctc(dtype, device):
    tf = _transformers()
    encoder = tf.ParakeetEncoderConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        conv_kernel_size=9,
        subsampling_factor=8,
        subsampling_conv_channels=32,
        num_mel_bins=80,
        max_position_embeddings=512,
    )
    config = tf.ParakeetCTCConfig(
        vocab_size=129, pad_token_id=128, encoder_config=encoder.to_dict(), attn_implementation="sdpa"
    )
    config.use_cache = False
    torch.manual_seed(0)
    model = _finish(tf.ParakeetForCTC(config), dtype, device)
    feats = torch.randn(2, PARAKEET_FRAMES, encoder.num_mel_bins, device=device, dtype=dtype)
    return ParakeetCtc(model).eval(), (feats,)


# ---------------------------------------------------------------- Gemma 3


def _gemma3(dtype, device):
    tf = _transformers()
    config = tf.Gemma3TextConfig(
        vocab_size=512,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        query_pre_attn_scalar=32,
        max_position_embeddings=256,
        sliding_window=GEMMA_SLIDING_WINDOW,
        layer_types=["sliding_attention", "full_attention"],
        attn_implementation="sdpa",
    )
    config.use_cache = True
    torch.manual_seed(0)
    return _finish(tf.Gemma3ForCausalLM(config), dtype, device)


class Gemma3Step(nn.Module):
    """Gemma3ForCausalLM over an optional KV cache given as tensors.

    forward(input_ids [B, T], k0, v0, k1, v1, ...) -> (logits [B, T, vocab], k0', v0', ...).
    With no cache tensors it is a prefill; otherwise each k/v is [B, kv_heads, past,
    head_dim] and positions continue from `past`. Every layer keeps its full history
    (k'/v' have past + T positions), sliding-window layers included: the window is
    applied by the attention mask, so one tensor layout serves all layers and prefill
    outputs feed straight into decode. The wrapper exists to build that DynamicCache
    (no config, hence plain full-length layers) and to return tensors, not a ModelOutput.
    """

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.num_layers = model.config.num_hidden_layers

    def forward(self, input_ids, *past_kv):
        tf = _transformers()
        cache = tf.DynamicCache(_pairs(past_kv)) if past_kv else tf.DynamicCache()
        logits = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True).logits
        return (logits,) + _flat_kv(cache, self.num_layers)


def gemma3_prefill(dtype, device):
    model = _gemma3(dtype, device)
    ids = torch.randint(0, model.config.vocab_size, (1, GEMMA_PREFILL), device=device, dtype=torch.int64)
    return Gemma3Step(model).eval(), (ids,)


def gemma3_decode(dtype, device):
    model = _gemma3(dtype, device)
    c = model.config
    ids = torch.randint(0, c.vocab_size, (1, 1), device=device, dtype=torch.int64)
    past = tuple(
        torch.randn(1, c.num_key_value_heads, GEMMA_PREFILL, c.head_dim, device=device, dtype=dtype)
        for _ in range(2 * c.num_hidden_layers)
    )
    return Gemma3Step(model).eval(), (ids,) + past


# ---------------------------------------------------------------- ResNet


class ResNetLogits(nn.Module):
    """ResNetForImageClassification returning the logits tensor [B, num_labels]."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model(pixel_values=pixel_values).logits


def resnet(dtype, device):
    tf = _transformers()
    config = tf.ResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        num_labels=10,
    )
    torch.manual_seed(0)
    model = _finish(tf.ResNetForImageClassification(config), dtype, device)
    return ResNetLogits(model).eval(), (torch.randn(2, 3, 64, 64, device=device, dtype=dtype),)


HF_MODELS: dict[str, Callable[[torch.dtype, torch.device], tuple[nn.Module, tuple[torch.Tensor, ...]]]] = {
    "whisper_encoder": whisper_encoder,
    "whisper_decoder_step": whisper_decoder_step,
    "parakeet_ctc": parakeet_ctc,
    "gemma3_prefill": gemma3_prefill,
    "gemma3_decode": gemma3_decode,
    "resnet": resnet,
}
