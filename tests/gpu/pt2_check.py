"""Stock PyTorch .pt2 packages for tests/gpu/test_pt2.py: the variants, compiling them, and
running and comparing a Kiln module against eager.

Packages are compiled by compile_packages() in a process of their own: Inductor's and Triton's
caches must live in a private directory (removed after compiling, so that a kernel file a
library reads at run time can only come from the directory Kiln writes), and Triton and
Inductor's compile workers take their cache location once per process. This module imports no
torch at its top, so that the compiling process can set those locations first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

FP32_TOL = 1e-5
HALF_TOL = 2e-2

NO_LIBTORCH = {"aot_inductor.link_libtorch": False}
BLOB = {"aot_inductor.package_constants_in_so": False, "aot_inductor.package_constants_on_disk_format": "binary_blob"}
KERNEL_SUFFIXES = (".cubin", ".fatbin", ".ptx", ".hsaco", ".spv")
REEXPORT_HINT = '"aot_inductor.link_libtorch": False'
VARIANTS = ("blob_embed", "inso_files", "half_mm")


def log(message: str) -> None:
    print(f"[kiln gpu pt2] {message}", flush=True)


def variants(device: str) -> dict:
    """name -> (model factory, example inputs, dynamic shapes, inductor configs, inputs(batch,
    generator), batch sizes to run, tolerance), and the libtorch-linked package (compiled with
    torch's defaults, to be refused)."""
    import torch
    from pt2_models import HalfMatmul, IntIndex, TwoOutputs

    kernel_files_cfg = {} if device == "cpu" else {"aot_inductor.embed_kernel_binary": False}
    embed_cfg = {} if device == "cpu" else {"aot_inductor.embed_kernel_binary": True}
    half = torch.float16

    def blob_inputs(batch, g):
        return (torch.randn(batch, 16, generator=g).to(device), torch.randn(8, generator=g).to(device))

    def inso_inputs(batch, g):
        return (torch.randn(3, 6, generator=g).to(device),
                torch.randint(0, 10, (4,), generator=g, dtype=torch.int64).to(device))

    def half_inputs(batch, g):
        return (torch.randn(batch, 64, generator=g).to(device=device, dtype=half),)

    return {
        # blob_embed: link_libtorch=False, weights in a binary blob, kernels embedded in the
        # library (embed_kernel_binary=True), dynamic batch, two outputs
        "blob_embed": (TwoOutputs, blob_inputs(4, torch.Generator().manual_seed(0)),
                       ({0: torch.export.Dim("batch", min=2, max=64)}, None), {**NO_LIBTORCH, **BLOB, **embed_cfg},
                       blob_inputs, (2, 7, 64), FP32_TOL),
        # inso_files: link_libtorch=False, weights inside the library, kernels as separate files in
        # the package (embed_kernel_binary=False), an int64 input
        "inso_files": (IntIndex, inso_inputs(0, torch.Generator().manual_seed(0)), None,
                       {**NO_LIBTORCH, **kernel_files_cfg}, inso_inputs, (0,), FP32_TOL),
        # half_mm: float16 model whose matmuls are cuBLAS fallbacks (aoti_torch_<dev>_addmm_out /
        # mm_out), weights in a blob, torch's default kernel packaging
        "half_mm": (lambda: HalfMatmul().to(half), half_inputs(8, torch.Generator().manual_seed(0)),
                    ({0: torch.export.Dim("batch", min=2, max=256)},), {**NO_LIBTORCH, **BLOB}, half_inputs,
                    (3, 8, 200), HALF_TOL),
        # libtorch: torch's defaults (linked against libtorch), refused with the re-export hint
        "libtorch": (IntIndex, inso_inputs(0, torch.Generator().manual_seed(1)), None, {}, inso_inputs, (0,), FP32_TOL),
    }


def _seed(name: str) -> int:
    return 200 if name == "libtorch" else 100 + VARIANTS.index(name)


def model(name: str, device: str, work: Path):
    """The eager model of variant `name`, with the weights its package was compiled with."""
    import torch

    factory = variants(device)[name][0]
    m = factory()
    m.load_state_dict(torch.load(work / f"{name}.pt", map_location="cpu"))
    return m.to(device).eval()


def compile_packages(device: str, work: str) -> dict[str, dict]:
    """Compiles every variant to <work>/<name>.pt2 (weights also to <name>.pt) with its inductor
    configs, in a compile cache under <work> that is removed afterwards, with the kernel files
    the libraries name by compile-time path. Returns name -> facts about the package (configs,
    files, wrapper metadata, fallback calls, kernels loaded from files or embedded), or
    {"error": ...} for a variant that did not compile. Run it in a process of its own."""
    work = Path(work)
    cache = work / "compile-cache"
    # Before torch is imported in this process: Triton and Inductor read these once. The
    # compile's own temporary files go under <work> too.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(cache / "triton")
    os.environ["TMPDIR"] = str(work / "tmp")
    tempfile.tempdir = None
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # Inductor bakes the flag into Triton matmul templates
    torch.backends.cudnn.allow_tf32 = False
    packages = {}
    try:
        for name, (factory, example, dyn, cfg, _, _, _) in variants(device).items():
            torch.manual_seed(_seed(name))
            m = factory().eval()
            torch.save(m.state_dict(), work / f"{name}.pt")
            packages[name] = _compile(name, m.to(device), example, dyn, cfg, work / f"{name}.pt2")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    # From here on no compile-time file exists: kernels come from the programs only. The
    # libraries name their kernel files by compile-time path; those go too, wherever they are.
    for facts in packages.values():
        for f in facts.get("load_kernel_from_file", []):
            if os.path.isfile(f):
                log(f"removing compile-time kernel file outside the cache: {f}")
                os.remove(f)
    return packages


def _compile(name, model, example, dynamic_shapes, configs, path: Path) -> dict:
    import torch

    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            ep = torch.export.export(model, example, dynamic_shapes=dynamic_shapes)
            torch._inductor.aoti_compile_and_package(ep, package_path=str(path), inductor_configs=configs)
    except Exception as e:  # noqa: BLE001 - the variant's tests report it
        traceback.print_exc()
        return {"inductor_configs": configs, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    facts = {"inductor_configs": configs, "compile_s": round(time.perf_counter() - t0, 1), "path": str(path)}
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
    log(f"{name}: compiled in {facts['compile_s']} s with {configs}; package files:")
    for f, size in facts["files"]:
        log(f"    {size:>10}  {f}")
    log(f"{name}: fallback calls in the wrapper: {facts.get('fallback_calls')}; kernels loaded from files: "
        f"{facts.get('load_kernel_from_file')}; embedded: {facts.get('load_kernel_embedded')}")
    return facts


# ---- running and comparing -------------------------------------------------------------------


def eager(model, inputs) -> list:
    import torch

    with torch.no_grad():
        want = model(*inputs)
    return list(want) if isinstance(want, (tuple, list)) else [want]


def compare(got, want, tol) -> tuple[float | None, bool, str]:
    """Max over outputs of max|got - want| / max|want|; shapes and dtypes must match."""
    import numpy as np
    import torch

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


def poisoned(inputs) -> list:
    """The inputs with every float one NaN: run first, so that the blocks the next call's
    intermediates and outputs reuse hold NaN, and any element the library fails to write shows."""
    import torch

    return [torch.full_like(t, float("nan")) if t.is_floating_point() else t for t in inputs]


def run_module(module, model, make, batches, tol, seed, host: bool, device: str, poison: bool = True):
    """Runs `module` on fresh random inputs of each batch size; host: numpy in and out,
    else torch tensors on the device in and out (outputs must stay there)."""
    import torch

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    worst, notes = 0.0, []
    for k, batch in enumerate(batches):
        inputs = make(batch, torch.Generator().manual_seed(seed + k))
        sync()
        if poison:
            if host:
                module.forward(*(t.cpu().numpy() for t in poisoned(inputs)))
            else:
                module.forward(*poisoned(inputs), output="torch")
        if host:
            got = module.forward(*(t.cpu().numpy() for t in inputs))
        else:
            got = module.forward(*inputs, output="torch")
            sync()
            wrong = [str(g.device) for g in got if g.device.type != device]
            if wrong:
                return None, False, f"outputs on {wrong}, expected {device}"
        err, ok, note = compare(got, eager(model, inputs), tol)
        if not ok:
            return err, False, f"batch {batch}: {note}"
        worst = max(worst, err)
        notes.append(str(batch))
    return worst, True, "batch " + ",".join(notes) if len(batches) > 1 else ""


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
