"""Tests of the Python runtime wrapper (kiln.runtime) over the C API.

Most tests need no model: tensors go numpy/torch -> DLPack -> kiln tensor -> DLPack -> numpy/torch
through the same helpers Module.execute uses, and are compared with the original arrays (values,
shapes, strides, zero-copy addresses, lifetimes). The end-to-end test exports a tiny MLP with the
real AOTInductor and compares Kiln's outputs with eager PyTorch.

The library comes from KILN_LIBRARY (the build to test) or the wrapper's default search.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kiln import runtime
from kiln.runtime import KilnError, Module

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


def round_trip(array, output="numpy"):
    """array -> kiln tensor (zero-copy) -> `output` (zero-copy), freeing the kiln handle."""
    lib = runtime._library()
    handle = runtime._to_kiln_tensor(lib, array)
    try:
        return runtime._from_kiln_tensor(lib, handle, output)
    finally:
        lib.kiln_tensor_free(handle)


def data_address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


# ---- library and errors -----------------------------------------------------------------


def test_library_path_and_versions():
    path = runtime.library_path()
    assert os.path.isfile(path)
    assert path.endswith(".so") or ".so." in path
    assert runtime.abi_version() >= 1
    assert runtime.version().count(".") == 2


def test_library_path_honours_env(monkeypatch, tmp_path):
    fake = tmp_path / "libkiln.so"
    fake.write_bytes(b"")
    monkeypatch.setenv("KILN_LIBRARY", str(fake))
    assert runtime.library_path() == str(fake)
    monkeypatch.setenv("KILN_LIBRARY", str(tmp_path / "missing.so"))
    with pytest.raises(KilnError) as info:
        runtime.library_path()
    assert info.value.status == "NotFound"
    assert "missing.so" in info.value.message


def test_missing_program_raises_not_found_with_path(tmp_path):
    path = str(tmp_path / "does_not_exist.kiln")
    module = Module(path)
    with pytest.raises(KilnError) as info:
        module.load()
    assert info.value.status in ("NotFound", "IoError")
    assert path in info.value.message
    assert path in str(info.value)
    # Queries load implicitly and fail the same way.
    with pytest.raises(KilnError) as info:
        module.method_names()
    assert info.value.status in ("NotFound", "IoError")


def test_corrupt_program_raises_invalid_program(tmp_path):
    path = tmp_path / "corrupt.kiln"
    path.write_bytes(b"KILN" + bytes(range(256)) * 4)
    with pytest.raises(KilnError) as info:
        Module(path).load()
    assert info.value.status == "InvalidProgram"
    assert info.value.message


def test_bad_option_types_raise_type_error(tmp_path):
    module = Module(tmp_path / "x.kiln")
    with pytest.raises(TypeError, match="aoti.threads"):
        module.load({"aoti": {"threads": 1.5}})
    with pytest.raises(TypeError):
        module.load({"aoti": 3})


def test_closed_module_raises_invalid_state(tmp_path):
    module = Module(tmp_path / "x.kiln")
    module.close()
    module.close()  # idempotent
    with pytest.raises(KilnError) as info:
        module.load()
    assert info.value.status == "InvalidState"


def test_execute_rejects_unknown_output_kind(tmp_path):
    with pytest.raises(ValueError):
        Module(tmp_path / "x.kiln").execute("forward", [], output="pandas")


def test_unsupported_input_dtype_raises_kiln_error():
    torch = pytest.importorskip("torch")
    with pytest.raises(KilnError) as info:
        round_trip(torch.zeros(3, dtype=torch.complex32))  # complex32: not a Kiln dtype
    assert info.value.status == "NotSupported"
    assert "dtype" in info.value.message


def test_complex_arrays_round_trip():
    for dtype in (np.complex64, np.complex128):
        a = (np.arange(6) + 1j * np.arange(6, 12)).astype(dtype).reshape(2, 3)
        b = round_trip(a)
        assert b.dtype == dtype
        np.testing.assert_array_equal(b, a)


# ---- DLPack round trips with numpy ----------------------------------------------------------

NUMPY_DTYPES = [
    np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64, np.bool_,
]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_round_trip_is_zero_copy(dtype):
    rng = np.random.default_rng(0)
    source = (rng.standard_normal((3, 5)) * 10).astype(dtype)
    result = round_trip(source)
    assert result.dtype == source.dtype
    assert result.shape == source.shape
    assert result.strides == source.strides
    assert data_address(result) == data_address(source)
    np.testing.assert_array_equal(result, source)


def test_numpy_non_contiguous_keeps_strides_without_copy():
    base = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    view = base[::2, 1::2].T  # non-contiguous, transposed
    result = round_trip(view)
    assert result.shape == view.shape
    assert result.strides == view.strides
    assert data_address(result) == data_address(view)
    np.testing.assert_array_equal(result, view)


def test_numpy_scalar_and_empty():
    scalar = np.array(2.5, dtype=np.float64)
    result = round_trip(scalar)
    assert result.shape == ()
    assert result[()] == 2.5
    empty = np.zeros((0, 3), dtype=np.int32)
    result = round_trip(empty)
    assert result.shape == (0, 3)
    assert result.dtype == np.int32


def test_outputs_are_writable_and_share_memory():
    source = np.zeros(4, dtype=np.float32)
    result = round_trip(source)
    assert result.flags.writeable
    result[1] = 7.0
    assert source[1] == 7.0


def test_readonly_and_negative_stride_inputs_are_copied():
    readonly = np.arange(5, dtype=np.int64)
    readonly.flags.writeable = False
    result = round_trip(readonly)
    np.testing.assert_array_equal(result, np.arange(5))
    assert data_address(result) != data_address(readonly)
    reversed_view = np.arange(6, dtype=np.float32)[::-1]
    result = round_trip(reversed_view)
    np.testing.assert_array_equal(result, [5, 4, 3, 2, 1, 0])


def test_python_lists_are_accepted():
    result = round_trip([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(result, [[1.0, 2.0], [3.0, 4.0]])


def test_lifetimes_release_the_source_exactly_once():
    source = np.arange(1000, dtype=np.float64)
    baseline = sys.getrefcount(source)
    result = round_trip(source)
    # The output keeps the source's memory alive through the kiln storage.
    assert sys.getrefcount(source) > baseline
    expected = np.arange(1000, dtype=np.float64)
    del source
    gc.collect()
    np.testing.assert_array_equal(result, expected)
    # Dropping the output releases the chain back to the source.
    source2 = np.arange(10, dtype=np.float64)
    baseline2 = sys.getrefcount(source2)
    out2 = round_trip(source2)
    del out2
    gc.collect()
    assert sys.getrefcount(source2) == baseline2


def test_unconsumed_export_is_freed():
    source = np.arange(8, dtype=np.float32)
    baseline = sys.getrefcount(source)
    lib = runtime._library()
    handle = runtime._to_kiln_tensor(lib, source)
    managed = runtime._P()
    runtime._check(lib.kiln_tensor_to_dlpack(handle, runtime.ctypes.byref(managed)))
    lib.kiln_tensor_free(handle)
    export = runtime._KilnDLPackExport(managed.value)
    capsule = export.__dlpack__()  # legacy capsule, never consumed
    with pytest.raises(BufferError):
        export.__dlpack__()
    del capsule, export
    gc.collect()
    assert sys.getrefcount(source) == baseline
    # An export object never asked for a capsule frees its tensor too.
    handle = runtime._to_kiln_tensor(lib, source)
    runtime._check(lib.kiln_tensor_to_dlpack(handle, runtime.ctypes.byref(managed)))
    lib.kiln_tensor_free(handle)
    export = runtime._KilnDLPackExport(managed.value)
    assert export.__dlpack_device__() == (1, 0)
    del export
    gc.collect()
    assert sys.getrefcount(source) == baseline


# ---- torch --------------------------------------------------------------------------------


def test_torch_round_trip_zero_copy_including_bfloat16_and_bool():
    import torch

    for tensor in (
        torch.randn(4, 3),
        torch.randn(4, 3).to(torch.bfloat16),
        torch.tensor([True, False, True]),
        torch.randn(5, 6)[:, ::2],  # non-contiguous
        torch.randn(2, 2, requires_grad=True),
    ):
        result = round_trip(tensor, output="torch")
        assert isinstance(result, torch.Tensor)
        assert result.dtype == tensor.dtype
        assert result.shape == tensor.shape
        assert result.stride() == tensor.stride()
        assert result.data_ptr() == tensor.data_ptr()
        assert torch.equal(result, tensor.detach())


def test_bfloat16_output_as_numpy_raises_type_error():
    import torch

    tensor = torch.randn(3, 3).to(torch.bfloat16)
    with pytest.raises(TypeError, match="output='torch'"):
        round_trip(tensor, output="numpy")


def test_torch_input_numpy_output():
    import torch

    tensor = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    result = round_trip(tensor)
    assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(result, np.arange(12, dtype=np.int32).reshape(3, 4))
    assert data_address(result) == tensor.data_ptr()


# ---- without torch ------------------------------------------------------------------------------

NO_TORCH_SCRIPT = r"""
import sys
sys.modules["torch"] = None  # any `import torch` now raises ImportError
import numpy as np
import kiln.runtime as rt
from kiln.runtime import KilnError, Module

lib = rt._library()
src = np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2]
handle = rt._to_kiln_tensor(lib, src)
out = rt._from_kiln_tensor(lib, handle, "numpy")
lib.kiln_tensor_free(handle)
assert out.__array_interface__["data"][0] == src.__array_interface__["data"][0]
np.testing.assert_array_equal(out, [[0, 2], [3, 5]])
try:
    Module("/nonexistent/x.kiln").load()
    raise SystemExit("expected KilnError")
except KilnError as e:
    assert e.status in ("NotFound", "IoError"), e
import kiln
assert "torch" not in [m for m in sys.modules if sys.modules[m] is not None and m.split(".")[0] == "torch"]
print("no-torch ok")
"""


def test_wrapper_works_without_torch():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PYTHON_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("KILN_LIBRARY", runtime.library_path())
    proc = subprocess.run([sys.executable, "-c", NO_TORCH_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "no-torch ok" in proc.stdout


# ---- end to end with a real program ------------------------------------------------------------------


def _c_api_test_binary() -> Path | None:
    explicit = os.environ.get("KILN_C_API_TEST")
    if explicit:
        return Path(explicit)
    candidate = Path(runtime.library_path()).resolve().parent / "tests" / "capi" / "c_api_test"
    return candidate if candidate.is_file() else None


def test_end_to_end_tiny_mlp_matches_eager(tmp_path):
    import torch

    import kiln

    class TinyMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(16, 32)
            self.fc2 = torch.nn.Linear(32, 8)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    torch.manual_seed(0)
    model = TinyMLP().eval()
    example = (torch.randn(4, 16),)
    ep = torch.export.export(model, example)
    path = tmp_path / "mlp.kiln"
    kiln.export(ep, backend="cpu").save(str(path))

    module = Module(path)
    module.load()
    assert module.method_names() == ["forward"]
    meta = module.method_meta("forward")
    assert meta.name == "forward"
    assert meta.backend and meta.device == "cpu"
    assert [s.dtype for s in meta.inputs] == ["float32"]
    assert [d.size for d in meta.inputs[0].dims] == [4, 16]
    assert [d.size for d in meta.outputs[0].dims] == [4, 8]
    assert isinstance(meta.metadata, dict)

    x = torch.randn(4, 16)
    with torch.no_grad():
        expected = model(x)

    (y_torch,) = module.forward(x, output="torch")
    (y_numpy,) = module(x.numpy())
    for got in (y_torch, torch.from_numpy(np.asarray(y_numpy))):
        assert got.shape == expected.shape and got.dtype == expected.dtype
        err = (got.double() - expected.double()).abs().max().item() / expected.abs().max().item()
        assert err <= 1e-5, err
    assert module.is_method_loaded("forward")
    module.unload_method("forward")
    assert not module.is_method_loaded("forward")
    module.load_method("forward")
    assert module.is_method_loaded("forward")

    with pytest.raises(KilnError) as info:
        module.execute("forward", [torch.randn(4, 15)])
    assert info.value.status == "InvalidArgument"
    with pytest.raises(KilnError) as info:
        module.execute("no_such_method", [x])
    assert info.value.status == "NotFound"
    with pytest.raises(KilnError) as info:
        Module(path).load({"no_such_backend": {"k": 1}})
    assert info.value.status == "InvalidArgument"
    assert "no_such_backend" in info.value.message

    # The C test (compiled as C, linked to libkiln.so) runs the same program
    # and compares with the eager outputs written here.
    binary = _c_api_test_binary()
    assert binary is not None, "c_api_test binary not found next to the library (set KILN_C_API_TEST)"
    inputs_file, outputs_file = tmp_path / "inputs.bin", tmp_path / "outputs.bin"
    inputs_file.write_bytes(x.contiguous().numpy().tobytes())
    outputs_file.write_bytes(expected.contiguous().numpy().tobytes())
    env = dict(os.environ, KILN_TEST_PROGRAM=str(path), KILN_TEST_INPUTS=str(inputs_file),
               KILN_TEST_OUTPUTS=str(outputs_file))
    proc = subprocess.run([str(binary)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ran: real_program" in proc.stdout
    assert "comparing with expected outputs" in proc.stdout


# ---- runtimes, settings, programs in memory ----------------------------------------------


def test_settings_table_is_reachable_and_typed():
    table = {s.name: s for s in runtime.settings()}
    assert table["require_signature"].type == "bool" and table["require_signature"].scope == "runtime"
    assert table["log_level"].type == "debug|info|warning|error|off" and table["log_level"].scope == "process"
    assert table["cuda_allow_tf32"].environment_variable == "KILN_CUDA_ALLOW_TF32"
    assert all(s.doc for s in table.values())
    # docs/settings.md lists exactly these settings (a C++ test checks it line by line).
    doc = (Path(__file__).resolve().parents[2] / "docs" / "settings.md").read_text()
    for name in table:
        assert f"| `{name}` |" in doc


def test_runtime_settings_are_typed_and_scoped():
    strict, lax = runtime.Runtime(require_signature=True), runtime.Runtime()
    assert strict.get("require_signature") is True and lax.get("require_signature") is False
    strict.set("trusted_keys", "/keys/a.pub")
    assert strict.get("trusted_keys") == "/keys/a.pub" and lax.get("trusted_keys") == ""
    before = lax.get("cuda_upload_workers")
    strict.set("cuda_upload_workers", 3)  # process scope: every runtime sees it
    try:
        assert lax.get("cuda_upload_workers") == 3 and runtime.Runtime.default().get("cuda_upload_workers") == 3
    finally:
        strict.set("cuda_upload_workers", before)
    with pytest.raises(KilnError) as e:
        lax.set("no_such_setting", 1)
    assert e.value.status == "InvalidArgument" and "no_such_setting" in str(e.value)
    with pytest.raises(KilnError) as e:
        lax.set("require_signature", "perhaps")
    assert e.value.status == "InvalidArgument" and "require_signature" in str(e.value)
    with pytest.raises(TypeError):
        lax.set("require_signature", 1.5)


def test_an_unreadable_environment_stops_a_new_runtime(monkeypatch):
    """Checked in a fresh process: the process reads its environment once, at first use."""
    code = (
        "from kiln.runtime import Runtime, KilnError\n"
        "try:\n    Runtime()\nexcept KilnError as e:\n    print(e.status, e)\n"
    )
    env = {**os.environ, "KILN_DISABLE_CUDA": "sometimes", "PYTHONPATH": str(PYTHON_DIR)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "InvalidArgument" in out.stdout and "KILN_DISABLE_CUDA='sometimes'" in out.stdout, out.stdout


def test_cuda_calls_name_why_there_is_no_gpu():
    if runtime.cuda.device_count() > 0:
        pytest.skip("this machine has a GPU: tests/gpu covers the CUDA calls")
    for call in (runtime.cuda.memory_stats, runtime.cuda.current_stream, runtime.cuda.release_cached_memory):
        with pytest.raises(KilnError) as e:
            call()
        assert e.value.status == "NotSupported" and "CUDA" in str(e.value)


def test_a_program_from_bytes_and_a_strict_runtime(tmp_path):
    import torch

    import kiln

    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh()).eval()
    path = tmp_path / "m.kiln"
    kiln.export(torch.export.export(model, (torch.randn(3, 8),)), backend="cpu").save(str(path))
    data = bytearray(path.read_bytes())
    module = Module.from_bytes(data)
    data[:] = b"\xff" * len(data)  # the module holds its own copy
    x = torch.randn(3, 8)
    (y,) = module.forward(x.numpy())
    with torch.no_grad():
        np.testing.assert_allclose(y, model(x).numpy(), rtol=1e-5, atol=1e-6)
    # A runtime that requires signatures refuses the unsigned program, from a file or from memory.
    cli = os.environ.get("KILN_CLI", str(Path(runtime.library_path()).parent / "kiln"))
    subprocess.run([cli, "keygen", "--out", str(tmp_path / "release")], check=True, capture_output=True, timeout=60)
    strict = runtime.Runtime(require_signature=True, trusted_keys=str(tmp_path / "release.pub"))
    for refused in (Module(path, runtime=strict), Module.from_bytes(path.read_bytes(), runtime=strict)):
        with pytest.raises(KilnError) as e:
            refused.load()
        assert e.value.status == "IntegrityError" and "not signed" in str(e.value), e.value
        with pytest.raises(KilnError):
            refused.forward(x.numpy())  # the refusal is sticky: no load without the policy
