"""Unit tests of the exporter's pieces that need no AOTInductor compile."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kiln.exporter import elf_imports
from kiln.exporter.backends import aoti as ab
from kiln.exporter.backends.aoti import UnsupportedKernelsError, check_shim_imports
from kiln.exporter.backends.cpu import CpuBackend, baked_omp_threads, compile_command_from_source
from kiln.exporter.backends.cuda import CudaBackend
from kiln.exporter.backends.metal import MetalBackend
from kiln.exporter.compile_specs import UnreadCompileSpecWarning, spec_bool, warn_unread_specs
from kiln.exporter.progress import Progress

REPO = Path(__file__).resolve().parents[2]


# ---- elf_imports -------------------------------------------------------------------------


def _nm_undefined(path: str) -> set[str]:
    nm = shutil.which("nm")
    assert nm, "binutils' nm is needed as the independent reference"
    out = subprocess.run([nm, "-D", "--undefined-only", path], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def _system_shared_library() -> str:
    # Any real, versioned shared library of the system works as a reference.
    for cand in ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libstdc++.so.6"):
        if os.path.exists(cand):
            return os.path.realpath(cand)
    import torch

    return os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.so")


def test_elf_imports_match_nm_on_a_system_library():
    lib = _system_shared_library()
    imports = elf_imports.read_elf_imports(lib)
    mine = {s.name + (f"@{s.version}" if s.version else "") for s in imports.undefined}
    assert mine == _nm_undefined(lib)
    assert len(mine) > 50
    assert "libc.so.6" in imports.needed


def test_elf_imports_reads_bytes_and_path_alike():
    lib = _system_shared_library()
    data = Path(lib).read_bytes()
    assert elf_imports.undefined_symbol_names(data) == elf_imports.undefined_symbol_names(lib)


def test_weak_binding_is_reported():
    lib = _system_shared_library()
    nm = subprocess.run(["nm", "-D", "--undefined-only", lib], capture_output=True, text=True, check=True).stdout
    weak_nm = {l.split()[-1].split("@")[0] for l in nm.splitlines() if l.split()[0] in ("w", "v")}
    weak_mine = {s.name for s in elf_imports.read_elf_imports(lib).undefined if s.weak}
    assert weak_mine == weak_nm


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "bad magic"),
        (b"MZ" + b"\0" * 100, "bad magic"),
        (b"\x7fELF\x01\x01\x01" + b"\0" * 100, "ELF64"),
        (b"\x7fELF\x02\x02\x01" + b"\0" * 100, "little-endian"),
    ],
)
def test_elf_imports_rejects_non_elf64le(data, message):
    with pytest.raises(elf_imports.ElfError, match=message):
        elf_imports.read_elf_imports(data)


def test_elf_imports_rejects_truncated_and_corrupt_files():
    data = Path(_system_shared_library()).read_bytes()
    with pytest.raises(elf_imports.ElfError):
        elf_imports.read_elf_imports(data[: len(data) // 3])  # section headers are at the end
    bad = bytearray(data)
    struct.pack_into("<Q", bad, 0x28, len(data) + 4096)  # e_shoff past the end
    with pytest.raises(elf_imports.ElfError, match="outside the file"):
        elf_imports.read_elf_imports(bytes(bad))


def test_max_version_compares_numerically():
    needs = {"libc.so.6": ["GLIBC_2.9", "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_PRIVATE"], "libm.so.6": ["GLIBC_2.29"]}
    assert elf_imports.max_version(needs, "GLIBC_") == "GLIBC_2.34"
    assert elf_imports.max_version({"libstdc++.so.6": ["GLIBCXX_3.4.9", "GLIBCXX_3.4.30"]}, "GLIBCXX_") == "GLIBCXX_3.4.30"
    assert elf_imports.max_version({}, "GLIBC_") is None


def test_max_glibc_of_a_system_library_matches_readelf():
    lib = _system_shared_library()
    out = subprocess.run(["readelf", "-V", "-W", lib], capture_output=True, text=True, check=True).stdout
    versions = re.findall(r"Name: (GLIBC_\d+(?:\.\d+)*)\b", out)
    expected = max(versions, key=lambda v: tuple(int(x) for x in v[6:].split(".")))
    assert elf_imports.max_version(elf_imports.read_elf_imports(lib).version_needs) == expected


# ---- supported shims and the fallback-kernel check ---------------------------------------


def test_supported_shims_file_parses(tmp_path):
    real = ab.load_supported_shims()
    assert "aoti_torch_empty_strided" in real
    assert all(n.startswith("aoti_torch_") and "#" not in n and " " not in n for n in real)
    f = tmp_path / "shims.txt"
    f.write_text("# comment\n\naoti_torch_a\n  aoti_torch_b  \n# aoti_torch_c\n")
    assert ab.load_supported_shims(f) == {"aoti_torch_a", "aoti_torch_b"}


def test_supported_fallback_kernels_are_filtered_by_device():
    names = [
        "aoti_torch_empty_strided",
        "aoti_torch_cpu_addmm_out",
        "aoti_torch_cuda_mm_out",
        "aoti_torch_mps_bmm_out",
        "aoti_torch_device_type_cuda",  # device-neutral despite naming a device
    ]
    assert CpuBackend(supported_shims=names).supported_fallback_kernels() == {
        "aoti_torch_empty_strided",
        "aoti_torch_cpu_addmm_out",
        "aoti_torch_device_type_cuda",
    }
    assert CudaBackend(supported_shims=names).supported_fallback_kernels() == {
        "aoti_torch_empty_strided",
        "aoti_torch_cuda_mm_out",
        "aoti_torch_device_type_cuda",
    }
    assert "aoti_torch_mps_bmm_out" in MetalBackend(supported_shims=names).supported_fallback_kernels()


def test_check_accepts_supported_and_ignores_non_shim_imports():
    got = check_shim_imports(
        "forward",
        ["memcpy", "aoti_torch_empty_strided", "_ZSt4cerr", "aoti_torch_cpu_addmm_out", "aoti_torch_empty_strided"],
        {"aoti_torch_empty_strided", "aoti_torch_cpu_addmm_out"},
        "cpu",
    )
    assert got == ["aoti_torch_cpu_addmm_out", "aoti_torch_empty_strided"]


def test_check_refuses_missing_shims_and_names_them():
    with pytest.raises(UnsupportedKernelsError) as info:
        check_shim_imports(
            "decode",
            ["aoti_torch_empty_strided", "aoti_torch_cpu_topk", "aoti_torch_cpu_sort_stable"],
            {"aoti_torch_empty_strided"},
            "cpu",
            source_lines={"aoti_torch_cpu_topk": "AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_topk(buf0, 5L, ...));"},
        )
    err = info.value
    assert isinstance(err, RuntimeError)
    assert err.method == "decode"
    assert err.missing == ["aoti_torch_cpu_sort_stable", "aoti_torch_cpu_topk"]
    msg = str(err)
    assert "'decode'" in msg and "aoti_torch_cpu_topk" in msg and "aoti_torch_cpu_sort_stable" in msg
    assert "aoti_torch_cpu_topk(buf0, 5L" in msg  # the wrapper line that uses it
    assert "aoti_torch_empty_strided" not in msg


def test_check_refuses_proxy_executor_even_if_listed():
    with pytest.raises(UnsupportedKernelsError, match="libtorch") as info:
        check_shim_imports(
            "forward",
            ["aoti_torch_proxy_executor_call_function"],
            {"aoti_torch_proxy_executor_call_function"},
            "cpu",
        )
    assert info.value.missing == ["aoti_torch_proxy_executor_call_function"]
    assert "custom ops" in str(info.value)


def test_shim_calls_in_source_finds_first_use():
    src = textwrap.dedent(
        """
        AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, sizes, strides, d, t, 0, &h));
        AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(out, bias, a, b, 1L, 1L));
        AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(1, s, t, d, t, 0, &g));
        """
    )
    found = ab.shim_calls_in_source(src)
    assert set(found) == {"aoti_torch_empty_strided", "aoti_torch_cpu_addmm_out"}
    assert "2, sizes" in found["aoti_torch_empty_strided"]


# ---- AOTI options ------------------------------------------------------------------------


BASE_OPTIONS = {
    "aot_inductor.link_libtorch": False,
    "aot_inductor.package_constants_in_so": False,
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
    "aot_inductor.package": True,
    "aot_inductor.embed_kernel_binary": True,
}


def test_base_options_exist_in_this_torch_and_have_expected_values():
    from kiln.exporter.kiln_ops import c_shims

    # Compile spec grouped_mm (on by default) declares Kiln's op kiln::grouped_mm.
    base = {**BASE_OPTIONS, "aot_inductor.custom_ops_to_c_shims": c_shims("cpu", ["grouped_mm"])}
    assert ab.AotiBackend().aoti_compile_options({}) == base
    assert ab.AotiBackend().aoti_compile_options({"grouped_mm": "off"}) == BASE_OPTIONS
    opts = CpuBackend().aoti_compile_options({})
    # CPU kernels take their OpenMP thread count at run time (aoti.num_threads).
    assert opts == {**base, "cpp.dynamic_threads": True}
    ab.validate_inductor_options(opts)


def test_unknown_option_is_refused():
    with pytest.raises(KeyError, match="aot_inductor.no_such_knob"):
        ab.validate_inductor_options({"aot_inductor.no_such_knob": 1, "max_autotune": True})


def test_cuda_options_triton_only_and_multi_arch():
    opts = CudaBackend().aoti_compile_options({})
    ab.validate_inductor_options(opts)
    assert opts["max_autotune_gemm_backends"] == "TRITON"
    assert opts["max_autotune_conv_backends"] == "TRITON"
    assert opts["aot_inductor.embed_kernel_binary"] is True
    assert opts["aot_inductor.emit_multi_arch_kernel"] is True
    assert opts["max_autotune"] is True
    for k, v in BASE_OPTIONS.items():
        assert opts[k] == v
    off = CudaBackend().aoti_compile_options({"triton_only": "OFF", "max_autotune": "0", "emit_multi_arch_kernel": False})
    assert "max_autotune_gemm_backends" not in off and "max_autotune_conv_backends" not in off
    assert off["max_autotune"] is False and off["aot_inductor.emit_multi_arch_kernel"] is False
    with_autotune = CudaBackend().aoti_compile_options({"autotune_at_compile_time": "ON"})
    ab.validate_inductor_options(with_autotune)
    assert with_autotune["triton.autotune_at_compile_time"] is True
    assert opts["combo_kernels"] is True
    assert CudaBackend().aoti_compile_options({"combo_kernels": "off"})["combo_kernels"] is False


def test_cuda_compiles_again_without_combo_kernels_only_for_their_known_failure():
    backend = CudaBackend()
    opts = backend.aoti_compile_options({})
    try:  # Inductor wraps the code generator's error in its own
        try:
            raise RuntimeError("Dynamic shape on reduction dimension is not supported")
        except RuntimeError as inner:
            raise ValueError("backend compiler failed") from inner
    except ValueError as error:
        wrapped = error
    retry = backend.compile_retry_options(wrapped, opts, {})
    assert retry is not None
    retry_opts, reason = retry
    assert retry_opts["combo_kernels"] is False and "combo kernels" in reason
    assert {k: v for k, v in retry_opts.items() if k != "combo_kernels"} == {
        k: v for k, v in opts.items() if k != "combo_kernels"}
    # Asked for explicitly, or another failure, or combo kernels already off: no second compile.
    assert backend.compile_retry_options(wrapped, opts, {"combo_kernels": True}) is None
    assert backend.compile_retry_options(RuntimeError("out of resource: shared memory"), opts, {}) is None
    assert backend.compile_retry_options(wrapped, {**opts, "combo_kernels": False}, {}) is None
    assert ab.AotiBackend.compile_retry_options(backend, wrapped, opts, {}) is None


def test_unread_specs_warn_with_the_closest_known_key():
    known = CudaBackend.COMPILE_SPECS
    with pytest.warns(UnreadCompileSpecWarning, match="'combo_kernel'.*did you mean 'combo_kernels'"):
        assert warn_unread_specs({"combo_kernel": "off", "triton_only": True}, known, "cuda") == ["combo_kernel"]
    with pytest.warns(UnreadCompileSpecWarning, match="it reads: fuse_norm_linear, fuse_projections"):
        warn_unread_specs({"zzz": 1}, CpuBackend.COMPILE_SPECS, "cpu")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_unread_specs({k: "1" for k in known}, known, "cuda") == []


def test_every_spec_a_backend_reads_is_declared():
    """A spec read in a backend's source but missing from its COMPILE_SPECS would warn
    as unread while it works: keep the two in step."""
    import inspect

    from kiln.exporter.backends import cuda as cuda_backend
    from kiln.exporter.backends import metal as metal_backend

    pattern = re.compile(r"""(?:spec_bool\(compile_specs,\s*|compile_specs\.get\(|compile_specs\[|in compile_specs\b)""")
    key = re.compile(r"""spec_bool\(compile_specs,\s*"(\w+)"|compile_specs\.get\("(\w+)"|compile_specs\["(\w+)"\]|"(\w+)" in compile_specs""")
    for module, backend in ((ab, ab.AotiBackend), (cuda_backend, CudaBackend), (metal_backend, MetalBackend)):
        source = inspect.getsource(module)
        assert pattern.search(source), module.__name__
        read = {next(g for g in m.groups() if g) for m in key.finditer(source)}
        assert read, module.__name__
        assert read <= backend.COMPILE_SPECS, (module.__name__, read - backend.COMPILE_SPECS)


def test_spec_bool_rejects_garbage():
    assert spec_bool({"a": "On"}, "a", False) is True
    assert spec_bool({}, "a", True) is True
    with pytest.raises(ValueError, match="'a'"):
        spec_bool({"a": "maybe"}, "a", False)


def test_cuda_export_without_cuda_is_a_clear_error(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="torch.cuda is not available"):
        CudaBackend().preprocess("forward", object(), {})


def test_metal_options_are_valid_and_preprocess_is_not_implemented():
    opts = MetalBackend().aoti_compile_options({})
    ab.validate_inductor_options(opts)
    assert "aot_inductor.embed_kernel_binary" not in opts
    assert opts["aot_inductor.link_libtorch"] is False
    with pytest.raises(NotImplementedError, match="Metal"):
        MetalBackend().preprocess("forward", object(), {})


# ---- Metal code signing ------------------------------------------------------------------


@pytest.fixture
def fake_codesign(tmp_path, monkeypatch):
    """A `codesign` on PATH that records its argv, one argument per line."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "argv.txt"
    script = bindir / "codesign"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$0" "$@" > "{log}"\nexit 0\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(sys, "platform", "darwin")
    return script, log


def test_codesign_runs_exact_command(fake_codesign, tmp_path):
    script, log = fake_codesign
    so = tmp_path / "m.wrapper.so"
    so.write_bytes(b"\x7fELF")
    MetalBackend().codesign_so(str(so), {"codesign_identity": "Developer ID Application: Kiln (ABCDE12345)"})
    assert log.read_text().splitlines() == [
        str(script),
        "-f",
        "-s",
        "Developer ID Application: Kiln (ABCDE12345)",
        str(so),
    ]


def test_codesign_ad_hoc_identity(fake_codesign, tmp_path):
    script, log = fake_codesign
    MetalBackend().codesign_so(str(tmp_path / "x.so"), {"codesign_identity": "-"})
    assert log.read_text().splitlines() == [str(script), "-f", "-s", "-", str(tmp_path / "x.so")]


def test_codesign_without_spec_does_nothing(fake_codesign, tmp_path):
    _, log = fake_codesign
    MetalBackend().codesign_so(str(tmp_path / "x.so"), {})
    MetalBackend().codesign_so(str(tmp_path / "x.so"), {"other": "1"})
    assert not log.exists()


def test_codesign_off_macos_is_an_error(fake_codesign, monkeypatch, tmp_path):
    _, log = fake_codesign
    monkeypatch.setattr(sys, "platform", "linux")
    with pytest.raises(RuntimeError, match="macOS"):
        MetalBackend().codesign_so(str(tmp_path / "x.so"), {"codesign_identity": "-"})
    assert not log.exists()


def test_codesign_missing_tool_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no codesign
    with pytest.raises(RuntimeError, match="not on PATH"):
        MetalBackend().codesign_so(str(tmp_path / "x.so"), {"codesign_identity": "-"})


def test_codesign_failure_is_reported(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "codesign").write_text("#!/bin/sh\necho 'no identity found' >&2\nexit 1\n")
    (bindir / "codesign").chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(RuntimeError, match="no identity found"):
        MetalBackend().codesign_so(str(tmp_path / "x.so"), {"codesign_identity": "Nobody"})


def test_base_and_cpu_codesign_are_no_ops(tmp_path):
    so = tmp_path / "x.so"
    so.write_bytes(b"abc")
    CpuBackend().codesign_so(str(so), {"codesign_identity": "-"})
    assert so.read_bytes() == b"abc"


# ---- CPU metadata helpers ----------------------------------------------------------------


def test_compile_command_and_baked_threads_from_generated_source():
    src = textwrap.dedent(
        """
        extern "C" void kernel(float* p) {
            #pragma omp parallel num_threads(2)
            { }
            #pragma omp parallel num_threads(16)
            { }
        }
        // Compile cmd
        // g++ /tmp/a.wrapper.cpp -D X -O1 -march=native -fopenmp -c -o /tmp/a.o
        // Link cmd
        // g++ /tmp/a.o -shared -o /tmp/a.so -lgomp
        """
    )
    cmd = compile_command_from_source(src)
    assert cmd[0] == "g++" and "-march=native" in cmd and cmd[-1] == "/tmp/a.o"
    assert baked_omp_threads([src]) == 16
    assert baked_omp_threads(["no pragmas"]) is None
    assert compile_command_from_source("int x;") is None


# ---- progress ------------------------------------------------------------------------------


def test_progress_prints_a_line_when_each_stage_starts_and_ends(capsys):
    p = Progress(verbose=True)
    with p.stage("forward: aot compile (cpu)"):
        pass
    with pytest.raises(ValueError):
        with p.stage("forward: kernel check"):
            raise ValueError("boom")
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[kiln export] forward: aot compile (cpu) ..."
    assert re.fullmatch(r"\[kiln export\] forward: aot compile \(cpu\) \.\.\. \d+\.\d s", err[1])
    assert err[2] == "[kiln export] forward: kernel check ..."
    assert re.fullmatch(r"\[kiln export\] forward: kernel check \.\.\. failed after \d+\.\d s", err[3])
    assert len(err) == 4
    assert p.lines == err


def test_progress_start_line_is_out_before_the_stage_runs(capsys):
    # A stage that runs for minutes (a CUDA autotune) must already be named on stderr.
    p = Progress(verbose=True)
    seen_during = []
    with p.stage("forward: aot compile (cuda)"):
        seen_during.append(capsys.readouterr().err)
    assert seen_during == ["[kiln export] forward: aot compile (cuda) ...\n"]
    assert re.fullmatch(r"\[kiln export\] forward: aot compile \(cuda\) \.\.\. \d+\.\d s\n",
                        capsys.readouterr().err)


def test_progress_silent_when_not_verbose(capsys):
    p = Progress(verbose=False)
    with p.stage("x"):
        pass
    assert capsys.readouterr().err == ""
    assert p.lines[0] == "[kiln export] x ..."  # still recorded for callers
    assert len(p.lines) == 2


# ---- package -------------------------------------------------------------------------------


def test_import_kiln_does_not_import_torch():
    code = (
        "import sys, kiln\n"
        "assert 'torch' not in sys.modules, 'import kiln pulled in torch'\n"
        "print(kiln.__version__)\n"
        "import kiln.exporter\n"  # torch is imported only when export() runs
        "assert callable(kiln.export) and kiln.export is kiln.exporter.export\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"\d+\.\d+\.\d+", out.stdout.strip())


def test_backend_lookup():
    from kiln.exporter import backend_for

    assert type(backend_for("cpu")) is CpuBackend
    assert type(backend_for("CUDA")) is CudaBackend
    assert type(backend_for("metal")) is MetalBackend
    mine = CpuBackend()
    assert backend_for(mine) is mine
    with pytest.raises(ValueError, match="unknown Kiln backend"):
        backend_for("tpu")


# ---- preprocess stages before the compile (compile itself stubbed out) ----------------------


class _StopBeforeCompile(Exception):
    pass


class _ReluToClampBackend(CpuBackend):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def custom_passes(self, compile_specs):
        def record(ep):
            self.log.append(("pass", compile_specs.get("tag")))
            return None  # keep the program

        return [record]

    def decomposition_table(self, compile_specs):
        import torch

        def relu_as_clamp(x):
            return torch.ops.aten.clamp_min.default(x, 0)

        return {torch.ops.aten.relu.default: relu_as_clamp}


def _targets(gm):
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


def test_passes_run_before_compile_and_decompositions_inside_it(monkeypatch):
    import torch
    from torch._inductor import compile_fx

    seen = {}

    def fake_aot_compile(gm, args, kwargs=None, *, options=None):
        seen["targets"] = _targets(gm)
        seen["relu_decomposition"] = compile_fx.select_decomp_table().get(torch.ops.aten.relu.default)
        seen["options"] = options
        seen["arg_shapes"] = [tuple(a.shape) for a in args]
        raise _StopBeforeCompile

    monkeypatch.setattr(torch._inductor, "aot_compile", fake_aot_compile)
    before = compile_fx.select_decomp_table
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU()).eval()
    ep = torch.export.export(model, (torch.randn(2, 3),), dynamic_shapes=({0: torch.export.Dim("b", max=9)},))
    log = []
    with pytest.raises(_StopBeforeCompile):
        _ReluToClampBackend(log).preprocess("forward", ep, {"tag": "t1"})
    assert log == [("pass", "t1")]
    # The program reaches Inductor as exported; Inductor's table holds the backend's
    # decomposition while it compiles, and its own table is back afterwards.
    assert "aten.relu.default" in seen["targets"]
    assert seen["relu_decomposition"] is not None
    assert seen["relu_decomposition"](torch.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    assert compile_fx.select_decomp_table is before
    assert torch.ops.aten.relu.default not in before()
    assert seen["options"]["aot_inductor.link_libtorch"] is False
    assert os.path.basename(seen["options"]["aot_inductor.output_path"]).startswith("kiln_export_forward_")
    # The example input stays symbolic in the batch dim (dynamic shape preserved).
    import torch.fx.experimental.symbolic_shapes as ss

    (shape,) = seen["arg_shapes"]
    assert shape[1] == 3 and ss.is_symbolic(shape[0])


def test_decompositions_do_not_retrace_the_exported_program(monkeypatch):
    import torch

    calls = []
    real = torch.export.ExportedProgram.run_decompositions
    monkeypatch.setattr(
        torch.export.ExportedProgram,
        "run_decompositions",
        lambda self, *a, **k: calls.append(1) or real(self, *a, **k),
    )
    monkeypatch.setattr(torch._inductor, "aot_compile", lambda *a, **k: (_ for _ in ()).throw(_StopBeforeCompile()))
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU()).eval()
    ep = torch.export.export(model, (torch.randn(2, 3),))
    with pytest.raises(_StopBeforeCompile):
        _ReluToClampBackend([]).preprocess("forward", ep, {})
    assert calls == []


# ---- inductor's vector-ISA probe cache --------------------------------------------------


def _cc(src: Path, out: Path, *extra: str) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    assert gcc, "a C compiler is needed (AOTInductor needs one anyway)"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(out), str(src), *extra], check=True, capture_output=True)


def test_poisoned_vec_isa_probe_is_detected(tmp_path):
    import torch
    import torch._inductor.cpu_vec_isa as vec

    from kiln.exporter.backends.cpu import _poisoned_vec_isa_probes

    user = tmp_path / "user.c"
    user.write_text("extern float Sleef_expf8_u10(float);\nfloat f(float x) { return Sleef_expf8_u10(x); }\n")
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    # A probe linked without libtorch (what link_libtorch=False produces) vs a good one.
    for sub, extra in (("bad", ()), ("good", ("-L" + torch_lib, "-Wl,--no-as-needed", "-ltorch_cpu"))):
        d = tmp_path / "cache" / sub
        d.mkdir(parents=True)
        (d / "cprobe.cpp").write_text(vec.VecISA._avx_code)
        _cc(user, d / "cprobe.so", *extra)
    # An unrelated cached kernel with the same kind of import is not touched.
    other = tmp_path / "cache" / "zz"
    other.mkdir()
    (other / "ckernel.cpp").write_text("// some kernel\n")
    _cc(user, other / "ckernel.so")

    found = _poisoned_vec_isa_probes(vec, str(tmp_path / "cache"))
    assert found == [str(tmp_path / "cache" / "bad" / "cprobe.so")]
