"""Files that change, shrink or are not files at all, from the outside: a real exported CPU
model served through the Python wrapper while its program is rewritten in place or
truncated (each in a subprocess, so a SIGBUS fails the test instead of ending the run);
the sticky signature policy through the wrapper (the C API); and FIFOs given to every
path the CLI reads, each under a deadline (a FIFO used to block open() forever).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kiln import program as kp
from kiln.runtime import KilnError, Module

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("KILN_CLI", str(REPO / "build" / "kiln"))


def run_cli(*args, env=None, timeout=20):
    if not Path(CLI).is_file():
        pytest.fail(f"kiln CLI not found at {CLI} (build it or set KILN_CLI)")
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """(program path, signing key stem, eager model) of a small CPU MLP, signed."""
    import torch

    import kiln

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(model, (torch.randn(4, 32),), dynamic_shapes=({0: batch},))
    directory = tmp_path_factory.mktemp("untrusted")
    path = directory / "mlp.kiln"
    kiln.export(ep, backend="cpu", verbose=False).save(str(path))
    assert run_cli("keygen", "--out", directory / "release").returncode == 0
    proc = run_cli("sign", path, "--key", directory / "release.key")
    assert proc.returncode == 0, proc.stderr
    return path, directory / "release", model


def _eager(model, x):
    import torch

    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


# The child loads the program, runs it, lets the file change (mode), runs again.
_CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    from kiln.runtime import Module
    path, mode, key = sys.argv[1], sys.argv[2], sys.argv[3]
    options = {}
    if key:
        options = {"program": {"require_signature": True, "trusted_keys_file": key + ".pub"}}
    m = Module(path)
    m.load(options)
    x = np.random.default_rng(7).standard_normal((5, 32)).astype(np.float32)
    if mode == "before-load-method":
        pass
    else:
        (first,) = m.forward(x)
        np.save(sys.argv[4], first)
    size = os.path.getsize(path)
    if mode.startswith("truncate") or mode == "before-load-method":
        os.truncate(path, 0 if mode == "truncate" else size // 2)
    elif mode == "rewrite":
        # Every byte after the FlatBuffer (weights and library) overwritten in place.
        with open(path, "r+b") as f:
            f.seek(size // 4)
            f.write(bytes([0x5A]) * (size - size // 4))
    for _ in range(3):
        try:
            (again,) = m.forward(x)
        except Exception as e:  # a named error, printed for the parent
            print("ERROR", type(e).__name__, e)
            sys.exit(3)
        np.save(sys.argv[4], again)
    print("OK")
""")


def _serve_while_changed(tmp_path, program, mode, key=""):
    copy = tmp_path / f"{mode}.kiln"
    copy.write_bytes(program.read_bytes())
    out = tmp_path / f"{mode}.npy"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", _CHILD, str(copy), mode, str(key), str(out)], capture_output=True,
                          text=True, timeout=120, env=env), out


@pytest.mark.parametrize("mode", ["truncate", "truncate-half", "rewrite"])
def test_a_program_changed_while_served_keeps_giving_its_answers(mlp, tmp_path, mode):
    path, _, model = mlp
    proc, out = _serve_while_changed(tmp_path, path, mode)
    assert proc.returncode == 0, f"signal {-proc.returncode}" if proc.returncode < 0 else proc.stdout + proc.stderr
    x = np.random.default_rng(7).standard_normal((5, 32)).astype(np.float32)
    np.testing.assert_allclose(np.load(out), _eager(model, x), rtol=1e-5, atol=1e-6)


def test_a_signed_program_rewritten_after_load_runs_what_was_verified(mlp, tmp_path):
    path, key, model = mlp
    proc, out = _serve_while_changed(tmp_path, path, "rewrite", key)
    assert proc.returncode == 0, f"signal {-proc.returncode}" if proc.returncode < 0 else proc.stdout + proc.stderr
    x = np.random.default_rng(7).standard_normal((5, 32)).astype(np.float32)
    np.testing.assert_allclose(np.load(out), _eager(model, x), rtol=1e-5, atol=1e-6)


def test_truncated_between_load_and_first_call_is_a_named_error(mlp, tmp_path):
    path, _, _ = mlp
    proc, _ = _serve_while_changed(tmp_path, path, "before-load-method")
    assert proc.returncode == 3, f"signal {-proc.returncode}" if proc.returncode < 0 else proc.stdout + proc.stderr
    assert "IoError" in proc.stdout and "truncated after it was opened" in proc.stdout, proc.stdout


def test_a_refused_policy_is_sticky_through_the_wrapper(tmp_path, mlp):
    path, key, _ = mlp
    unsigned = tmp_path / "unsigned.kiln"
    unsigned.write_bytes(path.read_bytes()[:-112])  # the trailer removed
    policy = {"program": {"require_signature": True, "trusted_keys_file": f"{key}.pub"}}
    m = Module(str(unsigned))
    with pytest.raises(KilnError) as err:
        m.load(policy)
    assert err.value.status == "IntegrityError"
    x = np.zeros((2, 32), dtype=np.float32)
    calls = {
        "forward": lambda: m.forward(x),
        "execute": lambda: m.execute("forward", [x]),
        "load_method": lambda: m.load_method("forward"),
        "method_names": lambda: m.method_names(),
        "method_meta": lambda: m.method_meta("forward"),
    }
    for name, call in calls.items():
        with pytest.raises(KilnError) as err:
            call()
        assert err.value.status == "IntegrityError", name
        assert "the program is not signed" in err.value.message, name
    with pytest.raises(KilnError) as err:
        m.load({"program": {"require_signature": False}})
    assert "cannot be lifted" in err.value.message
    # The same file loads in a Module that never asked for a signature.
    (y,) = Module(str(unsigned)).forward(x)
    assert y.shape == (2, 8)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _refused_naming(proc, path):
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert str(path) in proc.stderr and "FIFO" in proc.stderr, proc.stderr


def test_fifos_given_to_the_cli_are_refused_at_once(mlp, tmp_path, fifo):
    path, key, _ = mlp
    _refused_naming(run_cli("inspect", fifo), fifo)
    _refused_naming(run_cli("run", fifo, "--repeat", "0"), fifo)
    _refused_naming(run_cli("run", path, "--input", fifo, "--repeat", "0"), fifo)
    _refused_naming(run_cli("verify", path, "--trust", fifo), fifo)
    _refused_naming(run_cli("sign", path, "--key", fifo, "--out", tmp_path / "s.kiln"), fifo)
    env = dict(os.environ, KILN_REQUIRE_SIGNATURE="1", KILN_TRUSTED_KEYS=str(fifo))
    _refused_naming(run_cli("run", path, "--repeat", "0", env=env), fifo)
    _refused_naming(run_cli("import", fifo, "-o", tmp_path / "i.kiln"), fifo)
    # As an output: a rename would turn the FIFO into a regular file.
    _refused_naming(run_cli("sign", path, "--key", f"{key}.key", "--out", fifo), fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_as_external_data_file_is_refused_at_once(tmp_path, fifo):
    prog = kp.Program()
    prog.add_named_data("lib", b"\x7fELF" + bytes(60))
    prog.add_named_data("weights", bytes(4096), external=True)
    spec = kp.TensorSpec("x", "float32", [kp.DimSpec(4)])
    prog.add_method(kp.MethodSpec("forward", inputs=[spec], outputs=[spec], library_key="lib", weights_key="weights"))
    prog.save(tmp_path / "m.kiln")
    _refused_naming(run_cli("inspect", tmp_path / "m.kiln", "--data", fifo), fifo)
    with pytest.raises(KilnError) as err:
        Module(str(tmp_path / "m.kiln"), data_files=[str(fifo)]).load()
    assert "FIFO" in err.value.message and str(fifo) in err.value.message


def test_an_index_out_of_range_is_an_error_whichever_thread_checks_it(tmp_path):
    """Compiled kernels check gathered indices with aoti_torch_check; inside a parallel region
    the check fails on an OpenMP worker thread, which the method's own thread never saw: the
    call used to succeed with values read past the embedding table. Now it is an error at
    every thread count (as in eager, which raises IndexError)."""
    import torch

    import kiln

    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Embedding(10, 4)

        def forward(self, ids):
            return self.table(ids) * 2

    path = tmp_path / "embed.kiln"
    kiln.export(torch.export.export(Embed().eval(), (torch.tensor([1, 2]),)), backend="cpu",
                verbose=False).save(str(path))
    for threads in (None, 1, 2):
        module = Module(str(path))
        module.load({"aoti": {"num_threads": threads}} if threads else None)
        (ok,) = module.forward(np.array([1, 9], np.int64))
        assert ok.shape == (2, 4)
        with pytest.raises(KilnError) as err:
            module.forward(np.array([1, 10], np.int64))
        assert err.value.status == "BackendFailed", threads
        assert "index out of bounds" in err.value.message or "aoti_torch_check failed" in err.value.message, \
            err.value.message
        module.close()
