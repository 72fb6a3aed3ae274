"""Tiny Mixture-of-Experts causal LMs of transformers (random weights), shared by the CPU
model test (test_moe_models.py) and the GPU one (tests/gpu/test_moe.py).

transformers' default experts implementation ("grouped_mm") exports as aten._grouped_mm
for bfloat16 and as transformers::grouped_mm_fallback otherwise; Kiln's pass
(passes/grouped_mm.py) rewrites both into kiln::grouped_mm."""

from __future__ import annotations

import torch

VOCAB = 96
COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=128)


def _configs():
    import transformers as tf

    return {
        "mixtral": (tf.MixtralConfig, tf.MixtralForCausalLM, dict(num_local_experts=8, num_experts_per_tok=2)),
        "qwen2_moe": (tf.Qwen2MoeConfig, tf.Qwen2MoeForCausalLM,
                      dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=48,
                           shared_expert_intermediate_size=64)),
        "qwen3_moe": (tf.Qwen3MoeConfig, tf.Qwen3MoeForCausalLM,
                      dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=48, head_dim=16)),
        "granitemoe": (tf.GraniteMoeConfig, tf.GraniteMoeForCausalLM, dict(num_local_experts=8, num_experts_per_tok=2)),
        "olmoe": (tf.OlmoeConfig, tf.OlmoeForCausalLM, dict(num_experts=8, num_experts_per_tok=2)),
    }


MODELS = ("mixtral", "qwen2_moe", "qwen3_moe", "granitemoe", "olmoe")


class Logits(torch.nn.Module):
    """The LM's logits for input_ids, without a cache."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def tiny_moe(name: str, dtype=torch.float32, seed: int = 0) -> Logits:
    config_cls, model_cls, extra = _configs()[name]
    torch.manual_seed(seed)
    config = config_cls(**COMMON, **extra)
    model = model_cls(config).eval()
    # Random init draws small weights; larger ones make the routing and the products
    # differ visibly between experts.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.1)
    return Logits(model.to(dtype)).eval()


def export_moe(model: Logits, device: str = "cpu", max_len: int = 64):
    """A dynamic sequence length of 2..max_len (export specialises a length of 1)."""
    seq = torch.export.Dim.DYNAMIC(min=2, max=max_len)
    ids = torch.randint(0, VOCAB, (1, 8), device=device)
    return torch.export.export(model, (ids,), dynamic_shapes=({1: seq},))


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float() - want.float()).norm() / want.float().norm().clamp_min(1e-12))
