"""Decode steps that write their caches in place, run with aoti.cuda_graphs (the inputs a
method writes are bound by address, graph_replay.h), against eager PyTorch step by step:
examples/llm's decode (tiny config) and examples/asr's Whisper decoder step (random weights at
whisper-tiny's size). Two conversations alternate, each with its own caches (each buffer gets
its own graph); halfway, one conversation's caches move to new buffers (a new address records
anew). After every step the logits and both caches of the conversation that ran must equal
eager's, and the other conversation's caches must be untouched. fp32, so the comparison is
tight. KILN_GPU_DEVICE=cpu runs the same steps without graphs (CPU methods have none)."""

from __future__ import annotations

import sys

import pytest
import torch

import gpu_support

sys.path.insert(0, str(gpu_support.REPO / "examples" / "llm"))
sys.path.insert(0, str(gpu_support.REPO / "examples" / "asr"))
import export_asr  # noqa: E402
import export_llm  # noqa: E402

DEVICE = gpu_support.DEVICE
TOLERANCE = 1e-4 if DEVICE == "cuda" else 1e-5
STEPS = 10


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm() / max(float(b.norm()), 1e-30))


def load(program):
    from kiln.runtime import Module

    m = Module(str(program))
    opts = {"keep_outputs_on_device": True}
    if DEVICE == "cuda":
        opts.update(cuda_graphs=True, stream="caller")
    m.load({"aoti": opts})
    return m


def run_conversations(step_eager, step_kiln, new_caches, new_step_inputs):
    """Two conversations, A and B, alternating; A's caches move to new buffers halfway."""
    eager = {c: new_caches() for c in "AB"}
    kiln = {c: [t.clone() for t in eager[c]] for c in "AB"}
    positions = {"A": 0, "B": 0}
    for i in range(2 * STEPS):
        c, other = ("A", "B") if i % 2 == 0 else ("B", "A")
        if c == "A" and positions["A"] == STEPS // 2:
            kiln["A"] = [t.clone() for t in kiln["A"]]  # new buffers, same contents
        inputs = new_step_inputs(positions[c])
        other_before = [t.clone() for t in kiln[other]]
        with torch.no_grad():
            want = step_eager(inputs, eager[c])
        got = step_kiln(inputs, kiln[c])
        gpu_support.sync()
        errors = {"logits": rel(got, want)}
        errors.update({f"cache {j}": rel(k, e) for j, (k, e) in enumerate(zip(kiln[c], eager[c]))})
        assert all(e <= TOLERANCE for e in errors.values()), f"step {i} ({c}, position {positions[c]}): {errors}"
        for before, after in zip(other_before, kiln[other]):
            assert torch.equal(before, after), f"step {i}: conversation {other}'s cache changed"
        positions[c] += 1


def test_llm_decode_steps_with_graphs_match_eager(tmp_path):
    model = export_llm.build_model("tiny", seed=3, device=DEVICE)
    program = export_llm.export_program(tmp_path, "tiny", device=DEVICE, seed=3, verbose=False)
    m = load(program)
    g = torch.Generator().manual_seed(11)
    cfg = model.cfg

    def new_step_inputs(pos):
        token = torch.randint(0, cfg.vocab_size, (1, 1), generator=g).to(DEVICE)
        return token, torch.tensor([pos], device=DEVICE)

    def new_caches():
        return [torch.randn(cfg.cache_shape(), generator=g).to(DEVICE) for _ in range(2)]

    try:
        run_conversations(lambda inp, cache: model.decode(*inp, *cache),
                          lambda inp, cache: m.execute("decode", [*inp, *cache], output="torch")[0],
                          new_caches, new_step_inputs)
    finally:
        m.close()


def test_whisper_decoder_steps_with_graphs_match_eager(tmp_path):
    import kiln

    dim, heads, layers, vocab, frames = 384, 6, 4, 51864, 1500
    torch.manual_seed(5)
    step = export_asr.DecoderStep(dim, heads, layers, vocab).to(DEVICE).eval()
    with torch.no_grad():
        step.positions.normal_(0, 0.1)
    g = torch.Generator().manual_seed(13)
    cross = [torch.randn(layers, frames, dim, generator=g).to(DEVICE) for _ in range(2)]
    cache_shape = (layers, export_asr.N_TEXT_CTX, dim)
    example = (torch.tensor([7], device=DEVICE), torch.tensor([0], device=DEVICE),
               torch.zeros(cache_shape, device=DEVICE), torch.zeros(cache_shape, device=DEVICE), *cross)
    with torch.no_grad():
        ep = torch.export.export(step, example, strict=False)
    path = tmp_path / "whisper_step.kiln"
    kiln.export({"forward": ep}, backend=DEVICE, verbose=False).save(path)
    m = load(path)

    def new_step_inputs(pos):
        return torch.randint(0, vocab, (1,), generator=g).to(DEVICE), torch.tensor([pos], device=DEVICE)

    def new_caches():
        return [torch.randn(cache_shape, generator=g).to(DEVICE) for _ in range(2)]

    try:
        run_conversations(lambda inp, cache: step(*inp, *cache, *cross),
                          lambda inp, cache: m.execute("forward", [*inp, *cache, *cross], output="torch")[0],
                          new_caches, new_step_inputs)
    finally:
        m.close()
