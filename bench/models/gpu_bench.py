#!/usr/bin/env python3
"""Kiln GPU benchmark: Kiln vs eager vs torch.compile vs PyTorch's AOTI loader.

Run through bench/models/gpu_bench.sh on the GPU machine (it sets the library paths):

    bench/models/gpu_bench.sh --phase export            # compile every model once (cached in --workdir)
    bench/models/gpu_bench.sh --phase run               # time them; JSON + Markdown under $OUT

Models (bench/models/gpu_bench_models.py): transformer block, Whisper decoder step, Parakeet
encoder on 10 s of audio, a Gemma3-like ~1.1 B decoder in bf16 (decode at batch 1 over
a 1024-token KV cache; 512-token prefill), ResNet-50 at batch 1 and 32.

Export phase: every model is torch.export-ed once and compiled twice from the same
ExportedProgram with the same Inductor settings: by kiln.export (a .kiln program)
and by torch._inductor.aoti_compile_and_package (a libtorch-linked .pt2 package for
PyTorch's AOTI loader). The Kiln backend's own graph preparation (device move,
decompositions, SDPA context) is applied to the .pt2's graph too, so both libraries
come from one graph. Exports run in --jobs worker processes; a model whose two
files and config stamp are already in --workdir is not exported again.

Run phase: each model runs in its own subprocess (a crash or OOM costs one model;
memory numbers start clean). Per engine, per input point: --warmup calls, then
--iters calls, each timed alone (CUDA events recorded around the call on the current
stream, then synchronised; on CPU, the wall clock): p50, p90, mean, throughput
(items per second at the mean), GPU memory (the drop in free device memory from
before the engine was created to after its runs, and the peak its allocator reports:
see memory_row), load time and weight GB/s. Inputs are on the device before timing and
outputs stay there (Kiln: keep_outputs_on_device), and Kiln's time includes its
Python wrapper (DLPack in and out). Also per model: `kiln run --repeat` (the C++ CLI,
which makes random inputs on the host and so copies inputs in and outputs out every
call), cold start (process start to first output: `kiln run` vs `python -c` importing
torch and calling aoti_load_package, median of --cold-runs), and for
--concurrency-models Kiln's throughput with 1/2/4/8 host threads on one Module
(num_models = threads, each thread its own stream). The machine's device-to-device
copy and pinned host-to-device bandwidths are measured first, for the roofline and
weight-loading ratios.

Results: $OUT/gpu_bench.json (rewritten after every model) and $OUT/gpu_bench.md.
bench/models/plot_gpu_bench.py turns the JSON into PNG plots (on a machine with matplotlib).

Smoke mode (CPU, tiny configs; keeps the harness honest on a machine without a GPU):
    PYTHONPATH=python KILN_LIBRARY=build/libkiln.so KILN_BUILD_DIR=build \\
        python3 bench/models/gpu_bench.py --device cpu --tiny --out /tmp/bench
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench" / "models"))

import torch  # noqa: E402

import gpu_bench_models as models  # noqa: E402
import gpu_bench_report as report  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
ENGINES = ("kiln", "kiln_graphs", "aoti", "eager", "compile")
MODES = {
    # Kiln's CUDA default: GEMMs/convolutions from autotuned Triton templates, SDPA decomposed.
    "triton-only": {"triton_only": True},
    # No autotuning: cuBLASLt/cuDNN fallbacks and fused SDPA (faster to export).
    "fallbacks": {"triton_only": False, "max_autotune": False, "sdpa": "fused"},
}
# Options that only concern how Kiln packs its library; the .pt2 keeps AOTI's defaults there.
_KILN_PACKING_OPTIONS = ("aot_inductor.link_libtorch", "aot_inductor.package_constants_in_so",
                         "aot_inductor.package_constants_on_disk_format", "aot_inductor.package")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------------------ export


def make_backend(device: str):
    if device == "cuda":
        from kiln.exporter import CudaBackend

        return CudaBackend()
    from kiln.exporter import CpuBackend

    return CpuBackend()


def export_stamp(name: str, args) -> dict:
    """What the cached files were made from: a mismatch exports again."""
    return {"model": name, "device": args.device, "tiny": args.tiny, "dtype": args.dtype, "mode": args.mode,
            "fuse_projections": args.kiln_fuse_projections, "combo_kernels": args.combo_kernels,
            "fuse_norm_linear": args.kiln_fuse_norm_linear, "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name() if args.device == "cuda" and torch.cuda.is_available() else None}


def paths_for(workdir: Path, name: str) -> dict[str, Path]:
    return {"kiln": workdir / f"{name}.kiln", "pt2": workdir / f"{name}.pt2", "stamp": workdir / f"{name}.stamp.json"}


def read_stamp(workdir: Path, name: str, args) -> dict | None:
    """The stamp of this model's exports if they were made with the current settings."""
    try:
        stamp = json.loads(paths_for(workdir, name)["stamp"].read_text())
    except (OSError, ValueError):
        return None
    want = export_stamp(name, args)
    return stamp if {k: stamp.get(k) for k in want} == want else None


def cached_stamp(workdir: Path, name: str, args, need_pt2: bool = True) -> dict | None:
    """The stamp if the model is exported with the current settings: the .kiln at least,
    and the .pt2 if need_pt2 (the run phase times a model whose .pt2 failed without the
    loader); else None."""
    stamp = read_stamp(workdir, name, args)
    p = paths_for(workdir, name)
    cached = bool(stamp) and p["kiln"].exists() and (not need_pt2 or (stamp.get("pt2_done") and p["pt2"].exists()))
    return stamp if cached else None


def export_model(name: str, args) -> dict:
    """Worker: exports one model as .kiln and .pt2 from one ExportedProgram."""
    import kiln
    from kiln.exporter.backends.aoti import _inductor_decompositions

    result = {"model": name, "error": None}
    p = paths_for(Path(args.workdir), name)
    try:
        device = torch.device(args.device)
        specs = dict(MODES[args.mode]) if args.device == "cuda" else {}
        specs["fuse_projections"] = args.kiln_fuse_projections
        specs["fuse_norm_linear"] = args.kiln_fuse_norm_linear
        if args.device == "cuda":
            specs["combo_kernels"] = args.combo_kernels
        backend = make_backend(args.device)
        if args.device == "cuda" and "TORCH_CUDA_ARCH_LIST" not in os.environ:
            major, minor = torch.cuda.get_device_capability()
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"  # what CudaBackend defaults to
        t0 = time.perf_counter()
        bm = models.MODELS[name](DTYPES[args.dtype], device, args.tiny)
        result["params"] = models.param_count(bm.module)
        result["weight_bytes"] = models.param_bytes(bm.module)
        with torch.no_grad(), backend.extra_compile_context(specs):
            ep = torch.export.export(bm.module, bm.example, dynamic_shapes=bm.dynamic_shapes)
        result["torch_export_s"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        program = kiln.export({"forward": ep}, backend=backend, compile_specs=specs, verbose=False)
        program.save(str(p["kiln"]))
        result["kiln_export_s"] = time.perf_counter() - t0
        p["pt2"].unlink(missing_ok=True)
        p["stamp"].write_text(json.dumps({**export_stamp(name, args), **result, "pt2_done": False}, indent=1))

        # The .pt2 from the same graph, prepared the way the Kiln backend prepares it
        # (devices, decompositions), without Kiln's own graph passes (projection fusion).
        t0 = time.perf_counter()
        pt2_ep = backend.prepare_program(ep, specs)
        table = backend.decomposition_table(specs)
        options = {k: v for k, v in backend.aoti_compile_options(specs).items() if k not in _KILN_PACKING_OPTIONS}
        result["inductor_options"] = {k: str(v) for k, v in options.items()}
        with torch.no_grad(), backend.extra_compile_context(specs), _inductor_decompositions(table):
            torch._inductor.aoti_compile_and_package(pt2_ep, package_path=str(p["pt2"]), inductor_configs=options)
        result["aoti_export_s"] = time.perf_counter() - t0
        p["stamp"].write_text(json.dumps({**export_stamp(name, args), **result, "pt2_done": True}, indent=1))
    except Exception as e:  # one broken model must not hide the others
        result["error"] = f"export: {type(e).__name__}: {e}"[:3000]
        traceback.print_exc()
        if read_stamp(Path(args.workdir), name, args):  # the .kiln was made: keep why the .pt2 was not
            p["stamp"].write_text(json.dumps({**export_stamp(name, args), **result, "pt2_done": False}, indent=1))
    return result


def export_phase(names: list[str], args) -> dict[str, dict]:
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    done, todo = {}, []
    for name in names:
        if not args.force_export and (stamp := cached_stamp(workdir, name, args)):
            done[name] = {**stamp, "cached": True}
            log(f"export {name}: cached in {workdir}")
        else:
            todo.append(name)
    if not todo:
        return done
    log(f"exporting {', '.join(todo)} with {args.jobs} worker process(es)")
    start = time.perf_counter()
    # The biggest models first: they bound the wall time.
    queue = sorted(todo, key=lambda n: 0 if n.startswith("gemma") else 1)
    running: dict[str, tuple[subprocess.Popen, Path]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        while queue or running:
            while queue and len(running) < args.jobs:
                n = queue.pop(0)
                result_path = Path(tmp) / f"{n}.json"
                running[n] = (subprocess.Popen(child_cmd(args, "--_export", n, result_path)), result_path)
            time.sleep(1)
            for n, (proc, result_path) in list(running.items()):
                if proc.poll() is None:
                    if time_left(args) > 0:
                        continue
                    proc.kill()  # past --budget-s: the next invocation exports it again
                    proc.wait()
                    done[n] = {"model": n, "error": f"export not finished within --budget-s {args.budget_s:g}; "
                                                    "run the same command again (finished exports are cached)"}
                elif result_path.exists():
                    done[n] = json.loads(result_path.read_text())
                else:
                    done[n] = {"model": n, "error": f"export process exited {proc.returncode} (crash or OOM kill)"}
                del running[n]
                state = "ok" if done[n].get("error") is None else done[n]["error"].splitlines()[0]
                log(f"[{time.perf_counter() - start:5.0f}s] exported {n}: {state}")
            if time_left(args) <= 0:
                for n in queue:
                    done[n] = {"model": n, "error": "export not started within --budget-s; run the command again"}
                queue = []
    return done


def time_left(args) -> float:
    """Seconds left of --budget-s for this invocation."""
    return args.budget_s - (time.monotonic() - args.started)


# ------------------------------------------------------------------------------ timing


class Timer:
    """Times single calls: CUDA events on the current stream (GPU), else the wall clock."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def call_ms(self, fn) -> float:
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3

    def measure(self, fn, warmup: int, iters: int) -> dict:
        for _ in range(warmup):
            fn()
        self.sync()
        samples = sorted(self.call_ms(fn) for _ in range(iters))
        return {"p50_ms": _quantile(samples, 0.5), "p90_ms": _quantile(samples, 0.9),
                "mean_ms": statistics.fmean(samples), "min_ms": samples[0], "iters": iters}


def _quantile(sorted_samples: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted samples."""
    if not sorted_samples:
        return float("nan")
    pos = q * (len(sorted_samples) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_samples) - 1)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def flatten(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if out is None:
        return []
    return [t for o in out for t in flatten(o)]


def max_rel_err(got: list[torch.Tensor], want: list[torch.Tensor]) -> float:
    if len(got) != len(want):
        raise RuntimeError(f"{len(got)} outputs, eager has {len(want)}")
    err = 0.0
    for g, w in zip(got, want):
        if tuple(g.shape) != tuple(w.shape):
            raise RuntimeError(f"output shape {tuple(g.shape)}, eager {tuple(w.shape)}")
        g, w = g.to(w.device).double(), w.double()
        err = max(err, ((g - w).abs().max() / w.abs().max().clamp_min(1e-12)).item())
    return err


# ------------------------------------------------------------------------------ Kiln's CUDA device


class KilnCuda:
    """Kiln's allocator statistics and per-thread stream, through the C API
    (kiln.runtime.cuda)."""

    def __init__(self):
        from kiln import runtime

        self._cuda = runtime.cuda
        self.version = runtime.abi_version()

    def reset_peak(self):
        self._cuda.reset_peak_memory_stats(0)

    def stats(self) -> types.SimpleNamespace:
        return types.SimpleNamespace(**self._cuda.memory_stats(0))

    def release_cached(self):
        self._cuda.release_cached_memory(0)

    def set_current_stream(self, stream_ptr: int):
        self._cuda.set_current_stream(stream_ptr, 0)


# ------------------------------------------------------------------------------ engines


def kiln_options(args, graphs: bool, extra: dict | None = None) -> dict:
    if args.device != "cuda":
        return {"aoti": dict(extra or {})}
    # The PyTorch loader checks no digest; --kiln-verify-weights times Kiln with
    # its SHA-256 check of the weights blob (a few GB/s of hashing).
    opts = {"keep_outputs_on_device": True, "stream": args.kiln_stream,
            "verify_weights": bool(args.kiln_verify_weights)}
    if graphs:
        opts["cuda_graphs"] = True
    opts.update(extra or {})
    return {"aoti": opts}


class Engine:
    """A loaded model: call(inputs) -> outputs on the device; close() frees it."""

    name = ""
    load_s = None
    note = None

    def close(self):
        pass


class KilnEngine(Engine):
    def __init__(self, path, args, graphs, kcuda):
        from kiln.runtime import Module

        self.name = "kiln_graphs" if graphs else "kiln"
        self.kcuda = kcuda
        t0 = time.perf_counter()
        self.module = Module(str(path))
        self.module.load(kiln_options(args, graphs))
        # Methods load lazily at their first call; load them here so load_s is
        # the whole load (libraries, containers, weights on the device).
        for method in self.module.method_names():
            self.module.load_method(method)
        self.load_s = time.perf_counter() - t0
        if args.device == "cuda" and args.kiln_stream == "caller":
            kcuda().set_current_stream(torch.cuda.current_stream().cuda_stream)

    def call(self, inputs):
        return self.module.execute("forward", inputs, output="torch")

    def close(self):
        self.module.close()


class AotiEngine(Engine):
    name = "aoti"

    def __init__(self, path, stamp):
        if not stamp.get("pt2_done"):
            raise RuntimeError(f"no .pt2 package: {stamp.get('error') or 'not exported'}")
        # Imported first so that load_s is the package's loading, not Python importing
        # Inductor (seconds; cold_start counts that, as a user would see it).
        import torch._inductor.package  # noqa: F401

        t0 = time.perf_counter()
        self.runner = torch._inductor.aoti_load_package(str(path))
        self.load_s = time.perf_counter() - t0

    def call(self, inputs):
        return self.runner(*inputs)


class EagerEngine(Engine):
    name = "eager"

    def __init__(self, module):
        self.module = module

    def call(self, inputs):
        with torch.no_grad():
            return self.module(*inputs)


class CompileEngine(Engine):
    name = "compile"

    def __init__(self, module, mode):
        self.fn = torch.compile(module, mode=None if mode == "default" else mode)
        self.note = f"torch.compile(mode={mode}); compile time in compile_s"

    def call(self, inputs):
        with torch.no_grad():
            return self.fn(*inputs)


def _device_free(device: str) -> int:
    return torch.cuda.mem_get_info()[0] if device == "cuda" else 0


def run_engine(engine_name: str, bm_name: str, bm, paths, args, timer, reference, kcuda) -> dict:
    """Loads one engine, checks its output against eager, times every point."""
    row: dict = {"engine": engine_name, "error": None, "points": {}}
    cuda = args.device == "cuda"
    engine = None
    try:
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            if engine_name.startswith("kiln") and kcuda.in_use():
                # An earlier Kiln engine's memory stays in Kiln's pool until trimmed. (Before
                # the first Kiln load the plugin is not even registered: nothing to trim.)
                kcuda().release_cached()
                kcuda().reset_peak()
        base_alloc = torch.cuda.memory_allocated() if cuda else 0
        free_before = _device_free(args.device)
        if engine_name in ("kiln", "kiln_graphs"):
            engine = KilnEngine(paths["kiln"], args, engine_name == "kiln_graphs", kcuda)
        elif engine_name == "aoti":
            engine = AotiEngine(paths["pt2"], read_stamp(Path(args.workdir), bm_name, args) or {})
        elif engine_name == "eager":
            engine = EagerEngine(bm.module)
        elif engine_name == "compile":
            engine = CompileEngine(bm.module, args.compile_mode)
        else:
            raise ValueError(engine_name)
        row["load_s"] = engine.load_s
        row["note"] = engine.note
        first = True
        for point, inputs in reference["inputs"].items():
            t0 = time.perf_counter()
            got = flatten(engine.call(list(inputs)))
            timer.sync()
            first_s = time.perf_counter() - t0
            if first:
                row["first_call_s"] = first_s  # torch.compile: includes compiling
                if engine_name == "compile":
                    row["compile_s"] = first_s
                first = False
            res = {"max_rel_err_vs_eager": max_rel_err(got, reference["outputs"][point])}
            del got
            res.update(timer.measure(lambda: engine.call(list(inputs)), args.warmup, args.iters))
            res["throughput"] = bm_items(bm, point) * 1e3 / res["mean_ms"]
            # Checked again after timing: replayed CUDA graphs must give the same answer.
            res["max_rel_err_vs_eager"] = max(res["max_rel_err_vs_eager"],
                                              max_rel_err(flatten(engine.call(list(inputs))), reference["outputs"][point]))
            row["points"][point] = res
            log(f"  {engine_name:11s} {point:22s} p50 {res['p50_ms']:9.3f} ms  p90 {res['p90_ms']:9.3f} ms  "
                f"err {res['max_rel_err_vs_eager']:.1e}")
        if cuda:
            row.update(memory_row(engine_name, bm, free_before, base_alloc, kcuda))
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"[:3000]
        log(f"  {engine_name}: ERROR {row['error'].splitlines()[0]}")
        traceback.print_exc()
    finally:
        if engine is not None:
            engine.close()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    return row


HEAD_TO_HEAD_ENGINES = ("kiln", "kiln_graphs", "aoti")


def head_to_head(bm_name: str, bm, paths, args, timer, reference, kcuda) -> dict | None:
    """The headline inputs timed with the engines' calls interleaved.

    run_engine times one engine after another, so a drift of the machine's speed during
    the run (clocks, the host, other work on the GPU) lands on whichever engine ran then:
    run to run the same engine moved by 10-30 % on the GPU machine, enough to flip a
    ratio near 1. Here kiln, kiln_graphs and the AOTI loader are loaded together and
    called round robin, one timed call each per round, the order rotated every round, so
    every engine sees the same machine. The per-call targets use these medians where
    they exist. Returns None when fewer than two of the engines are asked for."""
    names = [e for e in HEAD_TO_HEAD_ENGINES if e in args.engines and (e != "kiln_graphs" or args.device == "cuda")]
    if len(names) < 2 or args.interleaved_rounds <= 0:
        return None
    res: dict = {"engines": names, "rounds": args.interleaved_rounds, "points": {}, "error": None}
    engines: dict = {}
    try:
        for name in names:
            if name == "aoti":
                engines[name] = AotiEngine(paths["pt2"], read_stamp(Path(args.workdir), bm_name, args) or {})
            else:
                engines[name] = KilnEngine(paths["kiln"], args, name == "kiln_graphs", kcuda)
        for point in bm.headline:
            inputs = reference["inputs"][point]
            samples: dict = {n: [] for n in names}
            for n in names:  # warm-up (CUDA graphs record here)
                for _ in range(args.warmup):
                    engines[n].call(list(inputs))
            timer.sync()
            for r in range(args.interleaved_rounds):
                k = r % len(names)
                for n in names[k:] + names[:k]:
                    samples[n].append(timer.call_ms(lambda: engines[n].call(list(inputs))))
            res["points"][point] = {n: {"p50_ms": _quantile(sorted(v), 0.5), "p90_ms": _quantile(sorted(v), 0.9),
                                        "min_ms": min(v), "calls": len(v)} for n, v in samples.items()}
            log("  interleaved " + point + ": " +
                ", ".join(f"{n} {res['points'][point][n]['p50_ms']:.3f}" for n in names) + " ms p50")
    except Exception as e:
        res["error"] = f"{type(e).__name__}: {e}"[:3000]
        log(f"  interleaved: ERROR {res['error'].splitlines()[0]}")
        traceback.print_exc()
    finally:
        for engine in engines.values():
            engine.close()
        if args.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    return res


def memory_row(engine_name, bm, free_before, base_alloc, kcuda) -> dict:
    """GPU memory of one engine after its runs.

    device_used_mb: free device memory before the engine was created minus after its
    runs. Both allocators keep what they freed cached (torch's caching allocator; Kiln's
    pool has no release threshold), so this is the engine's high-water mark including
    memory no allocator reports: AOTInductor allocates a model's constants with
    cudaMalloc directly, in the loader and in Kiln alike, and kernels loaded into the
    context. allocator_peak_mb: the peak the engine's allocator reports (torch's above
    the baseline, Kiln's pool), which misses those."""
    torch.cuda.synchronize()
    row = {"device_used_mb": (free_before - _device_free("cuda")) / 2**20}
    shared_weights = models.param_bytes(bm.module) if engine_name in ("eager", "compile") else 0
    row["device_used_mb"] += shared_weights / 2**20  # eager weights were there before the baseline
    try:
        if engine_name.startswith("kiln"):
            row["allocator_peak_mb"] = kcuda().stats().peak_bytes_in_use / 2**20
        else:
            row["allocator_peak_mb"] = (torch.cuda.max_memory_allocated() - base_alloc + shared_weights) / 2**20
    except Exception as e:  # a missing statistic must not cost the timings
        row["allocator_peak_error"] = f"{type(e).__name__}: {e}"
    return row


def bm_items(bm, label) -> float:
    return next(p.items for p in bm.points if p.label == label)


# ------------------------------------------------------------------------------ CLI and cold start


def kiln_cli() -> Path:
    return Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build")) / "kiln"


def cli_weight_check(args) -> list[str]:
    """The CLI checks the weights' SHA-256 by default (about 1 GB/s); like the Python
    engines, it skips the check unless --kiln-verify-weights, since the loader checks none."""
    return [] if args.kiln_verify_weights else ["--option", "aoti.verify_weights=false"]


def kiln_cli_timing(path: Path, args) -> dict:
    """`kiln run --repeat N`: the C++ path, with host inputs copied in and outputs out."""
    cmd = [str(kiln_cli()), "run", str(path), "--repeat", str(args.iters), "--int-range", "0,100"]
    cmd += cli_weight_check(args)
    if args.device == "cuda":
        cmd += ["--option", f"aoti.stream={args.kiln_stream if args.kiln_stream != 'caller' else 'per_method'}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return {"error": f"kiln run exited {proc.returncode}: {(proc.stderr or proc.stdout)[-1500:]}"}
    m = re.search(r"median of (\d+) calls: ([\d.]+) ms", proc.stdout)
    load = re.search(r"load: ([\d.]+) ms", proc.stdout)
    return {"median_ms": float(m.group(2)) if m else None, "load_ms": float(load.group(1)) if load else None,
            "note": "kiln run CLI: random host inputs, copied to the device and outputs back each call"}


_PY_COLD = (
    "import sys, json, torch\n"
    "m = torch._inductor.aoti_load_package(sys.argv[1])\n"
    "dev = sys.argv[3]\n"
    "ins = []\n"
    "for shape, dtype in json.loads(sys.argv[2]):\n"
    "    dt = getattr(torch, dtype)\n"
    "    ins.append(torch.randint(0, 100, shape, dtype=dt, device=dev) if not dt.is_floating_point\n"
    "               else torch.randn(shape, dtype=dt, device=dev))\n"
    "y = m(*ins)\n"
    "y = y[0] if isinstance(y, (list, tuple)) else y\n"
    "print(float(y.float().sum().cpu()))\n"
)


def cold_start(bm, paths, args) -> dict:
    """Process start -> first output, median of --cold-runs, Kiln CLI vs Python + torch."""
    specs = json.dumps([[list(t.shape), str(t.dtype).replace("torch.", "")] for t in bm.points[0].inputs()])
    kiln_t, py_t = [], []
    errors = []
    for _ in range(args.cold_runs):
        t = time.perf_counter()
        p = subprocess.run([str(kiln_cli()), "run", str(paths["kiln"]), "--repeat", "0", "--int-range", "0,100",
                            *cli_weight_check(args)], capture_output=True, text=True, timeout=600)
        if p.returncode == 0:
            kiln_t.append(time.perf_counter() - t)
        else:
            errors.append(f"kiln run: {p.stderr[-800:]}")
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", _PY_COLD, str(paths["pt2"]), specs, args.device],
                           capture_output=True, text=True, timeout=600)
        if p.returncode == 0:
            py_t.append(time.perf_counter() - t)
        else:
            errors.append(f"python: {p.stderr[-800:]}")
    res = {"kiln_cli_ms": statistics.median(kiln_t) * 1e3 if kiln_t else None,
           "python_aoti_ms": statistics.median(py_t) * 1e3 if py_t else None,
           "runs": args.cold_runs, "errors": errors or None}
    if res["kiln_cli_ms"] and res["python_aoti_ms"]:
        res["ratio"] = res["kiln_cli_ms"] / res["python_aoti_ms"]
    return res


# ------------------------------------------------------------------------------ concurrency


def concurrency(path: Path, bm, args, kcuda) -> list[dict]:
    """Kiln throughput with T host threads calling one Module (num_models = T)."""
    from kiln.runtime import Module

    rows = []
    inputs = list(bm.points[0].inputs())
    cuda = args.device == "cuda"
    for threads in args.threads:
        row = {"threads": threads, "error": None}
        module = None
        try:
            stream_mode = "caller" if cuda and kcuda().version >= 2 else "per_method"
            extra = {"num_models": threads}
            if cuda:
                extra["stream"] = stream_mode
            module = Module(str(path))
            module.load(kiln_options(args, False, extra))
            row["stream"] = stream_mode if cuda else None
            calls = max(args.iters, 4 * threads)
            per_thread = max(1, calls // threads)
            barrier = threading.Barrier(threads + 1)
            failures = []

            def work():
                try:
                    stream = torch.cuda.Stream() if cuda else None
                    if stream is not None and stream_mode == "caller":
                        kcuda().set_current_stream(stream.cuda_stream)
                    with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                        for _ in range(3):
                            module.execute("forward", inputs, output="torch")
                        if stream is not None:
                            stream.synchronize()
                        barrier.wait()
                        for _ in range(per_thread):
                            module.execute("forward", inputs, output="torch")
                            if stream is not None:
                                stream.synchronize()  # one request = one finished call
                except Exception as e:  # reported in the row
                    failures.append(f"{type(e).__name__}: {e}")
                    with contextlib.suppress(threading.BrokenBarrierError):
                        barrier.abort()

            if cuda:
                torch.cuda.synchronize()
            pool = [threading.Thread(target=work) for _ in range(threads)]
            for t in pool:
                t.start()
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()
            t0 = time.perf_counter()
            for t in pool:
                t.join()
            wall = time.perf_counter() - t0
            if failures:
                raise RuntimeError(failures[0])
            row["calls"] = per_thread * threads
            row["calls_per_s"] = row["calls"] / wall
            row["items_per_s"] = row["calls_per_s"] * bm.points[0].items
            log(f"  concurrency {threads} thread(s): {row['calls_per_s']:.1f} calls/s ({stream_mode if cuda else 'cpu'})")
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:2000]
            log(f"  concurrency {threads}: ERROR {row['error'].splitlines()[0]}")
        finally:
            if module is not None:
                module.close()
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------ one model (subprocess)


def run_model(name: str, args, checkpoint=lambda out: None) -> dict:
    """Everything measured for one model, in this (fresh) process; checkpoint(out) is
    called after each measurement, so a run killed at the time limit keeps the rest."""
    device = torch.device(args.device)
    timer = Timer(args.device)
    paths = paths_for(Path(args.workdir), name)
    out: dict = {"model": name, "error": None}
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    kcuda_holder: list = []

    def kcuda() -> KilnCuda:
        if not kcuda_holder:
            kcuda_holder.append(KilnCuda())
        return kcuda_holder[0]

    kcuda.in_use = lambda: bool(kcuda_holder)

    bm = models.MODELS[name](DTYPES[args.dtype], device, args.tiny)
    out["params"] = models.param_count(bm.module)
    out["weight_bytes"] = models.param_bytes(bm.module)
    out["kv_bytes"] = bm.kv_bytes
    out["item_unit"] = bm.item_unit
    out["sweep"] = bm.sweep
    out["headline"] = bm.headline
    out["point_x"] = {p.label: p.x for p in bm.points}
    for key in ("kiln", "pt2"):
        out[f"{key}_file_bytes"] = paths[key].stat().st_size if paths[key].exists() else None
    torch.manual_seed(1234)
    inputs = {p.label: tuple(p.inputs()) for p in bm.points}
    with torch.no_grad():
        outputs = {label: [o.clone() for o in flatten(bm.module(*x))] for label, x in inputs.items()}
    timer.sync()
    reference = {"inputs": inputs, "outputs": outputs}
    engines = [e for e in args.engines if e != "kiln_cli"]
    if args.device != "cuda" and "kiln_graphs" in engines:
        engines.remove("kiln_graphs")
        out["kiln_graphs_skipped"] = "CUDA graphs are CUDA-only"
    out["engines"] = {}
    for engine in engines:
        out["engines"][engine] = run_engine(engine, name, bm, paths, args, timer, reference, kcuda)
        checkpoint(out)
    h2h = head_to_head(name, bm, paths, args, timer, reference, kcuda)
    if h2h is not None:
        out["interleaved"] = h2h
        checkpoint(out)
    if "kiln_cli" in args.engines:
        log("  kiln run CLI")
        out["kiln_cli"] = kiln_cli_timing(paths["kiln"], args)
        checkpoint(out)
    if name in args.cold_models:
        log(f"  cold start x{args.cold_runs}")
        out["cold_start"] = cold_start(bm, paths, args)
        checkpoint(out)
    if name in args.concurrency_models:
        out["concurrency"] = concurrency(paths["kiln"], bm, args, kcuda)
    return out


# ------------------------------------------------------------------------------ machine


def machine_info(args) -> dict:
    info = {"host": platform.node(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "ld_preload": os.environ.get("LD_PRELOAD") or None}
    with contextlib.suppress(Exception):
        import transformers

        info["transformers"] = transformers.__version__
    with contextlib.suppress(Exception):
        import triton

        info["triton"] = triton.__version__
    if args.device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update({"gpu": props.name, "gpu_memory_gb": props.total_memory / 1e9,
                     "compute_capability": f"{props.major}.{props.minor}"})
        with contextlib.suppress(Exception):
            info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True, timeout=30).stdout.strip()
    return info


def bandwidth(args) -> dict:
    """Device-to-device copy bandwidth (read + write bytes / time) and pinned
    host-to-device bandwidth, best of a few 1 GiB / 2 GiB transfers."""
    if args.device != "cuda":
        return {"note": "no GPU: not measured"}
    timer = Timer("cuda")
    size = (256 << 20) if args.tiny else (2 << 30)
    src = torch.empty(size, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    d2d = timer.measure(lambda: dst.copy_(src), 3, 10)
    host = torch.empty(size // 2, dtype=torch.uint8).pin_memory()
    dev = torch.empty(size // 2, dtype=torch.uint8, device="cuda")
    h2d = timer.measure(lambda: dev.copy_(host, non_blocking=True), 2, 8)
    res = {"d2d_copy_bytes": size, "d2d_GBps": 2 * size / (d2d["min_ms"] * 1e-3) / 1e9,
           "d2d_GBps_p50": 2 * size / (d2d["p50_ms"] * 1e-3) / 1e9,
           "h2d_pinned_bytes": size // 2, "h2d_pinned_GBps": (size // 2) / (h2d["min_ms"] * 1e-3) / 1e9,
           "h2d_pinned_GBps_p50": (size // 2) / (h2d["p50_ms"] * 1e-3) / 1e9}
    return res


# ------------------------------------------------------------------------------ main


def executorch_status() -> dict:
    """Whether ExecuTorch's CUDA backend could run here (see docs/benchmarks.md)."""
    import importlib.util

    if importlib.util.find_spec("executorch") is None:
        return {"available": False,
                "reason": "executorch is not installed here. The PyPI wheel (executorch 1.5.1, 18.9 MB) is a "
                          "'+cpu' build whose runtime has no CUDA backend, and no CUDA build is on PyPI. "
                          "See docs/benchmarks.md."}
    return {"available": False, "reason": "executorch is installed, but this harness does not drive its CUDA "
                                          "backend (no CUDA-enabled ExecuTorch runtime was available to test with)"}


def child_cmd(args, role: str, name: str, result_path: Path) -> list[str]:
    """This script as a worker: role "--_export" or "--_run" for model `name`."""
    cmd = [sys.executable, __file__, role, name, "--_result", str(result_path)]
    for key in ("device", "dtype", "mode", "workdir", "iters", "warmup", "compile_mode", "kiln_stream",
                "kiln_fuse_projections", "kiln_fuse_norm_linear", "combo_kernels", "cold_runs",
                "interleaved_rounds", "budget_s"):
        cmd += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
    cmd += ["--engines", ",".join(args.engines), "--cold-models", ",".join(args.cold_models),
            "--concurrency-models", ",".join(args.concurrency_models),
            "--threads", ",".join(map(str, args.threads))]
    if args.tiny:
        cmd.append("--tiny")
    if args.kiln_verify_weights:
        cmd.append("--kiln-verify-weights")
    return cmd


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = ",".join(models.MODELS)
    ap.add_argument("--models", default=names, help=f"comma list (default all): {names}")
    ap.add_argument("--skip", default="", help="comma list of models to leave out")
    ap.add_argument("--phase", choices=("export", "run", "all"), default="all")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--tiny", action="store_true", help="tiny configs (smoke test)")
    ap.add_argument("--dtype", choices=tuple(DTYPES), default="bf16")
    ap.add_argument("--mode", choices=tuple(MODES), default="triton-only", help="Kiln CUDA compile specs (also "
                    "applied to the .pt2)")
    ap.add_argument("--workdir", default=None, help="export cache (default build-bench/<device>[-tiny])")
    ap.add_argument("--out", default=None, help="results directory (default $OUT, else the workdir)")
    ap.add_argument("--jobs", type=int, default=max(1, min(6, (os.cpu_count() or 2) // 2)))
    ap.add_argument("--force-export", action="store_true")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--interleaved-rounds", type=int, default=100,
                    help="rounds of the head-to-head timing (kiln, kiln_graphs, aoti called in turn on the "
                         "headline inputs; 0: off)")
    ap.add_argument("--engines", default=",".join(ENGINES + ("kiln_cli",)))
    ap.add_argument("--compile-mode", default="default",
                    help="torch.compile mode: default, max-autotune-no-cudagraphs, reduce-overhead, ...")
    ap.add_argument("--kiln-stream", choices=("per_method", "shared", "caller"), default="caller",
                    help="Kiln's aoti stream option. Default caller: torch's current stream (set through the "
                         "CUDA plugin), where the AOTI loader runs too; with Kiln's own streams (per_method, "
                         "shared) each call waits for its stream before returning")
    ap.add_argument("--kiln-verify-weights", action="store_true",
                    help="Kiln checks the weights blob's SHA-256 at load (off by default: the loader checks none)")
    ap.add_argument("--kiln-fuse-projections", choices=("on", "off"), default="on",
                    help="Kiln's exporter fuses projections that share an input (q/k/v, gate/up) into one "
                         "(default on, as Kiln's CUDA backend does); the .pt2 for the loader is compiled from the graph "
                         "as exported either way")
    ap.add_argument("--kiln-fuse-norm-linear", choices=("on", "off"), default="off",
                    help="Kiln's exporter replaces an RMSNorm that feeds one bias-free linear with Kiln's fused "
                         "rms_norm_linear op (default off, as in Kiln's backends); Kiln only, like projection fusion")
    ap.add_argument("--combo-kernels", choices=("on", "off"), default="on",
                    help="CUDA compile spec combo_kernels: Inductor launches independent small kernels as one "
                         "(default on, as Kiln's CUDA backend does; the loader's .pt2 is compiled with the same "
                         "setting)")
    ap.add_argument("--cold-runs", type=int, default=3)
    ap.add_argument("--cold-models", default="transformer_block,gemma3_decode")
    ap.add_argument("--concurrency-models", default="transformer_block,gemma3_decode")
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--budget-s", type=float, default=540,
                    help="stop starting work after this many seconds and kill what runs past it, so the JSON is "
                         "written before an outer time limit (default 540); rerun to finish")
    ap.add_argument("--_export", help=argparse.SUPPRESS)
    ap.add_argument("--_run", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.started = time.monotonic()
    args.engines = [e for e in args.engines.split(",") if e]
    unknown = [e for e in args.engines if e not in ENGINES + ("kiln_cli",)]
    if unknown:
        ap.error(f"unknown engines {unknown}")
    args.cold_models = [m for m in args.cold_models.split(",") if m]
    args.concurrency_models = [m for m in args.concurrency_models.split(",") if m]
    args.threads = [int(t) for t in args.threads.split(",") if t]
    skip = set(filter(None, args.skip.split(",")))
    args.model_list = [m for m in args.models.split(",") if m and m not in skip]
    bad = [m for m in args.model_list + list(skip) if m not in models.MODELS]
    if bad:
        ap.error(f"unknown models {bad}; known: {', '.join(models.MODELS)}")
    if args.workdir is None:
        args.workdir = str(ROOT / "build-bench" / (args.device + ("-tiny" if args.tiny else "")))
    if args.out is None:
        args.out = os.environ.get("OUT") or args.workdir
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args._export:
        Path(args._result).write_text(json.dumps(export_model(args._export, args), indent=1, default=str))
        return 0
    if args._run:
        def checkpoint(partial):
            Path(args._result).write_text(json.dumps({**partial, "incomplete": "killed before the end"},
                                                     indent=1, default=str))

        try:
            result = run_model(args._run, args, checkpoint)
        except Exception as e:
            result = {"model": args._run, "error": f"{type(e).__name__}: {e}"[:3000]}
            traceback.print_exc()
        Path(args._result).write_text(json.dumps(result, indent=1, default=str))
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_bench: torch sees no GPU (use --device cpu --tiny for the smoke test)", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    results = {"config": {k: v for k, v in vars(args).items() if not k.startswith("_") and k != "started"},
               "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]) if argv is None else None,
               "machine": machine_info(args), "executorch": executorch_status(), "exports": {}, "models": {}}
    json_path, md_path = Path(args.out) / "gpu_bench.json", Path(args.out) / "gpu_bench.md"
    # Results accumulate in the workdir too, so invocations that each run some models
    # (to stay within a command time limit) end with one JSON holding all of them.
    kept_path = Path(args.workdir) / "gpu_bench.json"
    previous = report.load_compatible(kept_path, results["config"])
    if previous:
        results["models"].update(previous.get("models") or {})
        results["exports"].update(previous.get("exports") or {})
        if previous.get("bandwidth"):
            results["bandwidth"] = previous["bandwidth"]
        results["commands"] = previous.get("commands") or []
    results["commands"] = results.get("commands", []) + ([results["command"]] if results["command"] else [])

    def save():
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        text = json.dumps(results, indent=1, default=str)
        json_path.write_text(text)
        kept_path.write_text(text)
        md_path.write_text(report.markdown(results))

    if args.phase in ("export", "all"):
        results["exports"].update(export_phase(args.model_list, args))
        save()
    if args.phase in ("run", "all"):
        log("measuring bandwidths")
        results["bandwidth"] = bandwidth(args)
        if args.device == "cuda":
            torch.cuda.empty_cache()  # the copy buffers, freed when bandwidth() returned
        log(f"  {results['bandwidth']}")
        save()
        for name in args.model_list:
            stamp = cached_stamp(Path(args.workdir), name, args, need_pt2=False)
            if not stamp:
                err = (results["exports"].get(name) or {}).get("error") or "not exported (run --phase export)"
                results["models"][name] = {"model": name, "error": err}
                log(f"run {name}: skipped: {err.splitlines()[0]}")
                save()
                continue
            results["exports"].setdefault(name, {**stamp, "cached": True})
            log(f"run {name}")
            with tempfile.TemporaryDirectory() as tmp:
                result_path = Path(tmp) / "result.json"
                if time_left(args) < 20:
                    results["models"][name] = {"model": name, "error": "not run within --budget-s; run it again "
                                                                      f"with --phase run --models {name}"}
                    log(f"run {name}: skipped, --budget-s spent")
                    save()
                    continue
                try:
                    proc = subprocess.run(child_cmd(args, "--_run", name, result_path), timeout=time_left(args))
                    code = proc.returncode
                except subprocess.TimeoutExpired:
                    code = "killed: past --budget-s"
                if result_path.exists():
                    results["models"][name] = json.loads(result_path.read_text())
                    if results["models"][name].get("incomplete"):
                        results["models"][name]["incomplete"] = f"run process {code}; what finished is kept"
                else:
                    results["models"][name] = {"model": name, "error": f"run process exited {code}"}
            results["targets"] = report.targets(results)
            save()
            log(f"run {name}: done; results in {json_path}")
        results["targets"] = report.targets(results)
        save()
        print()
        print(report.markdown(results))
    log(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
