"""kiln.export end to end with the real AOTInductor on CPU.

Compiles are slow (~5-25 s each), so the whole file compiles three times: one
two-method program (module fixture) and one refused export.  The files AOTInductor
produced are copied aside by a spy around torch._inductor.aot_compile, so the packed
bytes are compared with the compiler's own output, not with the exporter's.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

import kiln
from kiln.exporter import CpuBackend, UnsupportedKernelsError
from kiln.exporter.backends import aoti as ab
from kiln.exporter.elf_imports import read_elf_imports
from kiln.program import load

BATCH_MIN, BATCH_MAX = 1, 64


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(8, 16)
        self.l2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class Twice(torch.nn.Module):
    """Second method over the same parameters: [mlp(x); 2*mlp(x)] -> batch 2*b."""

    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, x):
        y = self.mlp(x)
        return torch.cat([y, y * 2], dim=0)


class CompileSpy:
    """Wraps torch._inductor.aot_compile; copies every produced file to keep_dir/<n>/."""

    def __init__(self, keep_dir: Path):
        self.keep_dir = keep_dir
        self.calls: list[dict[str, Path]] = []
        self.real = torch._inductor.aot_compile

    def __call__(self, *args, **kwargs):
        produced = self.real(*args, **kwargs)
        dest = self.keep_dir / str(len(self.calls))
        dest.mkdir(parents=True)
        kept = {}
        for f in produced:
            f = str(f)
            for suffix in (".wrapper.so", ".wrapper_weights.blob", "wrapper_metadata.json", ".wrapper.cpp"):
                if f.endswith(suffix):
                    kept[suffix] = Path(shutil.copy(f, dest))
        self.calls.append(kept)
        return produced


def _methods(prog) -> dict:
    return {m.name: m for m in prog.methods}


def _named(prog) -> dict:
    """key -> info dict (key, size, alignment, sha256, external) of a loaded program."""
    return {info["key"]: info for info in prog.named_data_info()}




def _leftovers(scratch: Path) -> list[str]:
    return sorted(os.listdir(scratch))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("export")
    mlp = MLP().eval()
    batch = torch.export.Dim("batch", min=BATCH_MIN, max=BATCH_MAX)
    example = (torch.randn(3, 8),)
    eps = {
        "forward": torch.export.export(mlp, example, dynamic_shapes={"x": {0: batch}}),
        "twice": torch.export.export(Twice(mlp), example, dynamic_shapes={"x": {0: batch}}),
    }
    spy = CompileSpy(tmp / "aoti")
    scratch = tmp / "scratch"  # private, so concurrent exports elsewhere cannot interfere
    scratch.mkdir()
    stderr = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(stderr):
        mp.setattr(torch._inductor, "aot_compile", spy)
        backend = CpuBackend(temp_dir=scratch)
        result = kiln.export(eps, backend=backend, metadata={"model": "tiny mlp"}, compile_specs={"note": "test"})
        path = tmp / "mlp.kiln"
        result.save(str(path))
    return {
        "mlp": mlp,
        "result": result,
        "path": path,
        "loaded": load(str(path)),
        "spy": spy,
        "stderr": stderr.getvalue(),
        "leftover_tempdirs": _leftovers(scratch),
    }


def test_compiled_twice_and_cleaned_up(exported):
    assert len(exported["spy"].calls) == 2
    for kept in exported["spy"].calls:
        assert ".wrapper.so" in kept and ".wrapper_weights.blob" in kept
    assert exported["leftover_tempdirs"] == []


def test_method_contract(exported):
    methods = _methods(exported["loaded"])
    assert set(methods) == {"forward", "twice"}
    for name, out_batch in (("forward", (BATCH_MIN, BATCH_MAX)), ("twice", (2 * BATCH_MIN, 2 * BATCH_MAX))):
        m = methods[name]
        assert m.backend == "aoti" and m.device == "cpu"
        assert [i.name for i in m.inputs] == ["x"]
        (x,) = m.inputs
        assert x.dtype == "float32"
        assert len(x.dims) == 2
        assert x.dims[0].dynamic and (x.dims[0].min, x.dims[0].max) == (BATCH_MIN, BATCH_MAX)
        assert x.dims[0].size == 3  # the example batch
        assert x.dims[0].name
        assert not x.dims[1].dynamic and x.dims[1].size == 8
        (y,) = m.outputs
        assert y.dtype == "float32"
        assert y.dims[0].dynamic and (y.dims[0].min, y.dims[0].max) == out_batch
        assert not y.dims[1].dynamic and y.dims[1].size == 4
        assert dict(m.compile_specs) == {"note": "test"}


def test_program_metadata(exported):
    meta = dict(exported["loaded"].metadata)
    assert meta["kiln_exporter_version"] == kiln.__version__
    assert meta["torch_version"] == torch.__version__
    assert "kiln" in meta["created_by"]
    assert meta["model"] == "tiny mlp"


def test_method_metadata_matches_the_compiler_output(exported):
    methods = _methods(exported["loaded"])
    kept = exported["spy"].calls[0]
    aoti_meta = json.loads(kept["wrapper_metadata.json"].read_text())
    meta = dict(methods["forward"].metadata)
    assert meta["AOTI_CPU_ISA"] == aoti_meta["AOTI_CPU_ISA"]
    assert meta["cpu_isa"] == aoti_meta["AOTI_CPU_ISA"]
    import torch._inductor.cpu_vec_isa as vec

    if "avx2" in vec.x86_isa_checker():
        # Regression: a probe cache poisoned by link_libtorch=False made every kernel scalar.
        assert meta["cpu_isa"] != "INVALID_VEC_ISA"
    assert meta["torch_version"] == torch.__version__
    assert meta["compiler"] and meta["compiler_version"]
    # glibc: independent reference is readelf on the compiler's .so
    out = subprocess.run(["readelf", "-V", "-W", str(kept[".wrapper.so"])], capture_output=True, text=True, check=True)
    versions = re.findall(r"Name: GLIBC_(\d+(?:\.\d+)*)\b", out.stdout)
    assert meta["glibc_required"] == max(versions, key=lambda v: tuple(map(int, v.split("."))))
    assert "aoti_torch_cpu_addmm_out" in meta["shim_imports"].split(",")


def test_named_data_is_the_compilers_output(exported):
    prog = exported["loaded"]
    named = _named(prog)
    methods = _methods(prog)
    for i, name in enumerate(("forward", "twice")):
        kept = exported["spy"].calls[i]
        so = kept[".wrapper.so"].read_bytes()
        blob = kept[".wrapper_weights.blob"].read_bytes()
        m = methods[name]
        assert m.library_key == hashlib.sha256(so).hexdigest() + "_so"
        assert m.weights_key == hashlib.sha256(blob).hexdigest() + "_weights"
        assert named[m.library_key]["size"] == len(so)
        assert named[m.weights_key]["size"] == len(blob)
        lib = prog.named_data_bytes(m.library_key)
        assert lib == so and lib[:4] == b"\x7fELF"
        assert prog.named_data_bytes(m.weights_key) == blob
        assert not named[m.library_key]["external"] and not named[m.weights_key]["external"]


def test_weights_blob_holds_the_parameters(exported):
    # Independent reference: the module's own parameter bytes.  (Inductor inlines tiny
    # constants such as l2's 4-element bias into the kernel code, so not every
    # parameter is in the blob; the large ones must be.)
    blob = exported["spy"].calls[0][".wrapper_weights.blob"].read_bytes()
    mlp = exported["mlp"]
    assert blob.find(mlp.l1.weight.detach().numpy().tobytes()) >= 0
    assert blob.find(mlp.l2.weight.detach().numpy().tobytes()) >= 0


def test_two_methods_share_one_weights_entry(exported):
    prog = exported["loaded"]
    methods = _methods(prog)
    spy = exported["spy"]
    blobs = [c[".wrapper_weights.blob"].read_bytes() for c in spy.calls]
    assert blobs[0] == blobs[1], "precondition: AOTInductor produced identical weights blobs"
    assert methods["forward"].weights_key == methods["twice"].weights_key
    assert methods["forward"].library_key != methods["twice"].library_key
    named = _named(prog)
    assert len([k for k in named if k.endswith("_weights")]) == 1
    assert len([k for k in named if k.endswith("_so")]) == 2


def test_alignment(exported):
    named = _named(exported["loaded"])
    for key, info in named.items():
        assert info["alignment"] == (64 if key.endswith("_so") else 4096), info


def test_elf_imports_of_the_compiled_library_match_nm(exported):
    so = exported["spy"].calls[0][".wrapper.so"]
    nm = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True, check=True)
    expected = {line.split()[-1] for line in nm.stdout.splitlines() if line.strip()}
    got = {s.name + (f"@{s.version}" if s.version else "") for s in read_elf_imports(so).undefined}
    assert got == expected
    assert any(n.startswith("aoti_torch_") for n in got)


def test_progress_lines(exported):
    lines = exported["stderr"].splitlines()
    ours = [l for l in lines if l.startswith("[kiln export]")]
    for method in ("forward", "twice"):
        for stage in (r"aot compile \(cpu\)", "kernel check", "pack"):
            pattern = rf"\[kiln export\] {method}: {stage} \.\.\. \d+\.\d s"
            assert any(re.fullmatch(pattern, l) for l in ours), (pattern, ours)
            # The stage's start line comes before its end line.
            start_pattern = rf"\[kiln export\] {method}: {stage} \.\.\."
            start = next(i for i, l in enumerate(ours) if re.fullmatch(start_pattern, l))
            assert start < next(i for i, l in enumerate(ours) if re.fullmatch(pattern, l)), ours
    assert any(re.fullmatch(r"\[kiln export\] save mlp\.kiln \.\.\. \d+\.\d s", l) for l in ours)


def test_unsupported_kernel_is_refused_before_packing(monkeypatch, tmp_path):
    real = ab.load_supported_shims()
    assert "aoti_torch_cpu_addmm_out" in real
    monkeypatch.setattr(ab, "load_supported_shims", lambda path=None: real - {"aoti_torch_cpu_addmm_out"})
    ep = torch.export.export(torch.nn.Linear(4, 3).eval(), (torch.randn(2, 4),))
    with pytest.raises(UnsupportedKernelsError) as info:
        kiln.export({"project": ep}, backend=CpuBackend(temp_dir=tmp_path), verbose=False)
    assert info.value.missing == ["aoti_torch_cpu_addmm_out"]
    assert info.value.method == "project"
    assert "aoti_torch_cpu_addmm_out" in str(info.value)
    assert _leftovers(tmp_path) == []
