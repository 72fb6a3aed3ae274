"""Lifecycle and faults with a real AOTInductor library: 1000 load/execute/unload
cycles in one process leave descriptors, mappings and resident memory flat (the
library is really unmapped each time); a model library that cannot run here is
refused with a message instead of crashing; a memory limit too small for the
weights or for a run fails that call with OutOfMemory and breaks nothing else;
eight threads share one loaded method; the temporary-file fallback (no memfd)
loads the same model and leaves nothing on disk."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
import torch

import kiln
from kiln.runtime import KilnError, Module, Runtime
from parity_models import Mlp


@pytest.fixture(scope="module")
def mlp_program(tmp_path_factory):
    torch.manual_seed(0)
    model = Mlp().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(model, (torch.randn(4, 32),), dynamic_shapes=({0: batch},))
    path = tmp_path_factory.mktemp("lifecycle") / "mlp.kiln"
    kiln.export({"forward": ep}, backend="cpu", verbose=False).save(str(path))
    return model, path


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _model_mappings() -> int:
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if "kiln-model" in line)


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_thousand_load_unload_cycles_leave_nothing_behind(mlp_program):
    model, path = mlp_program
    x = torch.randn(3, 32)
    expected = model(x).detach().numpy()

    def cycle():
        module = Module(str(path))
        module.load_method("forward")
        (y,) = module.forward(x.numpy())
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
        assert _model_mappings() > 0  # loaded from the memfd named kiln-model
        module.close()

    for _ in range(10):
        cycle()
    fds, rss = _fds(), _rss_kib()
    for _ in range(1000):
        cycle()
    assert _model_mappings() == 0, "a model library stayed mapped after unload"
    assert _fds() == fds
    assert _rss_kib() - rss < 8 * 1024, f"resident memory grew by {_rss_kib() - rss} KiB over 1000 cycles"


def test_library_for_a_missing_isa_is_refused(mlp_program, tmp_path):
    _, path = mlp_program
    program = kiln.program.load(str(path))
    for method in program.methods:
        method.metadata["cpu_isa"] = "AVX512 AMX_TILE NOT_A_REAL_ISA"
        method.metadata["AOTI_MACHINE"] = "riscv64"
    bad = tmp_path / "foreign.kiln"
    program.save(str(bad))
    module = Module(str(bad))
    with pytest.raises(KilnError) as err:
        module.load_method("forward")
    assert "built for riscv64" in str(err.value)


def test_library_needing_a_newer_glibc_is_refused_naming_it(mlp_program, tmp_path):
    model, path = mlp_program
    program = kiln.program.load(str(path))
    for method in program.methods:
        method.metadata["glibc_required"] = "9.99"
    bad = tmp_path / "future-glibc.kiln"
    program.save(str(bad))
    module = Module(str(bad))
    with pytest.raises(KilnError) as err:
        module.load_method("forward")
    assert err.value.status == "NotSupported"
    assert "needs glibc 9.99" in err.value.message
    assert not module.is_method_loaded("forward")
    x = torch.randn(2, 32)  # the original program still loads and runs in this process
    (y,) = Module(str(path)).forward(x.numpy())
    np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_kiln_and_pytorchs_own_loader_share_a_process(mlp_program, tmp_path):
    """Kiln exports its shims as kiln_torch_* and renames a model's imports, so a
    libtorch-linked model loaded by PyTorch in the same process still binds to
    libtorch's aoti_torch_* (it used to bind to Kiln's and crash)."""
    model, path = mlp_program
    x = torch.randn(5, 32)
    kiln_module = Module(str(path))
    (ours,) = kiln_module.forward(x.numpy())
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(model, (torch.randn(4, 32),), dynamic_shapes=({0: batch},))
    package = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "mlp.pt2"))
    theirs = torch._inductor.aoti_load_package(package)(x)
    np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    (again,) = kiln_module.forward(x.numpy())  # Kiln's model still binds to Kiln's shims
    np.testing.assert_allclose(again, ours, rtol=0, atol=0)


def _weights_bytes(path) -> int:
    program = kiln.program.load(str(path))
    (method,) = program.methods
    sizes = {entry["key"]: entry["size"] for entry in program.named_data_info()}
    return sizes[method.weights_key]


def _limit(nbytes: int) -> dict:
    return {"aoti": {"max_memory_bytes": nbytes}}


def test_memory_limit_below_the_weights_fails_load_and_breaks_nothing(mlp_program):
    model, path = mlp_program
    weights = _weights_bytes(path)
    x = torch.randn(5, 32)
    expected = model(x).detach().numpy()
    other = Module(str(path))  # loaded first, without a limit
    other.load_method("forward")

    module = Module(str(path))
    with pytest.raises(KilnError) as err:
        module.load_method("forward", _limit(weights - 1))
    assert err.value.status == "OutOfMemory"
    assert f"weights needs {weights} bytes" in err.value.message
    assert f"is {weights - 1} bytes" in err.value.message
    assert not module.is_method_loaded("forward")

    module.load_method("forward", _limit(weights + (1 << 20)))  # the same module, with room
    (y,) = module.forward(x.numpy())
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    (z,) = other.forward(x.numpy())
    np.testing.assert_allclose(z, expected, rtol=1e-5, atol=1e-6)


def test_memory_limit_past_a_run_fails_execute_and_the_method_stays_usable(mlp_program):
    model, path = mlp_program
    # Room for the weights and a small batch's activations (batch 4: a 4x64
    # hidden buffer and the 4x16 output, 1280 bytes), not for batch 64's (20 KiB).
    module = Module(str(path))
    module.load_method("forward", _limit(_weights_bytes(path) + 8192))
    big = torch.randn(64, 32)
    with pytest.raises(KilnError) as err:
        module.forward(big.numpy())
    assert err.value.status == "OutOfMemory"
    assert "method 'forward': running the model failed" in err.value.message
    assert "aoti.max_memory_bytes" in err.value.message
    for _ in range(3):  # the failed run gave back everything it had taken
        small = torch.randn(4, 32)
        (y,) = module.forward(small.numpy())
        np.testing.assert_allclose(y, model(small).detach().numpy(), rtol=1e-5, atol=1e-6)
        with pytest.raises(KilnError):
            module.forward(big.numpy())


@pytest.mark.parametrize("num_models", [1, 4])
def test_eight_threads_execute_one_module(mlp_program, num_models):
    model, path = mlp_program
    module = Module(str(path))
    module.load_method("forward", {"aoti": {"num_models": num_models}})
    inputs = [[torch.randn(1 + (t + i) % 9, 32) for i in range(25)] for t in range(8)]
    expected = [[model(x).detach().numpy() for x in per_thread] for per_thread in inputs]
    failures: list[str] = []
    start = threading.Barrier(8)

    def worker(t: int) -> None:
        start.wait()
        for x, want in zip(inputs[t], expected[t]):
            try:
                (y,) = module.forward(x.numpy())
                np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
            except Exception as e:  # noqa: BLE001 - collected and reported below
                failures.append(f"thread {t}: {e}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures, failures[:3]


def test_temp_file_fallback_loads_and_leaves_nothing_on_disk(mlp_program, tmp_path, monkeypatch):
    model, path = mlp_program
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    runtime = Runtime.default()
    runtime.set("disable_memfd", True)  # a process setting: takes the fallback on purpose
    memfd_mappings = _model_mappings()  # modules of earlier tests may still be alive
    module = Module(str(path))
    try:
        module.load_method("forward")
    finally:
        runtime.set("disable_memfd", False)
    assert list(scratch.iterdir()) == []
    assert _model_mappings() == memfd_mappings  # not from a memfd: from the (deleted) temporary file
    x = torch.randn(6, 32)
    (y,) = module.forward(x.numpy())
    np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    module.close()
    assert list(scratch.iterdir()) == []


class _CacheWriter(torch.nn.Module):
    def forward(self, x, pos, cache):
        cache.index_put_((pos,), x)
        return cache.sum(dim=0)


def test_inputs_written_in_place_reach_the_callers_buffer_and_are_checked(tmp_path):
    """The exporter names the inputs a method writes (metadata mutated_inputs); the
    compiled code writes the caller's own buffer; a program naming an input that does
    not exist is refused at load."""
    model = _CacheWriter()
    example = (torch.randn(1, 4), torch.tensor([2]), torch.zeros(8, 4))
    program = kiln.export({"forward": torch.export.export(model, example)}, backend="cpu", verbose=False)
    assert program.methods["forward"].metadata["mutated_inputs"] == "cache"
    path = tmp_path / "writer.kiln"
    program.save(str(path))

    cache = np.zeros((8, 4), dtype=np.float32)
    x = np.random.default_rng(0).standard_normal((1, 4)).astype(np.float32)
    (total,) = Module(str(path)).forward(x, np.array([5], dtype=np.int64), cache)
    np.testing.assert_array_equal(cache[5], x[0])  # written where the caller can see it
    np.testing.assert_allclose(total, x[0], rtol=1e-6)

    loaded = kiln.program.load(str(path))
    next(m for m in loaded.methods if m.name == "forward").metadata["mutated_inputs"] = "cache,not_an_input"
    bad = tmp_path / "bad.kiln"
    loaded.save(str(bad))
    with pytest.raises(KilnError) as err:
        Module(str(bad)).load_method("forward")
    assert err.value.status == "InvalidProgram"
    assert "mutated_inputs names 'not_an_input'" in err.value.message
