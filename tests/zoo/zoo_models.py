"""Kiln's model zoo: tiny random-weight Hugging Face `transformers` architectures.

ZOO maps a name to a ZooModel: the family, its kind (decoder, moe, ssm, encoder,
encoder-decoder, vision, audio) and a factory (torch.dtype, torch.device) -> Built:

  module          the HF model in eval mode inside a wrapper whose forward takes and returns
                  plain tensors (logits, or the last hidden state where the family has no head)
  example         the inputs torch.export traces with
  dynamic_shapes  torch.export's dynamic_shapes for them (None: every dim static)
  fresh           () -> list of input tuples, drawn from another seed than `example` and, where
                  a dim is dynamic, of other batch / sequence sizes (at least two)

Each config is the smallest that keeps the family's op mix: 2 layers, hidden 32-64, a few
heads, a vocabulary of 128. Weights come from torch.manual_seed(0), so two calls of a factory
build the same model (an export worker and the test process compare the same weights).
Text inputs carry an attention mask with right padding (every row but the first is padded
where batch > 1, the only row where batch == 1); right padding leaves no query row with every
key masked, so padded positions are defined and compared too.

`transformers` is imported only inside the factories; importing this module needs torch only.
"""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
from typing import Any, Callable

import torch
import torch.nn as nn

VOCAB = 128
PAD, BOS, EOS = 0, 1, 2
MAX_POS = 64  # position tables; dynamic sequence dims stay below it
EXAMPLE_TEXT = (2, 8)  # batch, sequence of the export example
FRESH_TEXT = ((3, 13), (1, 5))  # sizes of the fresh inputs where both dims are dynamic
# Sequence dims are Dim.DYNAMIC rather than named ranges: torch.export then turns guards its
# symbolic reasoning cannot prove for a range (HF's attention emits min(16*s, 32*s) == 16*s)
# into run-time checks instead of refusing the export, and still fails if a dim specializes.
# Their range starts at 2. Batch dims are named with min=1, so that batch 1 runs too.
DYN = torch.export.Dim.DYNAMIC


def _batch():
    return torch.export.Dim("batch", min=1, max=16)


@dataclasses.dataclass
class Built:
    module: nn.Module
    example: tuple
    dynamic_shapes: Any
    fresh: Callable[[], list[tuple]]


@dataclasses.dataclass
class ZooModel:
    name: str
    family: str
    kind: str
    factory: Callable[[torch.dtype, torch.device], Built]
    #: Looser fp32 bound than the suite's, with the reason (None: the suite's default).
    tolerance: float | None = None
    tolerance_reason: str = ""


ZOO: dict[str, ZooModel] = {}
KINDS = ("decoder", "moe", "ssm", "encoder", "encoder-decoder", "vision", "audio")


def _tf():
    try:
        import transformers
    except ImportError as e:
        raise ImportError("the model zoo needs the 'transformers' package: python3 -m pip install transformers") from e
    return transformers


def register(name: str, family: str, kind: str, factory, tolerance=None, tolerance_reason=""):
    assert kind in KINDS, kind
    assert name not in ZOO, name
    ZOO[name] = ZooModel(name, family, kind, factory, tolerance, tolerance_reason)


# ---------------------------------------------------------------- wrappers and inputs


class Wrapper(nn.Module):
    """Calls the HF model with its positional tensors as the named arguments `names` and returns
    one field of its ModelOutput as a tensor, so the exported program's inputs and outputs are
    plain tensors."""

    def __init__(self, model: nn.Module, names: tuple[str, ...], field: str):
        super().__init__()
        self.model = model
        self.names = names
        self.field = field

    def forward(self, *tensors):
        out = self.model(**dict(zip(self.names, tensors)))
        return out[self.field] if isinstance(out, dict) else getattr(out, self.field)


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _ids_and_mask(g, batch: int, seq: int, device, vocab: int = VOCAB):
    """Token ids (no special ids) and a 0/1 mask with right padding; padded ids are PAD."""
    ids = torch.randint(3, vocab, (batch, seq), generator=g)
    lengths = torch.randint(max(1, seq // 2), seq, (batch,), generator=g)  # < seq: padded
    if batch > 1:
        lengths[0] = seq
    mask = (torch.arange(seq)[None, :] < lengths[:, None]).long()
    ids = torch.where(mask.bool(), ids, torch.full_like(ids, PAD))
    return ids.to(device), mask.to(device)


def _text_dims(n_inputs: int, batch=True, seq=True):
    b = _batch() if batch else None
    s = DYN if seq else None
    spec = {}
    if b is not None:
        spec[0] = b
    if s is not None:
        spec[1] = s
    return tuple(dict(spec) for _ in range(n_inputs)) if spec else None


def _finish(model, dtype, device):
    return model.to(device=device, dtype=dtype).eval()


def _reinit(model: nn.Module) -> None:
    """Redraws conv/linear weights with unit-variance outputs (std 1/sqrt(fan_in)) and gives
    batch norms non-trivial statistics: under HF's init (std 0.02) the deep narrow conv stacks
    here (MobileNetV2, EfficientNet, MobileViT, LeViT) output ~1e-27 or exact zeros, which would make
    any comparison pass."""
    g = _generator(7)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) / fan_in ** 0.5)
                if m.bias is not None:
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
            elif isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=g))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=g))
                if m.affine:
                    m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=g))
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))


def _dbrx_rope_theta(config) -> None:
    """transformers 5.24's DbrxAttention reads attn_config.rope_theta, which DbrxAttentionConfig
    no longer defines (it moved to rope_parameters): without it the model cannot be built."""
    config.attn_config.rope_theta = config.rope_parameters["rope_theta"]


def _make(config_cls: str, model_cls: str, cfg: dict, dtype, device, attn="sdpa", reinit=False, config_hook=None):
    tf = _tf()
    kwargs = dict(cfg)
    if attn == "sdpa" and not getattr(getattr(tf, model_cls), "_supports_sdpa", True):
        attn = "eager"  # older transformers releases lack SDPA for some architectures (GPT-J, CodeGen)
    if attn is not None:
        kwargs.setdefault("attn_implementation", attn)
    config = getattr(tf, config_cls)(**kwargs)
    if config_hook is not None:
        config_hook(config)
    torch.manual_seed(0)
    model = getattr(tf, model_cls)(config)
    if reinit:
        _reinit(model)
    return _finish(model, dtype, device)


def text(config_cls: str, model_cls: str, cfg: dict, field="logits", mask=True, batch_dyn=True,
         seq_dyn=True, seq=EXAMPLE_TEXT[1], attn="sdpa", config_hook=None):
    """Factory of a model that takes input_ids (and attention_mask) -> `field`."""

    def factory(dtype, device):
        model = _make(config_cls, model_cls, cfg, dtype, device, attn, config_hook=config_hook)
        names = ("input_ids", "attention_mask") if mask else ("input_ids",)

        def inputs(g, b, t):
            ids, m = _ids_and_mask(g, b, t, device)
            return (ids, m) if mask else (ids,)

        example = inputs(_generator(0), EXAMPLE_TEXT[0], seq)
        sizes = [(b if batch_dyn else EXAMPLE_TEXT[0], t if seq_dyn else seq) for b, t in FRESH_TEXT]
        if not batch_dyn and not seq_dyn:
            sizes = [(EXAMPLE_TEXT[0], seq)] * 2

        def fresh():
            g = _generator(1)
            return [inputs(g, b, t) for b, t in sizes]

        return Built(Wrapper(model, names, field).eval(), example, _text_dims(len(names), batch_dyn, seq_dyn), fresh)

    return factory


def seq2seq(config_cls: str, model_cls: str, cfg: dict, field="logits", attn="sdpa"):
    """Factory of an encoder-decoder: (input_ids, attention_mask, decoder_input_ids) -> logits;
    batch, source length and target length are dynamic."""

    def factory(dtype, device):
        model = _make(config_cls, model_cls, cfg, dtype, device, attn)
        names = ("input_ids", "attention_mask", "decoder_input_ids")

        def inputs(g, b, s, t):
            ids, m = _ids_and_mask(g, b, s, device)
            dec = torch.randint(3, VOCAB, (b, t), generator=g).to(device)
            return ids, m, dec

        b = _batch()
        s = DYN
        t = DYN
        dyn = ({0: b, 1: s}, {0: b, 1: s}, {0: b, 1: t})

        def fresh():
            g = _generator(1)
            return [inputs(g, 3, 13, 7), inputs(g, 1, 5, 4)]

        return Built(Wrapper(model, names, field).eval(), inputs(_generator(0), 2, 8, 6), dyn, fresh)

    return factory


def image(config_cls: str, model_cls: str, cfg: dict, size=32, channels=3, field="logits", attn="sdpa",
          reinit=False):
    """Factory of an image model: pixel_values [B, C, size, size] -> `field`; batch is dynamic."""

    def factory(dtype, device):
        model = _make(config_cls, model_cls, cfg, dtype, device, attn, reinit=reinit)

        def inputs(g, b):
            return (torch.randn(b, channels, size, size, generator=g).to(device=device, dtype=dtype),)

        def fresh():
            g = _generator(1)
            return [inputs(g, 3), inputs(g, 1)]

        dyn = ({0: _batch()},)
        return Built(Wrapper(model, ("pixel_values",), field).eval(), inputs(_generator(0), 2), dyn, fresh)

    return factory


def waveform(config_cls: str, model_cls: str, cfg: dict, samples=1600, mask=False, field="last_hidden_state",
             seq_dyn=True, attn="sdpa"):
    """Factory of a raw-audio model: input_values [B, samples] (and a 0/1 attention_mask with
    the tail of all rows but the first padded) -> `field`; batch and, where seq_dyn, the
    number of samples are dynamic."""

    def factory(dtype, device):
        model = _make(config_cls, model_cls, cfg, dtype, device, attn)
        names = ("input_values", "attention_mask") if mask else ("input_values",)

        def inputs(g, b, n):
            x = torch.randn(b, n, generator=g)
            if not mask:
                return (x.to(device=device, dtype=dtype),)
            lengths = torch.randint(n // 2, n, (b,), generator=g)
            if b > 1:
                lengths[0] = n
            m = (torch.arange(n)[None, :] < lengths[:, None]).long()
            x = x * m  # padded samples are zeros, as a feature extractor pads
            return x.to(device=device, dtype=dtype), m.to(device)

        bd = _batch()
        spec = {0: bd}
        if seq_dyn:
            spec[1] = DYN
        dyn = tuple(dict(spec) for _ in names)

        def fresh():
            g = _generator(1)
            n1, n2 = (2400, 1200) if seq_dyn else (samples, samples)
            return [inputs(g, 3, n1), inputs(g, 1, n2)]

        return Built(Wrapper(model, names, field).eval(), inputs(_generator(0), 2, samples), dyn, fresh)

    return factory


def features(config_cls: str, model_cls: str, cfg: dict, shape_of: Callable[[int], tuple], name="input_features",
             field="last_hidden_state", batch_dyn=True, attn="sdpa", submodule: str | None = None):
    """Factory of a model taking one float feature tensor of shape shape_of(batch) -> `field`;
    batch is dynamic where batch_dyn. `submodule`: a method of the model returning the part
    to run (get_encoder)."""

    def factory(dtype, device):
        model = _make(config_cls, model_cls, cfg, dtype, device, attn)
        if submodule:
            model = getattr(model, submodule)()

        def inputs(g, b):
            return (torch.randn(*shape_of(b), generator=g).to(device=device, dtype=dtype),)

        def fresh():
            g = _generator(1)
            return [inputs(g, 3), inputs(g, 1)] if batch_dyn else [inputs(g, 2), inputs(g, 2)]

        dyn = ({0: _batch()},) if batch_dyn else None
        return Built(Wrapper(model, (name,), field).eval(), inputs(_generator(0), 2), dyn, fresh)

    return factory


# ---------------------------------------------------------------- configs

# The common small decoder: GQA (4 query heads over 2 key/value heads), head_dim 16.
LLAMA_LIKE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=MAX_POS,
                  pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, use_cache=False)
SPECIAL = dict(pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)


def _ll(**kw):
    return {**LLAMA_LIKE, **kw}


# Text decoders (CausalLM logits).
register("llama", "Llama", "decoder", text("LlamaConfig", "LlamaForCausalLM", _ll()))
register("mistral", "Mistral", "decoder", text("MistralConfig", "MistralForCausalLM", _ll(sliding_window=None)))
register("qwen2", "Qwen2", "decoder", text("Qwen2Config", "Qwen2ForCausalLM", _ll()))
register("qwen3", "Qwen3", "decoder", text("Qwen3Config", "Qwen3ForCausalLM", _ll(head_dim=16)))
register("gemma", "Gemma", "decoder", text("GemmaConfig", "GemmaForCausalLM", _ll(head_dim=16)))
register("gemma2", "Gemma2", "decoder", text("Gemma2Config", "Gemma2ForCausalLM",
                                             _ll(head_dim=16, query_pre_attn_scalar=16, sliding_window=4),
                                             attn="eager"))
register("gemma3", "Gemma3", "decoder", text("Gemma3TextConfig", "Gemma3ForCausalLM",
                                             _ll(head_dim=16, query_pre_attn_scalar=16, sliding_window=4,
                                                 layer_types=["sliding_attention", "full_attention"])))
register("phi", "Phi", "decoder", text("PhiConfig", "PhiForCausalLM", _ll(partial_rotary_factor=0.5)))
register("phi3", "Phi3", "decoder", text("Phi3Config", "Phi3ForCausalLM", _ll()))
register("stablelm", "StableLM", "decoder", text("StableLmConfig", "StableLmForCausalLM", _ll()))
register("starcoder2", "Starcoder2", "decoder", text("Starcoder2Config", "Starcoder2ForCausalLM",
                                                     _ll(sliding_window=None)))
register("olmo", "OLMo", "decoder", text("OlmoConfig", "OlmoForCausalLM", _ll()))
register("olmo2", "OLMo2", "decoder", text("Olmo2Config", "Olmo2ForCausalLM", _ll()))
register("cohere", "Cohere", "decoder", text("CohereConfig", "CohereForCausalLM", _ll()))
register("granite", "Granite", "decoder", text("GraniteConfig", "GraniteForCausalLM", _ll()))
register("helium", "Helium", "decoder", text("HeliumConfig", "HeliumForCausalLM", _ll(head_dim=16)))
register("glm", "GLM", "decoder", text("GlmConfig", "GlmForCausalLM", _ll(head_dim=16)))
register("smollm3", "SmolLM3", "decoder", text("SmolLM3Config", "SmolLM3ForCausalLM", _ll()))
register("nemotron", "Nemotron", "decoder", text("NemotronConfig", "NemotronForCausalLM", _ll(head_dim=16)))
register("gpt2", "GPT-2", "decoder", text("GPT2Config", "GPT2LMHeadModel", dict(
    vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=MAX_POS, use_cache=False, **SPECIAL)))
register("gptj", "GPT-J", "decoder", text("GPTJConfig", "GPTJForCausalLM", dict(
    vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=MAX_POS, use_cache=False,
    **SPECIAL)))
register("gpt_neox", "GPT-NeoX", "decoder", text("GPTNeoXConfig", "GPTNeoXForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    rotary_pct=0.25, max_position_embeddings=MAX_POS, use_cache=False, **SPECIAL)))
register("gpt_neo", "GPT-Neo", "decoder", text("GPTNeoConfig", "GPTNeoForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, num_layers=2, num_heads=4, attention_types=[[["global", "local"], 1]],
    window_size=4, max_position_embeddings=MAX_POS, use_cache=False, **SPECIAL), attn="eager"))
register("gpt_bigcode", "GPTBigCode", "decoder", text("GPTBigCodeConfig", "GPTBigCodeForCausalLM", dict(
    vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=MAX_POS, multi_query=True, use_cache=False,
    **SPECIAL)))
register("codegen", "CodeGen", "decoder", text("CodeGenConfig", "CodeGenForCausalLM", dict(
    vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=MAX_POS, n_ctx=MAX_POS,
    use_cache=False, **SPECIAL)))
register("opt", "OPT", "decoder", text("OPTConfig", "OPTForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, ffn_dim=128, num_hidden_layers=2, num_attention_heads=4,
    word_embed_proj_dim=64, max_position_embeddings=MAX_POS, use_cache=False, **SPECIAL)))
register("bloom", "BLOOM", "decoder", text("BloomConfig", "BloomForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4, use_cache=False, **SPECIAL), attn="eager"))
register("falcon", "Falcon", "decoder", text("FalconConfig", "FalconForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=MAX_POS,
    use_cache=False, **SPECIAL)))
register("mpt", "MPT", "decoder", text("MptConfig", "MptForCausalLM", dict(
    vocab_size=VOCAB, d_model=64, n_heads=4, n_layers=2, expansion_ratio=2, max_seq_len=MAX_POS, use_cache=False,
    **SPECIAL), attn="eager"))
register("xglm", "XGLM", "decoder", text("XGLMConfig", "XGLMForCausalLM", dict(
    vocab_size=VOCAB, d_model=64, num_layers=2, attention_heads=4, ffn_dim=128, max_position_embeddings=MAX_POS,
    use_cache=False, **SPECIAL), attn="eager"))
register("biogpt", "BioGPT", "decoder", text("BioGptConfig", "BioGptForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    max_position_embeddings=MAX_POS, use_cache=False, **SPECIAL)))

# Mixture-of-experts decoders: 4 experts, top-2. transformers' default experts implementation
# (grouped_mm) runs on the CPU through its Python custom op transformers::grouped_mm_fallback,
# which no AOTInductor library can call without Python (only libtorch's proxy executor would
# try); batched_mm computes the same with ATen's bmm, so the program is plain ATen.
MOE = dict(num_experts_per_tok=2, experts_implementation="batched_mm")
register("mixtral", "Mixtral", "moe", text("MixtralConfig", "MixtralForCausalLM",
                                          _ll(num_local_experts=4, sliding_window=None, **MOE)))
register("qwen2_moe", "Qwen2-MoE", "moe", text("Qwen2MoeConfig", "Qwen2MoeForCausalLM", _ll(
    num_experts=4, moe_intermediate_size=32, shared_expert_intermediate_size=64, decoder_sparse_step=1, **MOE)))
register("qwen3_moe", "Qwen3-MoE", "moe", text("Qwen3MoeConfig", "Qwen3MoeForCausalLM", _ll(
    head_dim=16, num_experts=4, moe_intermediate_size=32, decoder_sparse_step=1, **MOE)))
register("granitemoe", "GraniteMoE", "moe", text("GraniteMoeConfig", "GraniteMoeForCausalLM",
                                                 _ll(num_local_experts=4, **MOE)))
register("olmoe", "OLMoE", "moe", text("OlmoeConfig", "OlmoeForCausalLM", _ll(num_experts=4, **MOE)))
register("phimoe", "PhiMoE", "moe", text("PhimoeConfig", "PhimoeForCausalLM",
                                         _ll(num_local_experts=4, sliding_window=None, **MOE)))
register("jetmoe", "JetMoE", "moe", text("JetMoeConfig", "JetMoeForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_key_value_heads=2,
    kv_channels=16, num_local_experts=4, max_position_embeddings=MAX_POS, use_cache=False, **MOE, **SPECIAL),
    attn="eager"))
register("dbrx", "DBRX", "moe", text("DbrxConfig", "DbrxForCausalLM", dict(
    vocab_size=VOCAB, d_model=64, n_heads=4, n_layers=2, max_seq_len=MAX_POS, use_cache=False,
    attn_config={"kv_n_heads": 2, "clip_qkv": 8.0}, ffn_config={"moe_num_experts": 4, "moe_top_k": 2, "ffn_hidden_size": 64},
    **SPECIAL), config_hook=_dbrx_rope_theta))

# State-space and hybrid models. Their scans run a Python loop over the sequence or its
# chunks, so the sequence length is static; batch is dynamic.
register("mamba", "Mamba", "ssm", text("MambaConfig", "MambaForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
    use_cache=False, **SPECIAL), mask=False, seq_dyn=False, attn=None))
register("falcon_mamba", "FalconMamba", "ssm", text("FalconMambaConfig", "FalconMambaForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
    use_cache=False, **SPECIAL), mask=False, seq_dyn=False, attn=None))
register("mamba2", "Mamba2", "ssm", text("Mamba2Config", "Mamba2ForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, num_heads=8, head_dim=16, state_size=16, n_groups=1, expand=2,
    chunk_size=8, num_hidden_layers=2, use_cache=False, **SPECIAL), mask=False, seq_dyn=False, attn=None))
register("jamba", "Jamba", "ssm", text("JambaConfig", "JambaForCausalLM", _ll(
    attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1, num_experts=2,
    mamba_d_state=8, mamba_dt_rank=8, mamba_expand=2, mamba_d_conv=4, use_mamba_kernels=False,
    num_experts_per_tok=1, experts_implementation="batched_mm"), seq_dyn=False))
register("bamba", "Bamba", "ssm", text("BambaConfig", "BambaForCausalLM", _ll(
    attn_layer_indices=[1], mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16, mamba_n_groups=1,
    mamba_expand=2, mamba_d_conv=4, mamba_chunk_size=8), seq_dyn=False))
register("recurrent_gemma", "RecurrentGemma", "ssm", text("RecurrentGemmaConfig", "RecurrentGemmaForCausalLM", dict(
    vocab_size=VOCAB, hidden_size=64, intermediate_size=128, lru_width=64, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, attention_window_size=4,
    block_types=["recurrent", "attention"], use_cache=False, **SPECIAL), mask=False, seq_dyn=False, attn=None))

# Encoders (last hidden state of the base model).
BERT_LIKE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, max_position_embeddings=MAX_POS + 2, pad_token_id=PAD)
H = "last_hidden_state"
register("bert", "BERT", "encoder", text("BertConfig", "BertModel", BERT_LIKE, field=H))
register("roberta", "RoBERTa", "encoder", text("RobertaConfig", "RobertaModel", BERT_LIKE, field=H))
register("xlm_roberta", "XLM-R", "encoder", text("XLMRobertaConfig", "XLMRobertaModel", BERT_LIKE, field=H))
register("camembert", "CamemBERT", "encoder", text("CamembertConfig", "CamembertModel", BERT_LIKE, field=H))
register("electra", "ELECTRA", "encoder", text("ElectraConfig", "ElectraModel", {**BERT_LIKE, "embedding_size": 32},
                                               field=H))
register("albert", "ALBERT", "encoder", text("AlbertConfig", "AlbertModel", {**BERT_LIKE, "embedding_size": 32},
                                             field=H, attn="eager"))
register("distilbert", "DistilBERT", "encoder", text("DistilBertConfig", "DistilBertModel", dict(
    vocab_size=VOCAB, dim=64, hidden_dim=128, n_layers=2, n_heads=4, max_position_embeddings=MAX_POS,
    pad_token_id=PAD), field=H))
register("deberta_v2", "DeBERTa-v2", "encoder", text("DebertaV2Config", "DebertaV2Model", {
    **BERT_LIKE, "relative_attention": True, "position_buckets": 16, "pos_att_type": ["p2c", "c2p"],
    "max_relative_positions": MAX_POS, "position_biased_input": False}, field=H, attn="eager"))
register("deberta", "DeBERTa", "encoder", text("DebertaConfig", "DebertaModel", {
    **BERT_LIKE, "relative_attention": True, "pos_att_type": ["p2c", "c2p"], "max_relative_positions": MAX_POS},
    field=H, attn="eager"))
register("mpnet", "MPNet", "encoder", text("MPNetConfig", "MPNetModel", BERT_LIKE, field=H, attn="eager"))
register("modernbert", "ModernBERT", "encoder", text("ModernBertConfig", "ModernBertModel", dict(
    vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    max_position_embeddings=MAX_POS, global_attn_every_n_layers=2, local_attention=8, **SPECIAL), field=H))
register("convbert", "ConvBERT", "encoder", text("ConvBertConfig", "ConvBertModel", {
    **BERT_LIKE, "embedding_size": 64, "conv_kernel_size": 3}, field=H, attn="eager"))
register("mobilebert", "MobileBERT", "encoder", text("MobileBertConfig", "MobileBertModel", {
    **BERT_LIKE, "embedding_size": 32, "intra_bottleneck_size": 32, "true_hidden_size": 32,
    "num_feedforward_networks": 2}, field=H, attn="eager"))
register("squeezebert", "SqueezeBERT", "encoder", text("SqueezeBertConfig", "SqueezeBertModel", {
    **BERT_LIKE, "embedding_size": 64, "q_groups": 2, "k_groups": 2, "v_groups": 2, "post_attention_groups": 2,
    "intermediate_groups": 2, "output_groups": 2}, field=H, attn="eager"))
register("rembert", "RemBERT", "encoder", text("RemBertConfig", "RemBertModel", {
    **BERT_LIKE, "input_embedding_size": 32, "output_embedding_size": 32}, field=H, attn="eager"))

# Encoder-decoders (LM logits).
BART_LIKE = dict(vocab_size=VOCAB, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=MAX_POS,
                 decoder_start_token_id=EOS, use_cache=False, **SPECIAL)
T5_LIKE = dict(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=1, num_decoder_layers=1, num_heads=4,
               relative_attention_num_buckets=8, relative_attention_max_distance=16, decoder_start_token_id=PAD,
               use_cache=False, pad_token_id=PAD, eos_token_id=EOS)
register("t5", "T5", "encoder-decoder", seq2seq("T5Config", "T5ForConditionalGeneration", T5_LIKE))
register("mt5", "mT5", "encoder-decoder", seq2seq("MT5Config", "MT5ForConditionalGeneration",
                                                  {**T5_LIKE, "feed_forward_proj": "gated-gelu"}))
register("bart", "BART", "encoder-decoder", seq2seq("BartConfig", "BartForConditionalGeneration", BART_LIKE))
register("mbart", "mBART", "encoder-decoder", seq2seq("MBartConfig", "MBartForConditionalGeneration", BART_LIKE))
register("pegasus", "Pegasus", "encoder-decoder", seq2seq("PegasusConfig", "PegasusForConditionalGeneration",
                                                          BART_LIKE))
register("marian", "Marian", "encoder-decoder", seq2seq("MarianConfig", "MarianMTModel",
                                                        {**BART_LIKE, "decoder_vocab_size": VOCAB}))
register("m2m100", "M2M100", "encoder-decoder", seq2seq("M2M100Config", "M2M100ForConditionalGeneration", BART_LIKE))
register("blenderbot", "Blenderbot", "encoder-decoder", seq2seq("BlenderbotConfig",
                                                                "BlenderbotForConditionalGeneration", BART_LIKE))
register("plbart", "PLBart", "encoder-decoder", seq2seq("PLBartConfig", "PLBartForConditionalGeneration", BART_LIKE))


def _whisper_cfg():
    return dict(vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=1, decoder_layers=1,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                max_source_positions=32, max_target_positions=MAX_POS, decoder_start_token_id=3,
                begin_suppress_tokens=None, suppress_tokens=None, use_cache=False, **SPECIAL)


def whisper_seq2seq(dtype, device):
    """Whisper: (input_features [B, 16, 64], decoder_input_ids [B, T]) -> logits; the encoder's
    length is fixed by its position table (64 mel frames -> 32 positions), so batch and T are
    dynamic."""
    model = _make("WhisperConfig", "WhisperForConditionalGeneration", _whisper_cfg(), dtype, device)

    def inputs(g, b, t):
        feats = torch.randn(b, 16, 64, generator=g).to(device=device, dtype=dtype)
        return feats, torch.randint(3, VOCAB, (b, t), generator=g).to(device)

    bd = _batch()
    td = DYN

    def fresh():
        g = _generator(1)
        return [inputs(g, 3, 7), inputs(g, 1, 4)]

    return Built(Wrapper(model, ("input_features", "decoder_input_ids"), "logits").eval(), inputs(_generator(0), 2, 6),
                 ({0: bd}, {0: bd, 1: td}), fresh)


register("whisper", "Whisper", "encoder-decoder", whisper_seq2seq)

# Vision (classification logits unless the family is a backbone).
VIT_LIKE = dict(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                num_attention_heads=4, intermediate_size=128, num_labels=10)
register("vit", "ViT", "vision", image("ViTConfig", "ViTForImageClassification", VIT_LIKE))
register("deit", "DeiT", "vision", image("DeiTConfig", "DeiTForImageClassification", VIT_LIKE))
register("beit", "BEiT", "vision", image("BeitConfig", "BeitForImageClassification", {
    **VIT_LIKE, "use_relative_position_bias": True}, attn="eager"))
register("data2vec_vision", "Data2VecVision", "vision", image("Data2VecVisionConfig",
                                                              "Data2VecVisionForImageClassification", {
    **VIT_LIKE, "use_relative_position_bias": True}, attn="eager"))
register("dinov2", "DINOv2", "vision", image("Dinov2Config", "Dinov2ForImageClassification", {
    **VIT_LIKE, "patch_size": 8}))
register("clip_vision", "CLIP vision", "vision", image("CLIPVisionConfig", "CLIPVisionModel", dict(
    image_size=32, patch_size=8, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4), field="pooler_output"))
register("siglip_vision", "SigLIP vision", "vision", image("SiglipVisionConfig", "SiglipVisionModel", dict(
    image_size=32, patch_size=8, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4), field="pooler_output"))
register("swin", "Swin", "vision", image("SwinConfig", "SwinForImageClassification", dict(
    image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4, num_labels=10),
    attn=None))
register("swinv2", "Swinv2", "vision", image("Swinv2Config", "Swinv2ForImageClassification", dict(
    image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4, num_labels=10),
    attn=None))
register("convnext", "ConvNeXt", "vision", image("ConvNextConfig", "ConvNextForImageClassification", dict(
    num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], num_labels=10), attn=None))
register("convnextv2", "ConvNeXtV2", "vision", image("ConvNextV2Config", "ConvNextV2ForImageClassification", dict(
    num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], num_labels=10), attn=None))
register("resnet", "ResNet", "vision", image("ResNetConfig", "ResNetForImageClassification", dict(
    embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="bottleneck", num_labels=10), attn=None))
register("regnet", "RegNet", "vision", image("RegNetConfig", "RegNetForImageClassification", dict(
    embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], groups_width=8, num_labels=10), attn=None))
register("bit", "BiT", "vision", image("BitConfig", "BitForImageClassification", dict(
    embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], num_groups=4, num_labels=10), attn=None))
register("mobilenet_v2", "MobileNetV2", "vision", image("MobileNetV2Config", "MobileNetV2ForImageClassification", dict(
    image_size=32, depth_multiplier=0.25, num_labels=10), attn=None, reinit=True))
register("efficientnet", "EfficientNet", "vision", image("EfficientNetConfig", "EfficientNetForImageClassification",
                                                         dict(image_size=32, width_coefficient=0.25,
                                                              depth_coefficient=0.25, hidden_dim=320, num_labels=10),
                                                         attn=None, reinit=True))
register("mobilevit", "MobileViT", "vision", image("MobileViTConfig", "MobileViTForImageClassification", dict(
    image_size=32, hidden_sizes=[32, 48, 64], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], num_labels=10),
    attn=None, reinit=True))
register("poolformer", "PoolFormer", "vision", image("PoolFormerConfig", "PoolFormerForImageClassification", dict(
    hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1], num_labels=10), attn=None))
register("segformer", "SegFormer", "vision", image("SegformerConfig", "SegformerForImageClassification", dict(
    num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], num_attention_heads=[1, 2],
    patch_sizes=[7, 3], strides=[4, 2], num_labels=10), attn=None))
register("levit", "LeViT", "vision", image("LevitConfig", "LevitForImageClassification", dict(
    image_size=64, hidden_sizes=[32, 48, 64], num_attention_heads=[2, 3, 4], depth=[1, 1, 1], key_dim=[8, 8, 8],
    drop_path_rate=0, mlp_ratio=[2, 2, 2], attention_ratio=[2, 2, 2],
    down_ops=[["Subsample", 8, 4, 4, 2, 2], ["Subsample", 8, 6, 4, 2, 2]], num_labels=10), size=64, attn=None,
    reinit=True))

# Audio. wav2vec2-style encoders take raw samples through a 2-layer conv feature extractor
# (kernel 10 stride 5, then kernel 3 stride 2: 1600 samples -> 159 frames). The "layer"
# feature-extractor norm is the variant that reads an attention mask.
W2V = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
           conv_dim=(32, 32), conv_kernel=(10, 3), conv_stride=(5, 2), num_conv_pos_embeddings=16,
           num_conv_pos_embedding_groups=4, vocab_size=VOCAB, feat_extract_norm="layer", do_stable_layer_norm=True)
register("wav2vec2", "wav2vec2", "audio", waveform("Wav2Vec2Config", "Wav2Vec2Model", W2V, mask=True))
register("hubert", "HuBERT", "audio", waveform("HubertConfig", "HubertModel", W2V, mask=True))
register("wavlm", "WavLM", "audio", waveform("WavLMConfig", "WavLMModel", {**W2V, "num_buckets": 32,
                                                                          "max_bucket_distance": 64},
                                             mask=True, attn="eager"))
register("data2vec_audio", "Data2VecAudio", "audio", waveform("Data2VecAudioConfig", "Data2VecAudioModel", {
    **{k: v for k, v in W2V.items() if k not in ("feat_extract_norm", "do_stable_layer_norm")},
    "num_conv_pos_embeddings": 4, "num_conv_pos_embedding_groups": 4}, mask=True))
register("unispeech", "UniSpeech", "audio", waveform("UniSpeechConfig", "UniSpeechModel", W2V, mask=True))
register("sew", "SEW", "audio", waveform("SEWConfig", "SEWModel", {
    **{k: v for k, v in W2V.items() if k not in ("feat_extract_norm", "do_stable_layer_norm")},
    "squeeze_factor": 2}, attn="eager"))
register("whisper_encoder", "Whisper encoder", "audio", features(
    "WhisperConfig", "WhisperForConditionalGeneration", _whisper_cfg(), lambda b: (b, 16, 64),
    submodule="get_encoder"))
register("ast", "AST", "audio", features("ASTConfig", "ASTForAudioClassification", dict(
    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, patch_size=8,
    frequency_stride=8, time_stride=8, max_length=32, num_mel_bins=16, num_labels=10),
    lambda b: (b, 32, 16), name="input_values", field="logits"))
register("speech2text", "Speech2Text", "audio", features(
    "Speech2TextConfig", "Speech2TextForConditionalGeneration", dict(
        vocab_size=VOCAB, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_source_positions=64,
        max_target_positions=MAX_POS, num_conv_layers=2, conv_channels=32, input_feat_per_channel=16,
        input_channels=1, use_cache=False, **SPECIAL), lambda b: (b, 48, 16), submodule="get_encoder",
    attn="eager"))


# ---------------------------------------------------------------- export (run in worker processes)


def first_line(e: BaseException) -> str:
    """The exception's type and first line; for a C++ compile error, whose first line says
    only that, the compiler's first `error:` line too."""
    lines = str(e).strip().splitlines()
    line = lines[0] if lines else ""
    if "C++ compile error" in line:
        detail = next((x.strip() for x in lines if "error:" in x), "")
        line = f"{line}: {detail}" if detail else line
    return compact(f"{type(e).__name__}: {line}")[:400]


def compact(text: str) -> str:
    """`text` with Inductor's generated file paths (/tmp/torchinductor_<user>/<hash>/<hash>.kernel.cpp:275:83)
    shortened to the kind of file (generated kernel.cpp), which is what a reader can use."""
    import re

    return re.sub(r"\S*/\w+\.(kernel|wrapper)\.cpp(:\d+)*:?", r"generated \1.cpp:", text)


def _custom_ops(ep) -> list[str]:
    """The graph's ops outside aten/prims: custom ops, which only the proxy executor runs."""
    names = set()
    for node in ep.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            if node.target.namespace not in ("aten", "prims"):
                names.add(str(node.target))
    return sorted(names)


def torch_export(built: Built, sdpa_math: bool = False):
    """torch.export of a Built model. Wrapper.forward takes its tensors as *args, one
    argument to torch.export, so the per-tensor dynamic shapes go in a 1-tuple. sdpa_math:
    traced with SDPA's math backend, for a CUDA library whose attention is decomposed
    (CudaBackend's default compile spec sdpa=decompose)."""
    import contextlib

    dyn = None if built.dynamic_shapes is None else (tuple(built.dynamic_shapes),)
    attention = contextlib.nullcontext()
    if sdpa_math:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        attention = sdpa_kernel([SDPBackend.MATH])
    with torch.no_grad(), attention:
        return torch.export.export(built.module, built.example, dynamic_shapes=dyn)


def export_model(name: str, path: str, backend: str = "cpu", compile_specs: dict | None = None,
                 dtype: str = "float32") -> dict:
    """Exports ZOO[name] to `path` and classifies the outcome:

      ok                  the program was saved
      export_failed       torch.export failed (PyTorch's own AOTI path stops there too)
      inductor_failed     kiln.export failed and so does torch._inductor.aoti_compile_and_package
                          on the same program: an Inductor failure, not Kiln's
      missing_ops         Kiln's exporter refused the library: fallback ops Kiln lacks (`missing`)
      kiln_export_failed  kiln.export failed where stock AOTInductor compiles
      out_of_memory       either compile ran out of GPU memory: the machine's limit (other exports
                          autotuning at the same time), which says nothing about the model

    Returns {status, detail, missing, export_s}."""
    import kiln
    from kiln.exporter import UnsupportedKernelsError

    t0 = time.monotonic()
    result = {"status": "ok", "detail": "", "missing": [], "export_s": None}
    torch_dtype = getattr(torch, dtype)
    device = torch.device("cuda" if backend == "cuda" else "cpu")
    try:
        ep = torch_export(ZOO[name].factory(torch_dtype, device), sdpa_math=backend == "cuda")
    except Exception as e:  # noqa: BLE001 - classified, reported by the test
        result.update(status="export_failed", detail=first_line(e))
        return result
    try:
        program = kiln.export(ep, backend, compile_specs=compile_specs, verbose=False)
        program.save(path)
    except UnsupportedKernelsError as e:
        prefix = f"aoti_torch_{backend}_"
        ops = [n[len(prefix):] if n.startswith(prefix) else n for n in e.missing]
        custom = _custom_ops(ep) if any("proxy_executor" in n for n in ops) else []
        detail = "missing fallback ops: " + ", ".join(ops)
        if custom:  # say which op the proxy executor would have run
            detail += f" (custom ops: {', '.join(custom)})"
        result.update(status="missing_ops", missing=ops, detail=detail)
    except Exception as e:  # noqa: BLE001
        kiln_error = first_line(e)
        stock = None if _out_of_memory(kiln_error) else _stock_aoti_error(ep, os.path.dirname(path))
        if _out_of_memory(kiln_error) or _out_of_memory(stock):
            result.update(status="out_of_memory", detail=kiln_error if _out_of_memory(kiln_error) else stock)
        elif stock is not None:
            result.update(status="inductor_failed", detail=stock)
        else:
            result.update(status="kiln_export_failed",
                          detail=f"{kiln_error} (stock AOTInductor compiles it)\n{traceback.format_exc()[-1500:]}")
    result["export_s"] = round(time.monotonic() - t0, 1)
    return result


def _out_of_memory(error: str | None) -> bool:
    return error is not None and "out of memory" in error.lower()


def _stock_aoti_error(ep, scratch: str) -> str | None:
    """first_line of the error of PyTorch's own AOTInductor packaging of `ep`, or None if it succeeds."""
    import tempfile

    with tempfile.TemporaryDirectory(dir=scratch or None) as d:
        try:
            torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(d, "stock.pt2"))
        except Exception as e:  # noqa: BLE001
            return first_line(e)
    return None
