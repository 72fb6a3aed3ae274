"""Packing logic of kiln.export with a stand-in backend (no AOTInductor compile):
content-addressed keys, weights dedup, empty weights, external weights, argument checks."""

from __future__ import annotations

import hashlib

import pytest
import torch

import kiln
from kiln.exporter import AotiBackend, CompiledMethod, UnreadCompileSpecWarning
from kiln.program import DimSpec, TensorSpec, load

ELF_A = b"\x7fELF" + b"A" * 200
ELF_B = b"\x7fELF" + b"B" * 300
WEIGHTS = bytes(range(256)) * 20


class CannedBackend(AotiBackend):
    """Returns prepared bytes per method name instead of compiling."""

    DEVICE = "cpu"

    def __init__(self, canned: dict[str, tuple[bytes, bytes]]):
        super().__init__()
        self.canned = canned
        self.seen_specs = []

    def preprocess(self, method_name, exported_program, compile_specs=None):
        self.seen_specs.append(dict(compile_specs or {}))
        library, weights = self.canned[method_name]
        spec = TensorSpec(name="x", dtype="float32", dims=[DimSpec(size=2, dynamic=True, min=1, max=9, name="s0")])
        return CompiledMethod(
            name=method_name,
            device="cpu",
            library=library,
            weights=weights,
            inputs=[spec],
            outputs=[TensorSpec(name="y", dtype="float32", dims=[DimSpec(size=3)])],
            metadata={"cpu_isa": "TEST"},
            library_inputs=1,
            library_outputs=1,
        )


def _methods(prog) -> dict:
    return {m.name: m for m in prog.methods}


def _named(prog) -> dict:
    """key -> info dict (key, size, alignment, sha256, external) of a loaded program."""
    return {info["key"]: info for info in prog.named_data_info()}




@pytest.fixture(scope="module")
def ep():
    return torch.export.export(torch.nn.Linear(2, 3), (torch.randn(1, 2),))


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_keys_dedup_and_empty_weights(ep, tmp_path):
    backend = CannedBackend({"a": (ELF_A, WEIGHTS), "b": (ELF_B, WEIGHTS), "c": (ELF_A, b"")})
    # "k" is read by no backend: it is only recorded, with a warning saying so.
    with pytest.warns(UnreadCompileSpecWarning, match="compile spec 'k' is not read"):
        result = kiln.export({"a": ep, "b": ep, "c": ep}, backend=backend, compile_specs={"k": 1}, verbose=False)
    path = tmp_path / "p.kiln"
    result.save(path)
    prog = load(str(path))
    methods = _methods(prog)
    assert methods["a"].library_key == sha(ELF_A) + "_so"
    assert methods["b"].library_key == sha(ELF_B) + "_so"
    assert methods["c"].library_key == methods["a"].library_key  # identical library stored once
    assert methods["a"].weights_key == methods["b"].weights_key == sha(WEIGHTS) + "_weights"
    assert methods["c"].weights_key == ""
    named = _named(prog)
    assert sorted(named) == sorted([sha(ELF_A) + "_so", sha(ELF_B) + "_so", sha(WEIGHTS) + "_weights"])
    assert prog.named_data_bytes(sha(WEIGHTS) + "_weights") == WEIGHTS
    assert prog.named_data_bytes(sha(ELF_B) + "_so") == ELF_B
    assert named[sha(WEIGHTS) + "_weights"]["alignment"] == 4096
    assert named[sha(ELF_A) + "_so"]["alignment"] == 64
    assert dict(methods["a"].compile_specs) == {"k": "1"}
    assert dict(methods["a"].metadata)["cpu_isa"] == "TEST"
    assert dict(methods["a"].metadata)["weights_sha256"] == sha(WEIGHTS)
    assert backend.seen_specs == [{"k": 1}] * 3
    (x,) = methods["a"].inputs
    assert (x.dims[0].dynamic, x.dims[0].min, x.dims[0].max, x.dims[0].name) == (True, 1, 9, "s0")


def test_external_weights_go_to_the_data_file(ep, tmp_path):
    backend = CannedBackend({"forward": (ELF_A, WEIGHTS)})
    result = kiln.export(ep, backend=backend, external_weights=True, verbose=False)
    path = tmp_path / "ext.kiln"
    data_path = tmp_path / "ext.kiln.data"
    result.save(path)
    assert data_path.exists()
    assert WEIGHTS in data_path.read_bytes()
    assert WEIGHTS not in path.read_bytes()
    assert ELF_A in path.read_bytes()  # libraries always stay in the program file
    prog = load(str(path))
    assert set(_methods(prog)) == {"forward"}
    named = _named(prog)
    assert named[sha(WEIGHTS) + "_weights"]["external"] is True
    assert named[sha(ELF_A) + "_so"]["external"] is False
    assert prog.named_data_bytes(sha(WEIGHTS) + "_weights") == WEIGHTS


def test_argument_checks(ep):
    with pytest.raises(TypeError, match="ExportedProgram"):
        kiln.export({"forward": torch.nn.Linear(2, 2)}, verbose=False)
    with pytest.raises(TypeError):
        kiln.export({}, verbose=False)
    with pytest.raises(ValueError, match="unknown Kiln backend"):
        kiln.export(ep, backend="tpu", verbose=False)
