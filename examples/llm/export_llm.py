"""Exports a small Llama-style decoder-only LLM as one Kiln program for the `kiln-llm` runner.

    python3 examples/llm/export_llm.py --out-dir out/ [--config tiny|small|100m|1.1b]
                                       [--device cpu|cuda] [--dtype float32|bfloat16]
                                       [--quantize int8|int4[,group=N][,embedding=int8]]

writes ``out/llm.kiln`` with two methods that share one weights blob:

  prefill(tokens int64[1, T], k_cache, v_cache) -> logits float32[1, vocab]   (2 <= T <= max_seq)
      runs the prompt (positions 0..T-1), writes its keys/values into the caches at
      positions 0..T-1 and returns the logits of the last position.
  decode(token int64[1, 1], pos int64[1], k_cache, v_cache) -> logits float32[1, vocab]
      runs one token at position `pos`, writes its key/value at `pos` and returns its
      logits.

The caches are ``dtype[n_layers, n_kv_heads, max_seq, head_dim]`` tensors that the caller
allocates once and passes to every call; both methods write into them in place (torch.export
records a user-input mutation, AOTInductor's compiled code stores straight into the input
buffer, and Kiln hands the caller's buffer to the library without a copy when it is already
where the method runs: a host tensor for a CPU program, a device tensor for a CUDA program).
So the cache never leaves the device and is never copied as a whole: a decode step writes
one position per layer and reads the cache once for attention. The alternative (caches
returned as outputs and fed back) would make the library allocate and write a full new
cache every step.

No package on the Python package index ships the weights of a small real LLM for offline
use (searched: tinystoriesmodel, tinymodel, pyminigpt, minigptai, picogpt ship code only),
so the model here has RANDOM weights (seeded): it shows the runtime mechanics (two methods,
a device-resident KV cache, sampling, speed) and is checked token for token and logit for
logit against eager PyTorch running the same prefill + decode loop. Its text is noise, so the
runner works on token ids, not text.

Architecture (Llama/Gemma family): token embedding, per layer RMSNorm -> attention with
rotary position embeddings (RoPE, rotate-half form) and grouped-query attention (n_kv_heads
key/value heads shared by n_heads query heads) -> residual, RMSNorm -> SwiGLU MLP ->
residual; final RMSNorm and an untied LM head. Norms, softmax and logits are computed in
float32 whatever the weights' dtype.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class LlmConfig:
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int
    max_seq: int
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    def cache_shape(self) -> tuple[int, int, int, int]:
        return (self.n_layers, self.n_kv_heads, self.max_seq, self.head_dim)

    def num_parameters(self) -> int:
        hd = self.head_dim
        attn = self.dim * (self.n_heads * hd) * 2 + self.dim * (self.n_kv_heads * hd) * 2
        mlp = 3 * self.dim * self.ffn_dim
        per_layer = attn + mlp + 2 * self.dim
        return self.n_layers * per_layer + 2 * self.vocab_size * self.dim + self.dim


#: tiny: the parity tests (CI); small: the CPU demo; 100m: GPU tokens/s (~125 M parameters);
#: 1.1b: TinyLlama-1.1B's shape (1.10 B parameters), decode at the GPU's memory limit.
CONFIGS = {
    "tiny": LlmConfig(vocab_size=512, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=176, max_seq=64),
    "small": LlmConfig(vocab_size=4096, dim=256, n_layers=4, n_heads=8, n_kv_heads=2, ffn_dim=688, max_seq=256),
    "100m": LlmConfig(vocab_size=32000, dim=768, n_layers=12, n_heads=12, n_kv_heads=4, ffn_dim=2048, max_seq=1024),
    "1.1b": LlmConfig(vocab_size=32000, dim=2048, n_layers=22, n_heads=32, n_kv_heads=4, ffn_dim=5632, max_seq=1024),
}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (xf * self.weight.float()).to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [heads, T, head_dim]; cos/sin: [T, head_dim] (float32)."""
    xf = x.float()
    return (xf * cos + rotate_half(xf) * sin).to(x.dtype)


def write_cache(cache: torch.Tensor, layer: int, positions: torch.Tensor, values: torch.Tensor) -> None:
    """cache[layer, :, positions] = values ([n_kv_heads, len(positions), head_dim]), in place.

    Written as one index_put_ on the whole cache tensor on purpose: Inductor's re-inplacing
    pass turns the functionalised index_put back into a store into the input buffer, so only
    len(positions) rows per layer are written. Slice assignment (cache[layer, :, :t] = v) or
    index_copy_ on a per-layer view compile to a functional copy of the whole cache plus a
    copy back into the input, i.e. the full cache rewritten on every call (checked in the
    generated code with torch 2.11)."""
    layer_index = torch.full((1,), layer, dtype=torch.int64, device=cache.device)
    # Indices [layer, :, positions]: the advanced indices are not adjacent, so the indexed
    # shape is [len(positions), n_kv_heads, head_dim].
    torch.ops.aten.index_put_(cache, [layer_index, None, positions], values.transpose(0, 1).to(cache.dtype))


class Block(nn.Module):
    def __init__(self, cfg: LlmConfig):
        super().__init__()
        hd = cfg.head_dim
        self.cfg = cfg
        self.attn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.n_heads * hd, cfg.dim, bias=False)
        self.mlp_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.w_gate = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.w_up = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.w_down = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)

    def qkv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """x: [T, dim] -> q [n_heads, T, hd], k and v [n_kv_heads, T, hd], RoPE applied to q, k."""
        cfg = self.cfg
        t = x.shape[0]
        h = self.attn_norm(x)
        q = self.wq(h).view(t, cfg.n_heads, cfg.head_dim).transpose(0, 1)
        k = self.wk(h).view(t, cfg.n_kv_heads, cfg.head_dim).transpose(0, 1)
        v = self.wv(h).view(t, cfg.n_kv_heads, cfg.head_dim).transpose(0, 1)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def attend(self, x: torch.Tensor, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
               mask: torch.Tensor) -> torch.Tensor:
        """Grouped-query attention: q [n_heads, T, hd] over keys/values [n_kv_heads, S, hd];
        mask [T, S] (0 or -inf) is added to the scores. Returns x + attention + MLP."""
        cfg = self.cfg
        t = q.shape[1]
        group = cfg.n_heads // cfg.n_kv_heads
        # Query heads of one group share a key/value head: [kv, group*T, hd] @ [kv, hd, S].
        # The matmuls run in the cache's dtype (no float32 copy of the cache per step), the
        # softmax in float32.
        qg = q.reshape(cfg.n_kv_heads, group * t, cfg.head_dim)
        scores = torch.matmul(qg, keys.transpose(1, 2)).float() * (1.0 / math.sqrt(cfg.head_dim))
        scores = scores.view(cfg.n_kv_heads, group, t, -1) + mask
        probs = torch.softmax(scores, dim=-1).view(cfg.n_kv_heads, group * t, -1).to(values.dtype)
        out = torch.matmul(probs, values)  # [kv, group*T, hd]
        out = out.view(cfg.n_heads, t, cfg.head_dim).transpose(0, 1).reshape(t, cfg.n_heads * cfg.head_dim)
        x = x + self.wo(out)
        h = self.mlp_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class LlamaLM(nn.Module):
    """Batch 1. The caches are [n_layers, n_kv_heads, max_seq, head_dim], owned by the caller."""

    def __init__(self, cfg: LlmConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim))
        angles = torch.outer(torch.arange(cfg.max_seq, dtype=torch.float64), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        # float32 whatever the model's dtype (build_model casts the parameters only).
        self.register_buffer("rope_cos", angles.cos().float(), persistent=False)
        self.register_buffer("rope_sin", angles.sin().float(), persistent=False)

    def logits(self, x_last: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.norm(x_last)).float().unsqueeze(0)

    def prefill(self, tokens: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        x = self.embed(tokens[0])  # [T, dim]
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        mask = torch.full((t, t), float("-inf"), device=tokens.device).triu(1)
        positions = torch.arange(t, device=tokens.device)
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(x, cos, sin)
            # In place into the caller's cache: positions 0..T-1 of layer i.
            write_cache(k_cache, i, positions, k)
            write_cache(v_cache, i, positions, v)
            x = layer.attend(x, q, k, v, mask)
        return self.logits(x[-1])

    def decode(self, token: torch.Tensor, pos: torch.Tensor, k_cache: torch.Tensor,
               v_cache: torch.Tensor) -> torch.Tensor:
        x = self.embed(token[0])  # [1, dim]
        cos, sin = self.rope_cos.index_select(0, pos), self.rope_sin.index_select(0, pos)
        # Attention over the whole (static-size) cache; positions after `pos` are masked out.
        # They may hold stale values from an earlier sequence: exp(-inf) = 0 removes them.
        steps = torch.arange(k_cache.shape[2], device=token.device)
        mask = torch.where(steps <= pos, 0.0, float("-inf")).view(1, -1)
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(x, cos, sin)
            # One position per layer written in place; the rest of the cache is untouched.
            write_cache(k_cache, i, pos, k)
            write_cache(v_cache, i, pos, v)
            x = layer.attend(x, q, k_cache[i], v_cache[i], mask)
        return self.logits(x[-1])

    def forward_full(self, tokens: torch.Tensor) -> torch.Tensor:
        """All positions' logits [T, vocab] without a cache (the plain causal forward): the
        reference that prefill + decode must agree with."""
        t = tokens.shape[1]
        x = self.embed(tokens[0])
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        mask = torch.full((t, t), float("-inf"), device=tokens.device).triu(1)
        for layer in self.layers:
            q, k, v = layer.qkv(x, cos, sin)
            x = layer.attend(x, q, k, v, mask)
        return self.lm_head(self.norm(x)).float()


class PrefillMethod(nn.Module):
    def __init__(self, model: LlamaLM):
        super().__init__()
        self.model = model

    def forward(self, tokens, k_cache, v_cache):
        return self.model.prefill(tokens, k_cache, v_cache)


class DecodeMethod(nn.Module):
    def __init__(self, model: LlamaLM):
        super().__init__()
        self.model = model

    def forward(self, token, pos, k_cache, v_cache):
        return self.model.decode(token, pos, k_cache, v_cache)


def build_model(config: str | LlmConfig = "tiny", seed: int = 0, device: str = "cpu",
                dtype: torch.dtype = torch.float32) -> LlamaLM:
    """The model with seeded random weights: linear layers ~ U(+-1/sqrt(fan_in)) (PyTorch's
    default), embeddings N(0, 1), norm gains 1 + N(0, 0.1) so that every parameter matters."""
    cfg = CONFIGS[config] if isinstance(config, str) else config
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = LlamaLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name == "embed.weight":
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)
    model = model.eval().to(device)
    # Parameters only: the RoPE tables stay float32 (rounding the angles to bfloat16 would
    # change every position's rotation).
    for p in model.parameters():
        p.data = p.data.to(dtype)
    return model


def new_caches(cfg: LlmConfig, device: str = "cpu", dtype: torch.dtype = torch.float32):
    return (torch.zeros(cfg.cache_shape(), device=device, dtype=dtype),
            torch.zeros(cfg.cache_shape(), device=device, dtype=dtype))


@torch.no_grad()
def reference_run(model: LlamaLM, prompt: list[int], steps: int,
                  forced: list[int] | None = None) -> tuple[list[int], list[torch.Tensor]]:
    """Eager PyTorch running kiln-llm's loop: prefill, then one decode call per generated token
    but the last. Returns `steps` tokens (token i is the argmax of logits[i]) and `steps` logits
    (float32, CPU): logits[0] from prefill, logits[i] from the decode of token i-1 at position
    len(prompt) + i - 1. With `forced`, token i is forced[i] instead of the argmax (teacher
    forcing), as with kiln-llm --force."""
    p = next(model.parameters())
    kc, vc = new_caches(model.cfg, p.device, p.dtype)
    ids = torch.tensor([prompt], dtype=torch.int64, device=p.device)
    logits = model.prefill(ids, kc, vc)
    all_logits, tokens = [logits[0].float().cpu()], []
    for i in range(steps):
        nxt = int(torch.argmax(logits[0])) if forced is None else forced[i]
        tokens.append(nxt)
        if i == steps - 1:
            break
        pos = len(prompt) + i
        logits = model.decode(torch.tensor([[nxt]], device=p.device),
                              torch.tensor([pos], device=p.device), kc, vc)
        all_logits.append(logits[0].float().cpu())
    return tokens, all_logits


def export_methods(model: LlamaLM) -> dict:
    """torch.export programs of the two methods: {"prefill": ..., "decode": ...}."""
    p = next(model.parameters())
    device = p.device
    kc, vc = new_caches(model.cfg, device, p.dtype)
    # DYNAMIC rather than a named Dim: the attention reshapes add stride guards such as
    # Min(T, T*T) == T that hold for every T >= 1 but that the strict solver cannot prove.
    # At least 2: AOTInductor specialises sizes 0 and 1 (the runner sends a 1-token prompt
    # through decode at position 0 instead).
    seq = torch.export.Dim.DYNAMIC(min=2, max=model.cfg.max_seq)
    with torch.no_grad():
        prefill = torch.export.export(
            PrefillMethod(model), (torch.zeros(1, 8, dtype=torch.int64, device=device), kc, vc),
            dynamic_shapes=({1: seq}, None, None), strict=False)
        decode = torch.export.export(
            DecodeMethod(model), (torch.zeros(1, 1, dtype=torch.int64, device=device),
                                  torch.tensor([8], device=device), kc, vc), strict=False)
    return {"prefill": prefill, "decode": decode}


def export_program(out_dir: Path, config: str = "tiny", device: str = "cpu", dtype: str = "float32",
                   seed: int = 0, compile_specs: dict | None = None, verbose: bool = True) -> Path:
    """Exports llm.kiln (methods prefill and decode) into `out_dir`; returns its path."""
    import kiln

    cfg = CONFIGS[config]
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("export_llm: --device cuda needs a CUDA build of torch and a visible GPU")
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    model = build_model(config, seed=seed, device=device, dtype=torch_dtype)
    methods = export_methods(model)
    if verbose:
        print(f"[export_llm] build + torch.export ({config}, {cfg.num_parameters() / 1e6:.1f} M parameters) ... "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    program = kiln.export(
        methods,
        backend=device,
        compile_specs=compile_specs,
        metadata={
            "model": f"random-weight Llama-style LM, config {config!r}, seed {seed}",
            "llm_config": json.dumps(asdict(cfg)),
            "dtype": dtype,
            "kv_cache": "inputs 'k_cache'/'v_cache' [n_layers, n_kv_heads, max_seq, head_dim], written in place",
        },
        verbose=verbose,
    )
    path = out_dir / "llm.kiln"
    program.save(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=".", help="where llm.kiln goes (default: .)")
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small", help="model size (default: small)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="backend to compile for")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32", help="weights and caches")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    parser.add_argument("--no-autotune", action="store_true", help="CUDA: compile without GEMM autotuning (faster)")
    parser.add_argument("--quantize", default=None, metavar="SPEC",
                        help="weight-only quantization, e.g. int8 or int4,group=64,embedding=int8 "
                             "(compile spec quantize: docs/quantization.md)")
    parser.add_argument("--quiet", action="store_true", help="no per-stage progress lines")
    args = parser.parse_args(argv)
    specs = {"max_autotune": False} if args.no_autotune else {}
    if args.quantize:
        specs["quantize"] = args.quantize
    path = export_program(Path(args.out_dir), config=args.config, device=args.device, dtype=args.dtype,
                          seed=args.seed, compile_specs=specs, verbose=not args.quiet)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
