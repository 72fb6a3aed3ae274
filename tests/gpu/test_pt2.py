"""Stock PyTorch .pt2 packages on a GPU: small models compiled with
torch._inductor.aoti_compile_and_package (pt2_check.variants: weights in a blob with kernels
embedded, weights in the library with kernels as files, a float16 model with cuBLAS matmul
fallbacks, and a libtorch-linked package), each run through `kiln import` + kiln.runtime.Module
(host and device inputs, CUDA graphs), `kiln run` on the .pt2 and Module on the .pt2 path, and
compared with eager on fresh random inputs; then the refusals: the libtorch-linked package, and
a compute capability (CUDA) or machine (CPU) Kiln's host lacks, for the imported .kiln and for
the .pt2, naming both.

Table gpu_pt2 (the facts of each package are in its JSON). KILN_GPU_DEVICE=cpu runs the same
steps with CPU packages and a CPU build.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

import gpu_support
import pt2_check
from kiln import program as kp
from kiln.runtime import KilnError, Module

DEVICE = gpu_support.DEVICE
SECTION = gpu_support.section("gpu_pt2", gpu_support.check_table("Stock .pt2 packages: import, run, refusals"))


@dataclass
class Pt2:
    work: Path
    cli: str
    packages: dict[str, dict]  # name -> facts (pt2_check.compile_packages)

    def facts(self, name: str) -> dict:
        facts = self.packages[name]
        if "error" in facts:
            pytest.fail(f"{name} did not compile: {facts['error']}", pytrace=False)
        return facts

    def cli_run(self, *args, timeout=240) -> subprocess.CompletedProcess:
        cmd = [self.cli, *map(str, args)]
        pt2_check.log("$ " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.stdout.strip():
            pt2_check.log("  stdout: " + proc.stdout.strip().replace("\n", "\n  stdout: "))
        if proc.stderr.strip():
            pt2_check.log("  stderr: " + proc.stderr.strip().replace("\n", "\n  stderr: "))
        return proc


@pytest.fixture(scope="module")
def pt2(tmp_path_factory):
    cli = gpu_support.build_file("kiln", "the kiln CLI")
    work = tmp_path_factory.mktemp("pt2")
    (work / "tmp").mkdir()
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        packages = pool.submit(pt2_check.compile_packages, DEVICE, str(work)).result()
    SECTION.extra.update(packages=packages, machine=platform.machine(), torch_cuda=torch.version.cuda, cli=str(cli),
                         kiln_library=os.environ.get("KILN_LIBRARY"))
    if DEVICE == "cuda":
        SECTION.extra["compute_capability"] = "".join(map(str, torch.cuda.get_device_capability()))
    # Kiln writes a package's kernel files to a directory under TMPDIR while its method is loaded
    # (the CLI's too): a directory of its own, to see them come and go.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(work / "tmp"))
        yield Pt2(work, str(cli), packages)


@pytest.fixture(scope="module")
def imported(pt2):
    """name -> (the .kiln `kiln import` made of the package or None, its method as `kiln inspect
    --json` shows it, or why there is none), imported once."""
    done = {}

    def get(name: str):
        if name not in done:
            pt2.facts(name)
            program = pt2.work / f"{name}.kiln"
            proc = pt2.cli_run("import", pt2.work / f"{name}.pt2", "-o", program)
            if proc.returncode != 0:
                done[name] = (None, f"kiln import exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            else:
                doc = json.loads(pt2.cli_run("inspect", program, "--json", "--verify").stdout)
                if gpu_support.out_dir():
                    (gpu_support.out_dir() / f"{name}.inspect.json").write_text(json.dumps(doc, indent=1))
                (method,) = doc["methods"]
                done[name] = (program, method)
        return done[name]

    return get


def program_of(imported, name: str) -> Path:
    program, why = imported(name)
    if program is None:
        pytest.fail(f"no imported program: {why}", pytrace=False)
    return program


def check(variant: str, path: str, fn) -> None:
    gpu_support.checked(SECTION, f"{variant:<12} {path}", fn)


def variant_model(pt2: Pt2, name: str):
    """(eager model, inputs(batch, generator), batches, tolerance) of a compiled variant."""
    pt2.facts(name)
    _, _, _, _, make, batches, tol = pt2_check.variants(DEVICE)[name]
    return pt2_check.model(name, DEVICE, pt2.work), make, batches, tol


# ---- each package ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", pt2_check.VARIANTS)
def test_package_layout(pt2, name):
    facts = pt2.facts(name)

    def layout():
        files = facts["kernel_files"]
        meta = facts.get("wrapper_metadata", {})
        notes = [f"{len(files)} kernel file(s)", f"AOTI_COMPUTE_CAPABILITY={meta.get('AOTI_COMPUTE_CAPABILITY')}"]
        if meta.get("AOTI_DEVICE_KEY") != DEVICE:
            return None, False, f"AOTI_DEVICE_KEY {meta.get('AOTI_DEVICE_KEY')!r}"
        if DEVICE == "cuda":
            major, minor = torch.cuda.get_device_capability()
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

    check(name, "package layout", layout)


@pytest.mark.parametrize("name", pt2_check.VARIANTS)
def test_kiln_import(pt2, imported, name):
    facts = pt2.facts(name)

    def do_import():
        program, method = imported(name)
        if program is None:
            return None, False, method
        meta = method["metadata"]
        if method["device"] != DEVICE:
            return None, False, f"device {method['device']}"
        shims = [s for s in meta.get("shim_imports", "").split(",") if s]
        from kiln.exporter.backends.aoti import load_supported_shims

        supported = load_supported_shims()
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

    check(name, "kiln import", do_import)


@pytest.mark.parametrize("host", [True, False], ids=["host", "device"])
@pytest.mark.parametrize("name", pt2_check.VARIANTS)
def test_imported_program_runs(pt2, imported, name, host):
    model, make, batches, tol = variant_model(pt2, name)
    program = program_of(imported, name)

    def run():
        m = Module(program)
        try:
            m.load()
            return pt2_check.run_module(m, model, make, batches, tol, seed=1000, host=host, device=DEVICE)
        finally:
            m.close()

    check(name, f".kiln Module {'host' if host else 'device'} in/out", run)


@gpu_support.cuda_only
@pytest.mark.parametrize("name", pt2_check.VARIANTS)
def test_imported_program_runs_with_cuda_graphs(pt2, imported, name):
    model, make, batches, tol = variant_model(pt2, name)
    program = program_of(imported, name)

    def graphs():
        m = Module(program)
        try:
            m.load({"aoti": {"cuda_graphs": True}})
            worst = 0.0
            for rnd in range(3):  # warm-up, record, replay
                err, ok, note = pt2_check.run_module(m, model, make, batches, tol, seed=2000 + 10 * rnd, host=False,
                                                     device=DEVICE, poison=False)
                if not ok:
                    return err, ok, f"round {rnd}: {note}"
                worst = max(worst, err)
            return worst, True, "3 rounds"
        finally:
            m.close()

    check(name, ".kiln Module cuda_graphs", graphs)


@pytest.mark.parametrize("name", pt2_check.VARIANTS)
def test_kernel_directory_lives_as_long_as_the_module(pt2, imported, name):
    facts = pt2.facts(name)
    if not facts["kernel_files"]:
        pytest.skip(f"{name}: the package has no kernel files")
    model, make, batches, tol = variant_model(pt2, name)
    program = program_of(imported, name)
    tmp = pt2.work / "tmp"

    def kernel_directory():
        before = set(pt2_check.kernel_dirs(tmp))
        m = Module(program)
        try:
            m.load()
            err, ok, note = pt2_check.run_module(m, model, make, batches[:1], tol, seed=3000, host=False,
                                                 device=DEVICE, poison=False)
            if not ok:
                return err, ok, note
            during = set(pt2_check.kernel_dirs(tmp)) - before
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

    check(name, "kernel directory", kernel_directory)


@pytest.mark.parametrize("name", pt2_check.VARIANTS)
def test_kiln_run_on_the_pt2(pt2, name):
    model, make, batches, tol = variant_model(pt2, name)
    pkg = pt2.work / f"{name}.pt2"

    def cli_on_pt2():
        batch = batches[len(batches) // 2]
        inputs = make(batch, torch.Generator().manual_seed(4000))
        files = []
        for i, t in enumerate(inputs):
            f = pt2.work / f"{name}_in{i}.npy"
            np.save(f, t.cpu().numpy())
            files += ["--input", f]
        out_dir = pt2.work / f"{name}_cli_out"
        shutil.rmtree(out_dir, ignore_errors=True)
        proc = pt2.cli_run("run", pkg, *files, "--output-dir", out_dir, "--repeat", "3")
        if proc.returncode != 0:
            return None, False, f"kiln run exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
        want = pt2_check.eager(model, inputs)
        got = [np.load(next(out_dir.glob(f"out_{i}_*.npy"))) for i in range(len(want))]
        err, ok, note = pt2_check.compare(got, want, tol)
        return err, ok, note or f"batch {batch}"

    check(name, "kiln run .pt2", cli_on_pt2)


@pytest.mark.parametrize("name", pt2_check.VARIANTS)
def test_module_on_the_pt2(pt2, name):
    model, make, batches, tol = variant_model(pt2, name)
    pkg = pt2.work / f"{name}.pt2"

    def module_pt2():
        m = Module(pkg)
        try:
            m.load()
            e1, ok1, n1 = pt2_check.run_module(m, model, make, batches, tol, seed=5000, host=True, device=DEVICE)
            if not ok1:
                return e1, ok1, "host: " + n1
            e2, ok2, n2 = pt2_check.run_module(m, model, make, batches, tol, seed=6000, host=False, device=DEVICE)
            return max(e1, e2 if e2 is not None else 0.0), ok2, ("device: " + n2) if not ok2 else "host + device"
        finally:
            m.close()

    check(name, ".pt2 Module host+device", module_pt2)


# ---- refusals ----------------------------------------------------------------------------------


def test_libtorch_package_is_refused(pt2):
    facts = pt2.facts("libtorch")
    pkg = pt2.work / "libtorch.pt2"

    def refused():
        proc = pt2.cli_run("import", pkg, "-o", pt2.work / "libtorch.kiln")
        if proc.returncode != 1:
            return None, False, f"kiln import exit {proc.returncode} (expected 1)"
        for text in ("compiled against libtorch", pt2_check.REEXPORT_HINT):
            if text not in proc.stderr:
                return None, False, f"kiln import message lacks {text!r}"
        if (pt2.work / "libtorch.kiln").exists():
            return None, False, "a program was written"
        try:
            Module(pkg).method_names()
        except KilnError as e:
            if e.status != "NotSupported" or pt2_check.REEXPORT_HINT not in e.message:
                return None, False, f"Module: {e}"
            needed = facts.get("wrapper_metadata", {}).get("AOTI_DEVICE_KEY")
            return None, True, f"{needed} package refused with the re-export hint (CLI and Module)"
        return None, False, "Module loaded a libtorch-linked package"

    check("libtorch", "import + Module refused", refused)


def _foreign_architecture() -> tuple[str, str, str, tuple[str, str]]:
    """(metadata key, this host's value, another one, the names a refusal must give)."""
    if DEVICE == "cuda":
        major, minor = torch.cuda.get_device_capability()
        real = f"{major}{minor}"
        fake = "100" if real != "100" else "80"
        return "AOTI_COMPUTE_CAPABILITY", real, fake, (f"sm_{fake}", f"sm_{real}")
    real = platform.machine()
    fake = "aarch64" if real != "aarch64" else "x86_64"
    return "AOTI_MACHINE", real, fake, (fake, real)


@pytest.mark.parametrize("kind", ["kiln", "pt2"])
def test_a_library_for_another_architecture_is_refused(pt2, imported, kind):
    """A library for an architecture this host lacks is refused at load, naming both: on CUDA the
    compute capability (AOTI_COMPUTE_CAPABILITY, no PTX), on CPU the machine."""
    pt2.facts("blob_embed")
    key, real, fake, names = _foreign_architecture()

    def expect_refused(path: Path, how: str):
        m = Module(path)
        try:
            m.load()  # maps the program; the checks run when the method loads
            m.load_method("forward")
        except KilnError as e:
            missing = [n for n in names if n not in e.message]
            if e.status != "NotSupported" or missing:
                return None, False, f"{how}: {e.status}: {e.message[:200]} (lacks {missing})"
            pt2_check.log(f"{how}: refused as expected: {e.message}")
            return None, True, f"{key}={fake} refused naming {' and '.join(names)}"
        finally:
            m.close()
        return None, False, f"{how}: {key}={fake} loaded"

    def kiln_file():
        program, why = imported("blob_embed")
        if program is None:
            return None, False, f"no imported program: {why}"
        loaded = kp.load(program)
        (method,) = loaded.methods
        if method.metadata.get(key) != real:
            return None, False, f"{key} is {method.metadata.get(key)!r}, expected {real!r}"
        method.metadata[key] = fake
        patched = pt2.work / "arch_patched.kiln"
        loaded.save(patched)
        return expect_refused(patched, ".kiln")

    def pt2_file():
        patched = pt2.work / "arch_patched.pt2"
        pt2_check.rewrite_metadata(pt2.work / "blob_embed.pt2", patched, {key: fake})
        return expect_refused(patched, ".pt2")

    check("blob_embed", f"{key} mismatch .{kind}", kiln_file if kind == "kiln" else pt2_file)
