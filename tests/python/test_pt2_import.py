"""Stock PyTorch .pt2 packages (torch._inductor.aoti_compile_and_package) in Kiln.

Three packages are compiled once per module with the real AOTInductor:
  * ``blob``: aot_inductor.link_libtorch=False, weights in a separate binary blob,
    a dynamic batch dimension (2..64) and two outputs;
  * ``inso``: link_libtorch=False, weights inside the library, static shapes, an
    int64 input;
  * ``libtorch``: torch's defaults (linked against libtorch), which Kiln refuses.
Each is run through ``kiln import`` + the runtime, through ``kiln run`` on the .pt2
and through kiln.runtime.Module on the .pt2 path (converted in memory), and compared
with eager PyTorch on fresh random inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from kiln.runtime import KilnError, Module
from pt2_models import IntIndex, TwoOutputs

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("KILN_CLI", str(REPO / "build" / "kiln"))

NO_LIBTORCH = {"aot_inductor.link_libtorch": False}
BLOB_WEIGHTS = {
    **NO_LIBTORCH,
    "aot_inductor.package_constants_in_so": False,
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
}


def run_cli(*args, timeout=300):
    if not Path(CLI).is_file():
        pytest.fail(f"kiln CLI not found at {CLI} (build it or set KILN_CLI)")
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def _package(tmp_dir: Path, name: str, module, example, configs, dynamic_shapes=None) -> Path:
    torch.manual_seed(0)
    ep = torch.export.export(module, example, dynamic_shapes=dynamic_shapes)
    path = tmp_dir / f"{name}.pt2"
    torch._inductor.aoti_compile_and_package(ep, package_path=str(path), inductor_configs=configs)
    return path


@pytest.fixture(scope="module")
def blob_pkg(tmp_path_factory):
    torch.manual_seed(1)
    model = TwoOutputs().eval()
    batch = torch.export.Dim("batch", min=2, max=64)
    example = (torch.randn(4, 16), torch.randn(8))
    path = _package(tmp_path_factory.mktemp("pt2"), "blob", model, example, BLOB_WEIGHTS,
                    dynamic_shapes=({0: batch}, None))
    return path, model


@pytest.fixture(scope="module")
def inso_pkg(tmp_path_factory):
    torch.manual_seed(2)
    model = IntIndex().eval()
    example = (torch.randn(3, 6), torch.tensor([1, 4, 7, 9], dtype=torch.int64))
    return _package(tmp_path_factory.mktemp("pt2"), "inso", model, example, NO_LIBTORCH), model


@pytest.fixture(scope="module")
def libtorch_pkg(tmp_path_factory):
    model = IntIndex().eval()
    example = (torch.randn(3, 6), torch.tensor([0, 1], dtype=torch.int64))
    return _package(tmp_path_factory.mktemp("pt2"), "libtorch", model, example, {})


def _close(got, want, rtol=1e-5):
    want = want.detach().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-6)
    assert err <= rtol, f"relative error {err:.3g} > {rtol}"


def _blob_inputs(batch, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 16, generator=g), torch.randn(8, generator=g)


def _inso_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(3, 6, generator=g), torch.randint(0, 10, (4,), generator=g, dtype=torch.int64)


def test_package_layout_is_what_the_importer_expects(blob_pkg, inso_pkg):
    # torch writes every entry stored (uncompressed): Kiln's reader needs no zlib.
    for path, weights in ((blob_pkg[0], True), (inso_pkg[0], False)):
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
            assert any(n.endswith(".wrapper.so") for n in names)
            assert any(n.endswith(".wrapper.cpp") for n in names)
            assert any(n.endswith("weights.blob") for n in names) == weights


def test_import_writes_a_program_with_the_package_contract(blob_pkg, tmp_path):
    pkg, model = blob_pkg
    out = tmp_path / "blob.kiln"
    proc = run_cli("import", pkg, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    assert "weights separate blob" in proc.stdout

    doc = json.loads(run_cli("inspect", out, "--json", "--verify").stdout)
    (method,) = doc["methods"]
    assert method["name"] == "forward" and method["backend"] == "aoti" and method["device"] == "cpu"
    assert method["metadata"]["imported_from"] == "pt2"
    assert method["metadata"]["pt2_model"] == "model"
    assert method["metadata"]["AOTI_DEVICE_KEY"] == "cpu"
    assert "cpu_isa" in method["metadata"]
    x, bias = method["inputs"]
    assert x["dtype"] == "float32" and bias["dtype"] == "float32"
    assert x["dims"][0]["dynamic"] and x["dims"][0]["min"] == 2 and x["dims"][0]["max"] == 64
    assert x["dims"][1] == {"size": 16, "dynamic": False}
    assert bias["dims"] == [{"size": 8, "dynamic": False}]
    # Outputs, inferred from the wrapper: y = float32[batch, 8], h.sum(1) = float32[batch],
    # with the batch symbol and bounds of input 0.
    y, hsum = method["outputs"]
    assert y["dtype"] == "float32" and hsum["dtype"] == "float32"
    assert y["dims"][0] == x["dims"][0] and hsum["dims"] == [x["dims"][0]]
    assert y["dims"][1] == {"size": 8, "dynamic": False}
    assert "unknown_outputs" not in method["metadata"]
    assert method["weights_key"]

    m = Module(out)
    for batch, seed in ((2, 10), (5, 11), (64, 12)):
        inputs = _blob_inputs(batch, seed)
        got = m.forward(*(t.numpy() for t in inputs))
        with torch.no_grad():
            want = model(*inputs)
        assert len(got) == 2
        for g, w in zip(got, want):
            _close(g, w)


def test_direct_loading_of_the_pt2_path(blob_pkg, inso_pkg):
    for (pkg, model), make in ((blob_pkg, lambda s: _blob_inputs(7, s)), (inso_pkg, _inso_inputs)):
        m = Module(pkg)
        assert m.method_names() == ["forward"]
        for seed in (20, 21):
            inputs = make(seed)
            got = m.forward(*(t.numpy() for t in inputs))
            with torch.no_grad():
                want = model(*inputs)
            want = want if isinstance(want, tuple) else (want,)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                _close(g, w)


def test_weights_inside_the_library(inso_pkg, tmp_path):
    pkg, model = inso_pkg
    out = tmp_path / "inso.kiln"
    proc = run_cli("import", pkg, "-o", out, "--method", "lookup")
    assert proc.returncode == 0, proc.stderr
    assert "weights inside the library" in proc.stdout
    doc = json.loads(run_cli("inspect", out, "--json").stdout)
    (method,) = doc["methods"]
    assert method["name"] == "lookup" and method["weights_key"] == ""
    assert [t["dtype"] for t in method["inputs"]] == ["float32", "int64"]
    assert [t["shape"] for t in method["inputs"]] == ["float32[3, 6]", "int64[4]"]
    assert [t["shape"] for t in method["outputs"]] == ["float32[3, 4]"]
    inputs = _inso_inputs(30)
    (got,) = Module(out).execute("lookup", [t.numpy() for t in inputs])
    with torch.no_grad():
        _close(got, model(*inputs))


def test_kiln_run_on_the_pt2(blob_pkg, tmp_path):
    pkg, model = blob_pkg
    inputs = _blob_inputs(9, 40)
    for i, t in enumerate(inputs):
        np.save(tmp_path / f"in{i}.npy", t.numpy())
    out_dir = tmp_path / "out"
    proc = run_cli("run", pkg, "--input", tmp_path / "in0.npy", "--input", tmp_path / "in1.npy",
                   "--output-dir", out_dir, "--repeat", "2")
    assert proc.returncode == 0, proc.stderr
    with torch.no_grad():
        want = model(*inputs)
    for i, w in enumerate(want):
        _close(np.load(next(out_dir.glob(f"out_{i}_*.npy"))), w)


def test_inputs_outside_the_package_contract_are_refused(blob_pkg):
    m = Module(blob_pkg[0])
    with pytest.raises(KilnError) as err:
        m.forward(np.zeros((65, 16), np.float32), np.zeros(8, np.float32))
    assert err.value.status == "InvalidArgument"
    assert "dim 0 is 65" in err.value.message
    with pytest.raises(KilnError) as err:
        m.forward(np.zeros((4, 16), np.float64), np.zeros(8, np.float32))
    assert "must be float32" in err.value.message
    # The module still works after refusing.
    inputs = _blob_inputs(3, 50)
    got = m.forward(*(t.numpy() for t in inputs))
    with torch.no_grad():
        _close(got[0], blob_pkg[1](*inputs)[0])


def test_inputs_of_any_layout_on_the_pt2(blob_pkg):
    # The package's stride checks agree with row-major: the imported contract says so, and
    # views in other layouts (transposed, every other row, a broadcast bias) are laid out
    # before the library reads them.
    m = Module(blob_pkg[0])
    assert [spec.dim_order for spec in m.method_meta("forward").inputs] == [(), ()]
    x, bias = _blob_inputs(6, 60)
    wide = torch.full((12, 16), float("nan"))
    wide[::2] = x
    for xv, bv in ((x.t().contiguous().t(), bias), (wide[::2], bias), (x, bias[:1].expand(8))):
        got = m.forward(xv, bv)
        with torch.no_grad():
            want = blob_pkg[1](xv.contiguous(), bv.contiguous())
        for g, w in zip(got, want):
            _close(g, w)


def test_libtorch_linked_package_is_refused_with_how_to_reexport(libtorch_pkg, tmp_path):
    proc = run_cli("import", libtorch_pkg, "-o", tmp_path / "x.kiln")
    assert proc.returncode == 1
    assert "NotSupported" in proc.stderr
    assert "compiled against libtorch" in proc.stderr and "libtorch" in proc.stderr
    assert '"aot_inductor.link_libtorch": False' in proc.stderr
    assert not (tmp_path / "x.kiln").exists()
    with pytest.raises(KilnError) as err:
        Module(libtorch_pkg).method_names()
    assert err.value.status == "NotSupported"
    assert '"aot_inductor.link_libtorch": False' in err.value.message


def test_truncated_and_compressed_packages(blob_pkg, tmp_path):
    data = blob_pkg[0].read_bytes()
    cut = tmp_path / "cut.pt2"
    cut.write_bytes(data[: len(data) - 100])
    proc = run_cli("import", cut, "-o", tmp_path / "cut.kiln")
    assert proc.returncode == 1
    assert "corrupt or truncated ZIP archive" in proc.stderr

    deflated = tmp_path / "deflated.pt2"
    with zipfile.ZipFile(blob_pkg[0]) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    with pytest.raises(KilnError) as err:
        Module(deflated).method_names()
    assert err.value.status == "NotSupported"
    assert "is compressed (method 8, deflate)" in err.value.message


def test_usage_errors():
    proc = run_cli("import", "model.pt2")
    assert proc.returncode == 2 and "missing -o PROGRAM.kiln" in proc.stderr
    proc = run_cli("import", "-o", "x.kiln")
    assert proc.returncode == 2 and "missing the .pt2 package" in proc.stderr
    proc = run_cli("import", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: kiln import MODEL.pt2")


def test_unknown_model_name(blob_pkg, tmp_path):
    proc = run_cli("import", blob_pkg[0], "-o", tmp_path / "x.kiln", "--model-name", "other")
    assert proc.returncode == 1
    assert "no model 'other' in the package (it holds: model)" in proc.stderr


def _rewrite_metadata(src: Path, dst: Path, changes: dict) -> None:
    """A copy of the package with keys of its *.wrapper_metadata.json changed, written by
    Python's zipfile (no data descriptors, no alignment padding: Kiln's reader takes both)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".wrapper_metadata.json"):
                data = json.dumps({**json.loads(data), **changes}).encode()
            zout.writestr(info.filename, data)


def test_package_for_another_machine_is_refused_at_load(blob_pkg, tmp_path):
    import platform

    host = platform.machine()
    other = "aarch64" if host != "aarch64" else "x86_64"
    patched = tmp_path / "other_machine.pt2"
    _rewrite_metadata(blob_pkg[0], patched, {"AOTI_MACHINE": other})
    # Importing copies the metadata; the machine is checked when the method loads.
    program = tmp_path / "other_machine.kiln"
    proc = run_cli("import", patched, "-o", program)
    assert proc.returncode == 0, proc.stderr
    for path in (patched, program):
        m = Module(path)
        m.load()
        with pytest.raises(KilnError) as err:
            m.load_method("forward")
        assert err.value.status == "NotSupported"
        assert f"built for {other} but this machine is {host}" in err.value.message


def test_cuda_package_without_a_gpu_is_refused_at_load(blob_pkg, tmp_path):
    # The package's device comes from AOTI_DEVICE_KEY, and its compute capability is kept
    # for the GPU check at load; a CPU-only build (or machine) refuses the method by name.
    patched = tmp_path / "cuda.pt2"
    _rewrite_metadata(blob_pkg[0], patched, {"AOTI_DEVICE_KEY": "cuda", "AOTI_COMPUTE_CAPABILITY": "90"})
    m = Module(patched)
    m.load()
    meta = m.method_meta("forward")
    assert meta.device == "cuda"
    assert meta.metadata["AOTI_COMPUTE_CAPABILITY"] == "90"
    assert "cpu_isa" not in meta.metadata  # the CPU ISA check is for CPU libraries
    if Path("/dev/nvidiactl").exists():
        pytest.skip("an NVIDIA GPU is present: the method would load on it (tests/gpu/test_pt2.py covers CUDA packages)")
    with pytest.raises(KilnError) as err:
        m.load_method("forward")
    assert err.value.status == "NotSupported"
    assert "runs on cuda:0, which this build or machine does not have" in err.value.message
