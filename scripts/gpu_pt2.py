"""Stock PyTorch .pt2 packages on a GPU: compiles small models with
torch._inductor.aoti_compile_and_package, runs each through `kiln import` + kiln.runtime.Module
(host and device inputs), `kiln run` on the .pt2 and Module on the .pt2 path, compares with eager
on fresh random inputs, checks the refusals, prints one table and writes JSON + logs under --out.
Run through scripts/gpu-pt2.sh (`--device cpu` is a dry run of the same steps on CPU packages).

Packages (the `inductor_configs` each one is compiled with are in the JSON):
  a  blob_embed   link_libtorch=False, weights in a binary blob, kernels embedded in the library
                  (embed_kernel_binary=True), dynamic batch, two outputs
  b  inso_files   link_libtorch=False, weights inside the library, kernels as separate files in the
                  package (embed_kernel_binary=False), an int64 input
  c  half_mm      float16 model whose matmuls are cuBLAS fallbacks (aoti_torch_<dev>_addmm_out /
                  mm_out), weights in a blob, torch's default kernel packaging
  d  libtorch     torch's defaults (linked against libtorch): refused with the re-export hint
and, on the blob_embed program, a compute capability (CUDA) or machine (CPU) Kiln's host lacks:
refused at load, for the imported .kiln and for the .pt2 path, naming both.

Eager and compilation run with TF32 off (torch.backends.cuda.matmul.allow_tf32=False): Inductor
bakes the flag into Triton matmul templates, and leaves extern matmuls (aoti_torch_cuda_mm_out ...)
to the runtime, where Kiln's cuBLASLt calls use TF32 only when kiln::cuda::set_allow_tf32 asks.

Inductor's and Triton's caches live in a private directory that is removed after compiling, so a
kernel file the library reads at run time can only come from the directory Kiln writes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

FP32_TOL = 1e-5
HALF_TOL = 2e-2

NO_LIBTORCH = {"aot_inductor.link_libtorch": False}
BLOB = {"aot_inductor.package_constants_in_so": False, "aot_inductor.package_constants_on_disk_format": "binary_blob"}
KERNEL_SUFFIXES = (".cubin", ".fatbin", ".ptx", ".hsaco", ".spv")
REEXPORT_HINT = '"aot_inductor.link_libtorch": False'


def log(message: str) -> None:
    print(f"[gpu-pt2] {message}", flush=True)


class Report:
    """Rows of the table: variant, path, max relative error (or None), ok, note."""

    def __init__(self):
        self.rows: list[dict] = []

    def add(self, variant: str, path: str, err: float | None, ok: bool, note: str = "") -> None:
        self.rows.append({"variant": variant, "path": path, "max_rel_err": err, "ok": bool(ok), "note": note})
        shown = "-" if err is None else f"{err:.2e}"
        log(f"{'PASS' if ok else 'FAIL'} {variant} / {path}: {shown} {note}")

    def guarded(self, variant: str, path: str, fn) -> None:
        """Runs fn() -> (err, ok, note); an exception is a failed row with its message."""
        try:
            err, ok, note = fn()
        except Exception as e:  # noqa: BLE001 - every failure becomes a row, the script goes on
            traceback.print_exc()
            err, ok, note = None, False, f"{type(e).__name__}: {str(e)[:300]}"
        self.add(variant, path, err, ok, note)

    def table(self) -> str:
        lines = [f"{'variant':<12} {'path':<28} {'max rel err':>11}  result  note", "-" * 90]
        for r in self.rows:
            err = "-" if r["max_rel_err"] is None else f"{r['max_rel_err']:.2e}"
            note = r["note"].replace("\n", " ")
            lines.append(f"{r['variant']:<12} {r['path']:<28} {err:>11}  {'pass' if r['ok'] else 'FAIL':<6}  {note[:120]}")
        return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--cli", required=True, help="the kiln CLI of the build under test")
    parser.add_argument("--out", required=True, help="logs and JSON")
    parser.add_argument("--work", default=None, help="packages and programs (default: a fresh temp directory)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work or tempfile.mkdtemp(prefix="kiln_gpu_pt2_"))
    work.mkdir(parents=True, exist_ok=True)
    # Before torch is imported: Triton reads its cache location once.
    cache = work / "compile-cache"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(cache / "triton")
    # Kiln writes kernel directories here (KernelDirectory reads TMPDIR at load).
    kernel_tmp = work / "tmp"
    kernel_tmp.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(kernel_tmp)

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        log("torch.cuda is not available: run on the GPU machine, or pass --device cpu for the dry run")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # eager fp32 in full precision, as Kiln's cuBLASLt calls
    torch.backends.cudnn.allow_tf32 = False
    start = time.perf_counter()
    env = {
        "device": args.device,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "machine": platform.machine(),
        "cli": args.cli,
        "kiln_library": os.environ.get("KILN_LIBRARY"),
    }
    if args.device == "cuda":
        major, minor = torch.cuda.get_device_capability()
        env.update(gpu=torch.cuda.get_device_name(), compute_capability=f"{major}{minor}")
    log(json.dumps(env))
    report = Report()
    runner = Runner(args.device, args.cli, work, out, report, torch)
    try:
        runner.run_all()
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    ok = all(r["ok"] for r in report.rows) and bool(report.rows)
    table = report.table()
    print(table, flush=True)
    (out / "gpu_pt2_table.txt").write_text(table + "\n")
    (out / "gpu_pt2.json").write_text(json.dumps(
        {"env": env, "rows": report.rows, "packages": runner.packages, "ok": ok,
         "wall_s": round(time.perf_counter() - start, 1)}, indent=1))
    log(f"{'PASS' if ok else 'FAIL'}: {sum(r['ok'] for r in report.rows)}/{len(report.rows)} rows pass "
        f"in {time.perf_counter() - start:.0f} s")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


class Runner:
    def __init__(self, device: str, cli: str, work: Path, out: Path, report: Report, torch):
        self.device = device
        self.cli = cli
        self.work = work
        self.out = out
        self.report = report
        self.torch = torch
        self.packages: dict[str, dict] = {}  # name -> facts for the JSON

    # ---- models ------------------------------------------------------------------------------

    def models(self):
        sys.path.insert(0, str(REPO / "tests" / "python"))
        from pt2_models import HalfMatmul, IntIndex, TwoOutputs

        return TwoOutputs, IntIndex, HalfMatmul

    def run_all(self) -> None:
        torch = self.torch
        dev = self.device
        TwoOutputs, IntIndex, HalfMatmul = self.models()
        kernel_files_cfg = {} if dev == "cpu" else {"aot_inductor.embed_kernel_binary": False}
        embed_cfg = {} if dev == "cpu" else {"aot_inductor.embed_kernel_binary": True}
        half = torch.float16

        def blob_inputs(batch, g):
            return (torch.randn(batch, 16, generator=g).to(dev), torch.randn(8, generator=g).to(dev))

        def inso_inputs(batch, g):
            return (torch.randn(3, 6, generator=g).to(dev),
                    torch.randint(0, 10, (4,), generator=g, dtype=torch.int64).to(dev))

        def half_inputs(batch, g):
            return (torch.randn(batch, 64, generator=g).to(device=dev, dtype=half),)

        variants = [
            # name, model factory, example, dynamic shapes, configs, inputs(batch, generator), batches, tol
            ("blob_embed", TwoOutputs, blob_inputs(4, torch.Generator().manual_seed(0)),
             ({0: torch.export.Dim("batch", min=2, max=64)}, None), {**NO_LIBTORCH, **BLOB, **embed_cfg},
             blob_inputs, (2, 7, 64), FP32_TOL),
            ("inso_files", IntIndex, inso_inputs(0, torch.Generator().manual_seed(0)), None,
             {**NO_LIBTORCH, **kernel_files_cfg}, inso_inputs, (0,), FP32_TOL),
            ("half_mm", lambda: HalfMatmul().to(half), half_inputs(8, torch.Generator().manual_seed(0)),
             ({0: torch.export.Dim("batch", min=2, max=256)},), {**NO_LIBTORCH, **BLOB}, half_inputs,
             (3, 8, 200), HALF_TOL),
        ]
        compiled = []
        for i, (name, factory, example, dyn, cfg, make, batches, tol) in enumerate(variants):
            torch.manual_seed(100 + i)
            model = factory().to(dev).eval()
            path = self.compile(name, model, example, dyn, cfg)
            compiled.append((name, model, path, make, batches, tol))
        torch.manual_seed(200)
        libtorch_model = IntIndex().to(dev).eval()
        libtorch_pkg = self.compile("libtorch", libtorch_model, inso_inputs(0, torch.Generator().manual_seed(1)),
                                    None, {})
        # From here on no compile-time file exists: kernels come from the programs only. The
        # libraries name their kernel files by compile-time path; those go too, wherever they are.
        shutil.rmtree(self.work / "compile-cache", ignore_errors=True)
        for facts in self.packages.values():
            for f in facts.get("load_kernel_from_file", []):
                if os.path.isfile(f):
                    log(f"removing compile-time kernel file outside the cache: {f}")
                    os.remove(f)

        programs = {}
        for name, model, path, make, batches, tol in compiled:
            if path is None:
                continue
            programs[name] = self.check_variant(name, model, path, make, batches, tol)
        if libtorch_pkg is not None:
            self.check_libtorch_refused(libtorch_pkg)
        if compiled[0][2] is not None:
            self.check_arch_refused(compiled[0][2], programs.get("blob_embed"))

    # ---- compile -----------------------------------------------------------------------------

    def compile(self, name, model, example, dynamic_shapes, configs) -> Path | None:
        torch = self.torch
        path = self.work / f"{name}.pt2"
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                ep = torch.export.export(model, example, dynamic_shapes=dynamic_shapes)
                torch._inductor.aoti_compile_and_package(ep, package_path=str(path), inductor_configs=configs)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            self.report.add(name, "compile", None, False, f"{type(e).__name__}: {str(e)[:300]}")
            return None
        facts = {"inductor_configs": configs, "compile_s": round(time.perf_counter() - t0, 1)}
        with zipfile.ZipFile(path) as z:
            facts["files"] = [(i.filename, i.file_size) for i in z.infolist()]
            wrapper = next((n for n in z.namelist() if n.endswith(".wrapper.cpp")), None)
            meta = next((n for n in z.namelist() if n.endswith(".wrapper_metadata.json")), None)
            if meta:
                facts["wrapper_metadata"] = json.loads(z.read(meta))
            if wrapper:
                src = z.read(wrapper).decode(errors="replace")
                facts["fallback_calls"] = sorted(set(re.findall(r"\baoti_torch_(?:cuda|cpu)_\w+", src)))
                facts["load_kernel_from_file"] = sorted(set(re.findall(r'loadKernel\("([^"]+)"', src)))
                facts["load_kernel_embedded"] = len(re.findall(r"loadKernel\(__\w+_start", src))
        facts["kernel_files"] = [f for f, _ in facts["files"] if f.endswith(KERNEL_SUFFIXES)]
        self.packages[name] = facts
        log(f"{name}: compiled in {facts['compile_s']} s with {configs}; package files:")
        for f, size in facts["files"]:
            log(f"    {size:>10}  {f}")
        log(f"{name}: fallback calls in the wrapper: {facts.get('fallback_calls')}; kernels loaded from files: "
            f"{facts.get('load_kernel_from_file')}; embedded: {facts.get('load_kernel_embedded')}")
        return path

    # ---- helpers -----------------------------------------------------------------------------

    def cli_run(self, *args, timeout=240) -> subprocess.CompletedProcess:
        cmd = [self.cli, *map(str, args)]
        log("$ " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.stdout.strip():
            log("  stdout: " + proc.stdout.strip().replace("\n", "\n  stdout: "))
        if proc.stderr.strip():
            log("  stderr: " + proc.stderr.strip().replace("\n", "\n  stderr: "))
        return proc

    def eager(self, model, inputs) -> list:
        with self.torch.no_grad():
            want = model(*inputs)
        return list(want) if isinstance(want, (tuple, list)) else [want]

    def compare(self, got, want, tol) -> tuple[float, bool, str]:
        """Max over outputs of max|got - want| / max|want|; shapes and dtypes must match."""
        import numpy as np

        torch = self.torch
        if len(got) != len(want):
            return None, False, f"{len(got)} outputs, eager has {len(want)}"
        worst = 0.0
        for i, (g, w) in enumerate(zip(got, want)):
            if isinstance(g, torch.Tensor):
                if g.dtype != w.dtype:
                    return None, False, f"output {i}: dtype {g.dtype}, eager {w.dtype}"
                g = g.detach().to("cpu", torch.float64).numpy()
            else:
                g = np.asarray(g)
                if str(g.dtype) != str(w.dtype).replace("torch.", ""):
                    return None, False, f"output {i}: dtype {g.dtype}, eager {w.dtype}"
                g = g.astype(np.float64)
            w = w.detach().to("cpu", torch.float64).numpy()
            if g.shape != w.shape:
                return None, False, f"output {i}: shape {g.shape}, eager {w.shape}"
            if not np.isfinite(g).all():
                return float("inf"), False, f"output {i} has non-finite values (stale memory?)"
            worst = max(worst, float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-6)))
        return worst, worst <= tol, ""

    def poisoned(self, inputs) -> list:
        """The inputs with every float one NaN: run first, so that the blocks the next call's
        intermediates and outputs reuse hold NaN, and any element the library fails to write shows."""
        torch = self.torch
        return [torch.full_like(t, float("nan")) if t.is_floating_point() else t for t in inputs]

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def run_module(self, module, model, make, batches, tol, seed, host: bool, poison: bool = True):
        """Runs `module` on fresh random inputs of each batch size; host: numpy in and out,
        else torch tensors on the device in and out (outputs must stay there)."""
        torch = self.torch
        worst, notes = 0.0, []
        for k, batch in enumerate(batches):
            inputs = make(batch, torch.Generator().manual_seed(seed + k))
            self.sync()
            if poison:
                if host:
                    module.forward(*(t.cpu().numpy() for t in self.poisoned(inputs)))
                else:
                    module.forward(*self.poisoned(inputs), output="torch")
            if host:
                got = module.forward(*(t.cpu().numpy() for t in inputs))
            else:
                got = module.forward(*inputs, output="torch")
                self.sync()
                wrong = [str(g.device) for g in got if g.device.type != self.device]
                if wrong:
                    return None, False, f"outputs on {wrong}, expected {self.device}"
            err, ok, note = self.compare(got, self.eager(model, inputs), tol)
            if not ok:
                return err, False, f"batch {batch}: {note}"
            worst = max(worst, err)
            notes.append(str(batch))
        return worst, True, "batch " + ",".join(notes) if len(batches) > 1 else ""

    # ---- checks ------------------------------------------------------------------------------

    def check_variant(self, name, model, pkg: Path, make, batches, tol) -> Path | None:
        from kiln.runtime import Module

        facts = self.packages[name]
        program = self.work / f"{name}.kiln"
        rep = self.report
        imported = {}

        def package_layout():
            files = facts["kernel_files"]
            meta = facts.get("wrapper_metadata", {})
            notes = [f"{len(files)} kernel file(s)", f"AOTI_COMPUTE_CAPABILITY={meta.get('AOTI_COMPUTE_CAPABILITY')}"]
            if meta.get("AOTI_DEVICE_KEY") != self.device:
                return None, False, f"AOTI_DEVICE_KEY {meta.get('AOTI_DEVICE_KEY')!r}"
            if self.device == "cuda":
                major, minor = self.torch.cuda.get_device_capability()
                if meta.get("AOTI_COMPUTE_CAPABILITY") != f"{major}{minor}":
                    return None, False, f"AOTI_COMPUTE_CAPABILITY {meta.get('AOTI_COMPUTE_CAPABILITY')!r}"
                embedded = facts["inductor_configs"].get("aot_inductor.embed_kernel_binary") is True
                if embedded and (files or facts.get("load_kernel_from_file")):
                    return None, False, f"embed_kernel_binary=True yet kernel files {files}"
                if not embedded and not files:
                    return None, False, "kernels are not embedded yet the package has no kernel files"
            if name == "half_mm" and not any(re.search(r"_(add)?mm_out$", c) for c in facts.get("fallback_calls", [])):
                return None, False, f"no mm/addmm fallback in the wrapper ({facts.get('fallback_calls')})"
            return None, True, "; ".join(notes)

        rep.guarded(name, "package layout", package_layout)

        def do_import():
            proc = self.cli_run("import", pkg, "-o", program)
            if proc.returncode != 0:
                return None, False, f"kiln import exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
            doc = json.loads(self.cli_run("inspect", program, "--json", "--verify").stdout)
            (method,) = doc["methods"]
            imported.update(method)
            meta = method["metadata"]
            (self.out / f"{name}.inspect.json").write_text(json.dumps(doc, indent=1))
            if method["device"] != self.device:
                return None, False, f"device {method['device']}"
            shims = [s for s in meta.get("shim_imports", "").split(",") if s]
            supported = set()
            for f in ("supported_shims.txt", "supported_cuda_shims.txt"):
                supported |= {ln.strip() for ln in (REPO / "python" / "kiln" / f).read_text().splitlines()
                              if ln.strip() and not ln.startswith("#")}
            missing = [s for s in shims if s not in supported]
            if missing:
                return None, False, f"imports shims Kiln lacks: {missing}"
            fallbacks = [s for s in shims if re.search(r"_(add|b)?mm_out$", s)]
            if name == "half_mm" and not fallbacks:
                return None, False, f"no (add)mm fallback import ({shims})"
            kernels = [k for k in meta.get("kernel_files", "").split(",") if k]
            if len(kernels) != len(facts["kernel_files"]):
                return None, False, f"kernel_files {kernels} for package kernel files {facts['kernel_files']}"
            want_weights = facts["inductor_configs"].get("aot_inductor.package_constants_in_so") is False
            if bool(method["weights_key"]) != want_weights:
                return None, False, f"weights_key {method['weights_key']!r}"
            if "unknown_outputs" in meta:
                return None, False, f"outputs not inferred: {meta['unknown_outputs']}"
            ins = ", ".join(t["shape"] for t in method["inputs"])
            outs = ", ".join(t["shape"] for t in method["outputs"])
            return None, True, f"({ins}) -> ({outs}); fallbacks {fallbacks or '-'}; {len(kernels)} kernel file(s)"

        rep.guarded(name, "kiln import", do_import)
        if not program.exists():
            return None

        def module_kiln(host: bool):
            def run():
                m = Module(program)
                try:
                    m.load()
                    return self.run_module(m, model, make, batches, tol, seed=1000, host=host)
                finally:
                    m.close()
            return run

        rep.guarded(name, ".kiln Module host in/out", module_kiln(True))
        rep.guarded(name, ".kiln Module device in/out", module_kiln(False))

        if self.device == "cuda":
            def graphs():
                m = Module(program)
                try:
                    m.load({"aoti": {"cuda_graphs": True}})
                    worst = 0.0
                    for rnd in range(3):  # warm-up, record, replay
                        err, ok, note = self.run_module(m, model, make, batches, tol, seed=2000 + 10 * rnd,
                                                        host=False, poison=False)
                        if not ok:
                            return err, ok, f"round {rnd}: {note}"
                        worst = max(worst, err)
                    return worst, True, "3 rounds"
                finally:
                    m.close()

            rep.guarded(name, ".kiln Module cuda_graphs", graphs)

        if facts["kernel_files"]:
            def kernel_directory():
                before = set(kernel_dirs(self.work / "tmp"))
                m = Module(program)
                try:
                    m.load()
                    err, ok, note = self.run_module(m, model, make, batches[:1], tol, seed=3000, host=False,
                                                    poison=False)
                    if not ok:
                        return err, ok, note
                    during = set(kernel_dirs(self.work / "tmp")) - before
                    if len(during) != 1:
                        return None, False, f"{len(during)} kernel directories while loaded"
                    (d,) = during
                    names = sorted(p.name for p in d.iterdir())
                    want = sorted(Path(f).name for f in facts["kernel_files"])
                    if names != want:
                        return None, False, f"directory holds {names}, package {want}"
                    stale = [p for p in facts.get("load_kernel_from_file", []) if os.path.exists(p)]
                    if stale:
                        return None, False, f"compile-time kernel paths still exist: {stale}"
                finally:
                    m.close()
                if d.exists():
                    return None, False, f"{d} outlived the module"
                return None, True, f"{len(names)} file(s) in {d.name}, removed at close"

            rep.guarded(name, "kernel directory", kernel_directory)

        def cli_on_pt2():
            import numpy as np

            torch = self.torch
            batch = batches[len(batches) // 2]
            inputs = make(batch, torch.Generator().manual_seed(4000))
            files = []
            for i, t in enumerate(inputs):
                f = self.work / f"{name}_in{i}.npy"
                np.save(f, t.cpu().numpy())
                files += ["--input", f]
            out_dir = self.work / f"{name}_cli_out"
            shutil.rmtree(out_dir, ignore_errors=True)
            proc = self.cli_run("run", pkg, *files, "--output-dir", out_dir, "--repeat", "3")
            if proc.returncode != 0:
                return None, False, f"kiln run exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
            want = self.eager(model, inputs)
            got = [np.load(next(out_dir.glob(f"out_{i}_*.npy"))) for i in range(len(want))]
            err, ok, note = self.compare(got, want, tol)
            return err, ok, note or f"batch {batch}"

        rep.guarded(name, "kiln run .pt2", cli_on_pt2)

        def module_pt2():
            m = Module(pkg)
            try:
                m.load()
                e1, ok1, n1 = self.run_module(m, model, make, batches, tol, seed=5000, host=True)
                if not ok1:
                    return e1, ok1, "host: " + n1
                e2, ok2, n2 = self.run_module(m, model, make, batches, tol, seed=6000, host=False)
                return max(e1, e2 if e2 is not None else 0.0), ok2, ("device: " + n2) if not ok2 else "host + device"
            finally:
                m.close()

        rep.guarded(name, ".pt2 Module host+device", module_pt2)
        return program

    def check_libtorch_refused(self, pkg: Path) -> None:
        from kiln.runtime import KilnError, Module

        def refused():
            facts = self.packages["libtorch"]
            proc = self.cli_run("import", pkg, "-o", self.work / "libtorch.kiln")
            if proc.returncode != 1:
                return None, False, f"kiln import exit {proc.returncode} (expected 1)"
            for text in ("compiled against libtorch", REEXPORT_HINT):
                if text not in proc.stderr:
                    return None, False, f"kiln import message lacks {text!r}"
            if (self.work / "libtorch.kiln").exists():
                return None, False, "a program was written"
            try:
                Module(pkg).method_names()
            except KilnError as e:
                if e.status != "NotSupported" or REEXPORT_HINT not in e.message:
                    return None, False, f"Module: {e}"
                needed = facts.get("wrapper_metadata", {}).get("AOTI_DEVICE_KEY")
                return None, True, f"{needed} package refused with the re-export hint (CLI and Module)"
            return None, False, "Module loaded a libtorch-linked package"

        self.report.guarded("libtorch", "import + Module refused", refused)

    def check_arch_refused(self, pkg: Path, program: Path | None) -> None:
        """A library for an architecture this host lacks is refused at load, naming both: on CUDA
        the compute capability (AOTI_COMPUTE_CAPABILITY, no PTX), on CPU the machine."""
        from kiln import program as kp
        from kiln.runtime import KilnError, Module

        if self.device == "cuda":
            major, minor = self.torch.cuda.get_device_capability()
            real = f"{major}{minor}"
            fake = "100" if real != "100" else "80"
            key, names = "AOTI_COMPUTE_CAPABILITY", (f"sm_{fake}", f"sm_{real}")
        else:
            real = platform.machine()
            fake = "aarch64" if real != "aarch64" else "x86_64"
            key, names = "AOTI_MACHINE", (fake, real)

        def expect_refused(path: Path, how: str):
            m = Module(path)
            try:
                m.load()  # maps the program; the checks run when the method loads
                m.load_method("forward")
            except KilnError as e:
                missing = [n for n in names if n not in e.message]
                if e.status != "NotSupported" or missing:
                    return None, False, f"{how}: {e.status}: {e.message[:200]} (lacks {missing})"
                log(f"{how}: refused as expected: {e.message}")
                return None, True, f"{key}={fake} refused naming {' and '.join(names)}"
            finally:
                m.close()
            return None, False, f"{how}: {key}={fake} loaded"

        def kiln_file():
            if program is None:
                return None, False, "no imported program"
            loaded = kp.load(program)
            (method,) = loaded.methods
            if method.metadata.get(key) != real:
                return None, False, f"{key} is {method.metadata.get(key)!r}, expected {real!r}"
            method.metadata[key] = fake
            patched = self.work / "arch_patched.kiln"
            loaded.save(patched)
            return expect_refused(patched, ".kiln")

        def pt2_file():
            patched = self.work / "arch_patched.pt2"
            rewrite_metadata(pkg, patched, {key: fake})
            return expect_refused(patched, ".pt2")

        self.report.guarded("blob_embed", f"{key} mismatch .kiln", kiln_file)
        self.report.guarded("blob_embed", f"{key} mismatch .pt2", pt2_file)


def kernel_dirs(tmp: Path) -> list[Path]:
    return [p for p in tmp.iterdir() if p.name.startswith("kiln_kernels_")] if tmp.exists() else []


def rewrite_metadata(src: Path, dst: Path, changes: dict[str, str]) -> None:
    """Copies a .pt2 with keys of its *.wrapper_metadata.json changed; entries stay stored."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".wrapper_metadata.json"):
                meta = json.loads(data)
                meta.update(changes)
                data = json.dumps(meta).encode()
            zout.writestr(info.filename, data, compress_type=zipfile.ZIP_STORED)


if __name__ == "__main__":
    sys.exit(main())
