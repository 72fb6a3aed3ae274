"""CpuBackend: AOTInductor for the host CPU.

Besides compiling, it records what limits where the library can run: the vector ISA
AOTInductor picked, the compiler and its -march, the newest glibc symbol version the
library needs, its DT_NEEDED libraries and any OpenMP thread count baked into kernels.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from kiln.exporter.backends.aoti import AotiBackend, _read_aoti_metadata
from kiln.exporter.elf_imports import ElfError, ElfImports, max_version, read_elf_imports

__all__ = ["CpuBackend", "baked_omp_threads", "compile_command_from_source", "ensure_vec_isa"]

_COMPILE_CMD = re.compile(r"^//\s*Compile cmd\s*\n//\s*(.+)$", re.MULTILINE)
_NUM_THREADS = re.compile(r"#pragma\s+omp\s+parallel[^\n]*num_threads\((\d+)\)")


def compile_command_from_source(source: str) -> list[str] | None:
    """The compile command inductor records at the end of the generated wrapper .cpp."""
    m = _COMPILE_CMD.search(source)
    if not m:
        return None
    try:
        return shlex.split(m.group(1))
    except ValueError:
        return m.group(1).split()


def baked_omp_threads(sources: list[str]) -> int | None:
    """Largest ``num_threads(N)`` in the kernels: inductor bakes the compile machine's core
    count into its OpenMP pragmas, which caps parallelism on a bigger machine."""
    counts = [int(n) for s in sources for n in _NUM_THREADS.findall(s)]
    return max(counts) if counts else None


def _clear_vec_isa_caches(mod) -> None:
    """Forgets inductor's in-process memo of which vector ISAs work (functools caches)."""
    for obj in list(vars(mod).values()):
        if hasattr(obj, "cache_clear"):
            obj.cache_clear()
        if isinstance(obj, type):
            for attr in vars(obj).values():
                if hasattr(attr, "cache_clear"):
                    attr.cache_clear()


def _poisoned_vec_isa_probes(mod, root: str) -> list[str]:
    """Cached ISA probe libraries that can never load: built without libtorch (under
    aot_inductor.link_libtorch=False) while importing Sleef_* that only libtorch_cpu has."""
    code = mod.VecISA._avx_code.encode()
    bad = []
    for cpp in glob.glob(os.path.join(root, "*", "*.cpp")):
        try:
            if os.path.getsize(cpp) != len(code) or Path(cpp).read_bytes() != code:
                continue
        except OSError:
            continue
        so = cpp[: -len(".cpp")] + ".so"
        if not os.path.isfile(so):
            continue
        try:
            imports = read_elf_imports(so)
        except (OSError, ElfError):
            continue
        needs_sleef = any(n.startswith("Sleef_") for n in imports.names())
        has_torch = any(lib.startswith("libtorch") for lib in imports.needed)
        if needs_sleef and not has_torch:
            bad.append(so)
    return bad


def ensure_vec_isa(progress=None) -> str:
    """Makes inductor's vector-ISA detection run with libtorch linked; returns the ISA.

    torch 2.11 probes each ISA by compiling a tiny library and loading it.  If the first
    probe in a cache directory happens inside a compile with
    aot_inductor.link_libtorch=False (exactly Kiln's options), the probe is linked
    without libtorch, fails to load (undefined Sleef_* symbols), the ISA is deemed
    unusable, and that broken probe stays cached on disk: every later compile using the
    cache directory (Kiln's, torch.compile's) silently emits scalar code
    (AOTI_CPU_ISA=INVALID_VEC_ISA).  This probes first with libtorch linked, and removes
    provably broken cached probes (see _poisoned_vec_isa_probes) so they are rebuilt.
    """
    try:
        import torch._inductor.config as config
        import torch._inductor.cpu_vec_isa as mod
        from torch._inductor.runtime.cache_dir_utils import cache_dir
    except ImportError:  # inductor internals moved: keep whatever inductor decides
        return ""
    with config.patch({"aot_inductor.link_libtorch": True}):
        isa = mod.pick_vec_isa()
        if isa or not mod.x86_isa_checker():
            return str(isa) if isa else ""
        removed = []
        for so in _poisoned_vec_isa_probes(mod, cache_dir()):
            try:
                os.remove(so)
                removed.append(so)
            except OSError:
                pass
        if removed:
            _clear_vec_isa_caches(mod)
            isa = mod.pick_vec_isa()
            if progress is not None:
                progress.note(
                    f"removed {len(removed)} broken cached vector-ISA probe(s) from {cache_dir()}; "
                    f"vector ISA now {str(isa) if isa else 'none'}"
                )
    if not isa and progress is not None:
        progress.note("warning: AOTInductor found no usable vector ISA on this CPU; kernels will be scalar")
    return str(isa) if isa else ""


def _compiler_version(compiler: str) -> str:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = (out.stdout or out.stderr).splitlines()
    return lines[0].strip() if lines else ""


class CpuBackend(AotiBackend):
    DEVICE = "cpu"

    def aoti_compile_options(self, compile_specs: dict[str, Any]) -> dict[str, Any]:
        return {
            **super().aoti_compile_options(compile_specs),
            # Kernels open `#pragma omp parallel` without num_threads(N) and size their
            # per-thread buffers with omp_get_max_threads(), so the thread count is the
            # runtime's choice (aoti.num_threads), not the export machine's core count.
            "cpp.dynamic_threads": True,
        }

    def prepare_program(self, ep, compile_specs: dict[str, Any]):
        from kiln.exporter.passes.conv_weight_layout import conv_weights_channels_last

        ensure_vec_isa(self.progress)
        # The compiled code reads convolution weights channels-last: stored so, it reads them in place.
        return conv_weights_channels_last(ep, log=self.progress.note)

    def library_metadata(self, out_dir: str, so_path: str, imports: ElfImports, compile_specs: dict[str, Any]) -> dict[str, str]:
        meta: dict[str, str] = {}
        isa = _read_aoti_metadata(out_dir).get("AOTI_CPU_ISA")
        if isa is not None:
            # The vector ISA the kernels were generated for (INVALID_VEC_ISA: scalar code).
            meta["cpu_isa"] = str(isa)
        wrapper_cpp = [p for p in glob.glob(os.path.join(out_dir, "*.wrapper.cpp"))]
        sources = [Path(p).read_text(errors="replace") for p in glob.glob(os.path.join(out_dir, "**", "*.cpp"), recursive=True)]
        cmd = compile_command_from_source(Path(wrapper_cpp[0]).read_text(errors="replace")) if wrapper_cpp else None
        compiler = cmd[0] if cmd else None
        if compiler is None:
            try:
                from torch._inductor.cpp_builder import get_cpp_compiler

                compiler = get_cpp_compiler()
            except Exception:  # inductor internals move between releases; metadata is best-effort
                compiler = None
        if compiler:
            meta["compiler"] = compiler
            version = _compiler_version(compiler)
            if version:
                meta["compiler_version"] = version
        if cmd:
            march = [a.split("=", 1)[1] for a in cmd if a.startswith("-march=")]
            if march:
                # -march=native ties the library to CPUs with the compile machine's ISA.
                meta["compiler_march"] = march[-1]
            meta["openmp"] = "1" if any(a in ("-fopenmp", "-lgomp", "-lomp") for a in cmd) else "0"
        glibc = max_version(imports.version_needs, "GLIBC_")
        if glibc:
            meta["glibc_required"] = glibc.removeprefix("GLIBC_")
        glibcxx = max_version(imports.version_needs, "GLIBCXX_")
        if glibcxx:
            meta["glibcxx_required"] = glibcxx.removeprefix("GLIBCXX_")
        meta["needed_libraries"] = ",".join(imports.needed)
        threads = baked_omp_threads(sources)
        if threads is not None:
            meta["omp_num_threads_baked"] = str(threads)
        return meta
