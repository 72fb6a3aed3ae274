"""Teardown with a real AOTInductor library: 200 load/execute/unload cycles in
one process leave descriptors, mappings and resident memory flat (the library
is really unmapped each time), and a model library that cannot run here is
refused with a message instead of crashing."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import kiln
from kiln.runtime import KilnError, Module
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


def test_two_hundred_load_unload_cycles_leave_nothing_behind(mlp_program):
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
    for _ in range(200):
        cycle()
    assert _model_mappings() == 0, "a model library stayed mapped after unload"
    assert _fds() == fds
    assert _rss_kib() - rss < 8 * 1024, f"resident memory grew by {_rss_kib() - rss} KiB over 200 cycles"


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
