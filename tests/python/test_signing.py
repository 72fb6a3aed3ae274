"""Signed programs from the outside: `kiln keygen/sign/verify` as subprocesses, the
Python reader on signed files, and the signature policy through the Python wrapper
(the "program" load options, i.e. the C API's kiln_options_set_*).

The program is written by kiln.program with stand-in library bytes: signing,
verification and the policy all act in Module.load(), before any library is opened.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from kiln import program as kp
from kiln.runtime import KilnError, Module

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("KILN_CLI", str(REPO / "build" / "kiln"))

LIBRARY = bytes((i * 7 + 3) % 256 for i in range(700))
WEIGHTS = bytes((i * 11 + 5) % 256 for i in range(3000))


def run_cli(*args, env=None):
    if not Path(CLI).is_file():
        pytest.fail(f"kiln CLI not found at {CLI} (build it or set KILN_CLI)")
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=60, env=env)


def write_program(path: Path) -> Path:
    prog = kp.Program({"model": "signing-test"})
    prog.add_named_data("lib", LIBRARY)
    prog.add_named_data("weights", WEIGHTS)
    spec = kp.TensorSpec("x", "float32", [kp.DimSpec(4)])
    prog.add_method(kp.MethodSpec("forward", inputs=[spec], outputs=[spec], library_key="lib", weights_key="weights"))
    prog.save(path)
    return path


@pytest.fixture
def signed(tmp_path):
    """(program path, alice stem): a program signed by alice's key, alice.key/.pub in tmp_path."""
    proc = run_cli("keygen", "--out", tmp_path / "alice")
    assert proc.returncode == 0, proc.stderr
    path = write_program(tmp_path / "m.kiln")
    proc = run_cli("sign", path, "--key", tmp_path / "alice.key")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"signed {path} with key ")
    return path, tmp_path / "alice"


def test_keygen_writes_key_files(tmp_path):
    proc = run_cli("keygen", "--out", tmp_path / "k")
    assert proc.returncode == 0, proc.stderr
    secret = (tmp_path / "k.key").read_text().split()
    public = (tmp_path / "k.pub").read_text().split()
    assert secret[0] == "kiln-ed25519-secret" and len(secret[1]) == 64
    assert public == ["kiln-ed25519-public", public[1], "k"] and len(public[1]) == 64
    assert public[1] in proc.stdout
    assert stat.S_IMODE((tmp_path / "k.key").stat().st_mode) == 0o600
    again = run_cli("keygen", "--out", tmp_path / "k")
    assert again.returncode == 1
    assert "already exists" in again.stderr
    assert run_cli("keygen").returncode == 2


def test_sign_and_verify(signed):
    path, alice = signed
    public_hex = Path(f"{alice}.pub").read_text().split()[1]
    proc = run_cli("verify", path, "--trust", f"{alice}.pub")
    assert proc.returncode == 0, proc.stderr
    assert f"signed by trusted key {public_hex}" in proc.stdout
    assert "2 named data entries match their digests" in proc.stdout
    # The Python reader accepts the signed file and reports the signer.
    prog = kp.load(path)
    assert prog.signed_by.hex() == public_hex
    assert prog.named_data_bytes("lib") == LIBRARY
    # kiln inspect shows it too.
    inspect = run_cli("inspect", path)
    assert f"signature: Ed25519 key {public_hex}" in inspect.stdout


def test_verify_refusals_name_what_failed(signed, tmp_path):
    path, alice = signed
    run_cli("keygen", "--out", tmp_path / "mallory")
    proc = run_cli("verify", path, "--trust", tmp_path / "mallory.pub")
    assert proc.returncode == 1
    assert "is not one of the 1 trusted keys" in proc.stderr

    data = bytearray(path.read_bytes())
    lib_at = bytes(data).index(LIBRARY)
    cases = {
        "lib": (lib_at + 10, "SHA-256 of named data 'lib'"),
        "weights": (bytes(data).index(WEIGHTS) + 2999, "SHA-256 of named data 'weights'"),
        "signature": (len(data) - 1, "does not match the program header"),
        "public key": (len(data) - 64 - 1, "which is not one of the 1 trusted keys"),
        "header": (48, "SHA-256 of the FlatBuffer"),
    }
    for what, (offset, expected) in cases.items():
        damaged = bytearray(data)
        damaged[offset] ^= 0x01
        target = tmp_path / f"damaged-{what.replace(' ', '_')}.kiln"
        target.write_bytes(damaged)
        proc = run_cli("verify", target, "--trust", f"{alice}.pub")
        assert proc.returncode == 1, what
        assert expected in proc.stderr, (what, proc.stderr)


def test_verify_unsigned_and_usage(tmp_path, signed):
    _, alice = signed
    plain = write_program(tmp_path / "plain.kiln")
    proc = run_cli("verify", plain, "--trust", f"{alice}.pub")
    assert proc.returncode == 1
    assert "the program is not signed" in proc.stderr
    env = {k: v for k, v in os.environ.items() if k != "KILN_TRUSTED_KEYS"}
    assert run_cli("verify", plain, env=env).returncode == 2
    # KILN_TRUSTED_KEYS stands in for --trust.
    env["KILN_TRUSTED_KEYS"] = f"{alice}.pub"
    assert "not signed" in run_cli("verify", plain, env=env).stderr


def test_resign_replaces_signature_and_out_keeps_original(signed, tmp_path):
    path, alice = signed
    run_cli("keygen", "--out", tmp_path / "bob")
    size = path.stat().st_size
    proc = run_cli("sign", path, "--key", tmp_path / "bob.key", "--out", tmp_path / "bob.kiln")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("verify", path, "--trust", f"{alice}.pub").returncode == 0  # untouched
    assert run_cli("verify", tmp_path / "bob.kiln", "--trust", tmp_path / "bob.pub").returncode == 0
    assert run_cli("sign", path, "--key", tmp_path / "bob.key").returncode == 0
    assert path.stat().st_size == size
    assert run_cli("verify", path, "--trust", tmp_path / "bob.pub").returncode == 0
    assert run_cli("verify", path, "--trust", f"{alice}.pub").returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp files left


def test_load_policy_through_python_wrapper(signed, tmp_path):
    path, alice = signed
    trusted = Path(f"{alice}.pub").read_text()
    policy = {"program": {"require_signature": True, "trusted_keys": trusted}}
    Module(str(path)).load(policy)
    Module(str(path)).load({"program": {"require_signature": True, "trusted_keys_file": f"{alice}.pub"}})

    plain = write_program(tmp_path / "plain.kiln")
    Module(str(plain)).load()  # no policy: an unsigned program loads
    with pytest.raises(KilnError) as err:
        Module(str(plain)).load(policy)
    assert err.value.status == "IntegrityError"
    assert "refused by the signature policy: the program is not signed" in err.value.message

    damaged = bytearray(path.read_bytes())
    damaged[bytes(damaged).index(WEIGHTS)] ^= 0x01
    (tmp_path / "damaged.kiln").write_bytes(damaged)
    with pytest.raises(KilnError) as err:
        Module(str(tmp_path / "damaged.kiln")).load(policy)
    assert err.value.status == "IntegrityError"
    assert "SHA-256 of named data 'weights'" in err.value.message

    with pytest.raises(KilnError) as err:
        Module(str(path)).load({"program": {"require_signature": True}})
    assert err.value.status == "InvalidArgument"
    assert "no key is trusted" in err.value.message


# --- end to end: a real exported model, signed, run under the policy ------------------


def test_signed_exported_model_runs_under_policy_and_tampering_is_refused(tmp_path):
    import numpy as np
    import torch

    import kiln

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    ep = torch.export.export(model, (torch.randn(3, 8),))
    path = tmp_path / "mlp.kiln"
    kiln.export(ep, backend="cpu", verbose=False).save(str(path))
    assert run_cli("keygen", "--out", tmp_path / "release").returncode == 0
    proc = run_cli("sign", path, "--key", tmp_path / "release.key")
    assert proc.returncode == 0, proc.stderr

    x = np.random.default_rng(3).standard_normal((3, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ, KILN_REQUIRE_SIGNATURE="1", KILN_TRUSTED_KEYS=str(tmp_path / "release.pub"))
    proc = run_cli("run", path, "--input", tmp_path / "x.npy", "--output-dir", tmp_path / "out", "--repeat", "0",
                   env=env)
    assert proc.returncode == 0, proc.stderr
    (out,) = sorted((tmp_path / "out").glob("out_*.npy"))
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-5, atol=1e-6)

    # One flipped bit in the weights: refused at load, naming the weights entry.
    prog = kp.load(path)
    (method,) = prog.methods
    weights = prog.named_data_bytes(method.weights_key)
    data = bytearray(path.read_bytes())
    data[bytes(data).index(weights) + len(weights) // 2] ^= 0x01
    (tmp_path / "tampered.kiln").write_bytes(data)
    proc = run_cli("run", tmp_path / "tampered.kiln", "--input", tmp_path / "x.npy", "--repeat", "0", env=env)
    assert proc.returncode == 1
    assert "refused by the signature policy" in proc.stderr
    assert f"SHA-256 of named data '{method.weights_key}'" in proc.stderr

    # Same through the load options instead of the environment (kiln run --option).
    proc = run_cli("run", path, "--input", tmp_path / "x.npy", "--repeat", "0",
                   "--option", "program.require_signature=true",
                   "--option", f"program.trusted_keys_file={tmp_path / 'release.pub'}")
    assert proc.returncode == 0, proc.stderr
