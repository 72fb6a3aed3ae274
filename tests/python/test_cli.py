"""Tests of the `kiln` command-line tool, run as a subprocess.

The binary is $KILN_CLI, default <repo>/build/kiln.  The first group needs only
the binary (version, usage errors, corrupt files); the end-to-end group exports
a small MLP with torch + kiln.export and checks `kiln inspect --json` against
what the exporter was given and `kiln run` outputs against eager PyTorch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("KILN_CLI", str(REPO / "build" / "kiln"))


def run_cli(*args, timeout=300):
    if not Path(CLI).is_file():
        pytest.fail(f"kiln CLI not found at {CLI} (build it or set KILN_CLI)")
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout)


# --- binary only -----------------------------------------------------------------


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0, proc.stderr
    # The version itself comes from the top-level VERSION file (test_version.py).
    assert proc.stdout.strip() == f"kiln {(REPO / 'VERSION').read_text().strip()} (program format 1)"


def test_no_arguments_is_a_usage_error():
    proc = run_cli()
    assert proc.returncode == 2
    assert "usage: kiln <command>" in proc.stderr
    assert proc.stdout == ""


def test_help_lists_commands_and_exit_codes():
    proc = run_cli("help")
    assert proc.returncode == 0
    for word in ("inspect", "run", "--version", "2 usage error"):
        assert word in proc.stdout


@pytest.mark.parametrize("command", ["inspect", "run"])
def test_command_help_goes_to_stdout(command):
    for args in ([command, "--help"], [command, "-h"], ["help", command]):
        proc = run_cli(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert proc.stdout.startswith(f"usage: kiln {command} PROGRAM.kiln"), args


@pytest.mark.parametrize(
    "args, needle",
    [
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["help", "frobnicate"], "unknown command 'frobnicate'"),
        (["inspect"], "missing the program file"),
        (["inspect", "a.kiln", "b.kiln"], "expected exactly one program file"),
        (["inspect", "a.kiln", "--jsonn"], "unknown option '--jsonn'"),
        (["inspect", "a.kiln", "--data"], "option '--data' needs a value"),
        (["inspect", "a.kiln", "--json=yes"], "option '--json' takes no value"),
        (["run"], "missing the program file"),
        (["run", "a.kiln", "--repeat", "many"], "--repeat needs a non-negative integer"),
        (["run", "a.kiln", "--repeat=-1"], "--repeat needs a non-negative integer"),
        (["run", "a.kiln", "--seed", "x"], "--seed needs an integer"),
        (["run", "a.kiln", "--option", "num_threads=4"], "is not BACKEND.KEY=VALUE"),
        (["run", "a.kiln", "--option", "aoti.num_threads"], "is not BACKEND.KEY=VALUE"),
        (["run", "a.kiln", "--int-range", "5,5"], "--int-range needs LO,HI with LO < HI"),
        (["run", "a.kiln", "--int-range", "1"], "--int-range needs LO,HI"),
        (["run", "a.kiln", "--dim", "s0"], "--dim needs SYMBOL=SIZE"),
    ],
)
def test_usage_errors_exit_2_with_usage_text(args, needle):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert "usage: kiln" in proc.stderr


ERROR_LINE = re.compile(r"^kiln: error: (\w+): (.+)$", re.M)


def test_inspect_missing_file_is_a_runtime_error(tmp_path):
    missing = tmp_path / "missing.kiln"
    proc = run_cli("inspect", missing)
    assert proc.returncode == 1
    m = ERROR_LINE.search(proc.stderr)
    assert m, proc.stderr
    assert m.group(1) in ("NotFound", "IoError")
    assert "missing.kiln" in m.group(2)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"not a kiln program at all, just text\n" * 4, id="text"),
        pytest.param(bytes(range(256)) * 8, id="binary-noise"),
    ],
)
def test_inspect_corrupt_file_exits_1_naming_the_problem(tmp_path, content):
    bad = tmp_path / "corrupt.kiln"
    bad.write_bytes(content)
    proc = run_cli("inspect", bad)
    assert proc.returncode == 1, proc.stdout
    m = ERROR_LINE.search(proc.stderr)
    assert m, proc.stderr
    assert m.group(1) == "InvalidProgram", proc.stderr
    assert len(m.group(2)) > 10  # a message that says something, not just a code
    proc_json = run_cli("inspect", bad, "--json")
    assert proc_json.returncode == 1
    assert proc_json.stdout == ""


def test_run_corrupt_program_exits_1(tmp_path):
    bad = tmp_path / "corrupt.kiln"
    bad.write_bytes(b"\x00" * 100)
    proc = run_cli("run", bad)
    assert proc.returncode == 1
    assert ERROR_LINE.search(proc.stderr), proc.stderr


# --- end to end: export with torch, inspect and run with the CLI -----------------


def _export_deps():
    torch = pytest.importorskip("torch")
    import sys

    sys.path.insert(0, str(REPO / "python"))
    try:
        import kiln
        import kiln.program  # noqa: F401  (the exporter's program writer)
        from kiln.exporter import export  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the tree's state
        pytest.skip(f"kiln exporter not available: {e}")
    return torch, kiln


IN_FEATURES, HIDDEN, OUT_FEATURES = 16, 32, 8


@pytest.fixture(scope="module")
def mlp_program(tmp_path_factory):
    """(path, eager model) of a tiny MLP with a dynamic batch dimension (1..64)."""
    torch, kiln = _export_deps()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(IN_FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT_FEATURES)
    ).eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(model, (torch.randn(4, IN_FEATURES),), dynamic_shapes=({0: batch},))
    path = tmp_path_factory.mktemp("cli") / "mlp.kiln"
    kiln.export(ep, backend="cpu", metadata={"model": "cli test mlp"}, verbose=False).save(str(path))
    return path, model


def eager(model, x: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model(torch.from_numpy(np.ascontiguousarray(x))).numpy()


def test_inspect_json_describes_the_contract(mlp_program):
    path, _ = mlp_program
    proc = run_cli("inspect", path, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["file_size"] == path.stat().st_size
    assert doc["format_version"] == 1
    assert doc["metadata"].get("model") == "cli test mlp"
    (method,) = doc["methods"]
    assert (method["name"], method["backend"], method["device"]) == ("forward", "aoti", "cpu")
    (inp,) = method["inputs"]
    assert inp["dtype"] == "float32"
    d0, d1 = inp["dims"]
    assert d0["dynamic"] and (d0["min"], d0["max"], d0["size"]) == (1, 64, 4)
    assert d1 == {"size": IN_FEATURES, "dynamic": False}
    assert inp["shape"] == f"float32[{d0['name']}:1..64, {IN_FEATURES}]"
    (out,) = method["outputs"]
    assert out["dtype"] == "float32"
    assert out["dims"][0]["dynamic"] and out["dims"][0]["name"] == d0["name"]
    assert out["dims"][1] == {"size": OUT_FEATURES, "dynamic": False}
    # Named data: the method's library and weights, with the digests the exporter
    # recorded in the method metadata (computed there with hashlib).
    by_key = {entry["key"]: entry for entry in doc["named_data"]}
    lib = by_key[method["library_key"]]
    assert lib["sha256"] == method["metadata"]["library_sha256"]
    assert lib["location"] == "in-file" and lib["size"] > 0 and lib["alignment"] >= 1
    if method["weights_key"]:
        assert by_key[method["weights_key"]]["sha256"] == method["metadata"]["weights_sha256"]
    for entry in doc["named_data"]:
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])

    text = run_cli("inspect", path, "--verify")
    assert text.returncode == 0, text.stderr
    assert f"{d0['name']}:1..64, {IN_FEATURES}]" in text.stdout
    assert "digest check: ok" in text.stdout


def test_run_matches_eager(mlp_program, tmp_path):
    path, model = mlp_program
    rng = np.random.default_rng(7)
    for batch in (1, 5, 64):
        x = rng.standard_normal((batch, IN_FEATURES)).astype(np.float32)
        np.save(tmp_path / "x.npy", x)
        out_dir = tmp_path / f"out{batch}"
        proc = run_cli("run", path, "--input", tmp_path / "x.npy", "--output-dir", out_dir, "--repeat", "3")
        assert proc.returncode == 0, proc.stderr
        files = sorted(out_dir.glob("out_*.npy"))
        assert len(files) == 1, proc.stdout
        assert files[0].name.startswith("out_0_")
        got = np.load(files[0])
        assert got.dtype == np.float32 and got.shape == (batch, OUT_FEATURES)
        np.testing.assert_allclose(got, eager(model, x), rtol=1e-5, atol=1e-6)
        assert "first call:" in proc.stdout and "median of 3 calls:" in proc.stdout
        assert re.search(r"^load: [0-9.]+ ms", proc.stdout, re.M)


def test_run_replaces_outputs_atomically(mlp_program, tmp_path):
    """A second run into the same --output-dir replaces out_*.npy under a reader of the first:
    the reader keeps the old bytes, the path holds the new array, no temporary file is left."""
    path, model = mlp_program
    out_dir = tmp_path / "out"
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((batch, IN_FEATURES)).astype(np.float32) for batch in (2, 7)]
    np.save(tmp_path / "x0.npy", xs[0])
    np.save(tmp_path / "x1.npy", xs[1])
    proc = run_cli("run", path, "--input", tmp_path / "x0.npy", "--output-dir", out_dir, "--repeat", "0")
    assert proc.returncode == 0, proc.stderr
    (out,) = out_dir.glob("out_*.npy")
    old_bytes = out.read_bytes()
    with open(out, "rb") as reader:
        proc = run_cli("run", path, "--input", tmp_path / "x1.npy", "--output-dir", out_dir, "--repeat", "0")
        assert proc.returncode == 0, proc.stderr
        assert reader.read() == old_bytes
    np.testing.assert_allclose(np.load(out), eager(model, xs[1]), rtol=1e-5, atol=1e-6)
    assert [p.name for p in out_dir.iterdir()] == [out.name]


def test_run_fortran_order_and_big_endian_inputs(mlp_program, tmp_path):
    path, model = mlp_program
    x = np.random.default_rng(3).standard_normal((6, IN_FEATURES)).astype(np.float32)
    for name, arr in (("f.npy", np.asfortranarray(x)), ("be.npy", x.astype(">f4"))):
        np.save(tmp_path / name, arr)
        proc = run_cli("run", path, "--input", tmp_path / name, "--output-dir", tmp_path / name[:-4], "--repeat", "0")
        assert proc.returncode == 0, proc.stderr
        got = np.load(next((tmp_path / name[:-4]).glob("out_0_*.npy")))
        np.testing.assert_allclose(got, eager(model, x), rtol=1e-5, atol=1e-6)


def test_run_random_inputs_are_seeded_and_use_the_example_size(mlp_program, tmp_path):
    path, _ = mlp_program
    outs = []
    for i, seed in enumerate((11, 11, 12)):
        d = tmp_path / f"r{i}"
        proc = run_cli("run", path, "--seed", seed, "--output-dir", d, "--repeat", "0")
        assert proc.returncode == 0, proc.stderr
        assert "(random)" in proc.stdout
        outs.append(np.load(next(d.glob("out_0_*.npy"))))
    assert outs[0].shape == (4, OUT_FEATURES)  # the example batch recorded at export
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], outs[2])
    proc = run_cli("run", path, "--dim", f"{_batch_symbol(path)}=9", "--output-dir", tmp_path / "dim", "--repeat", "0")
    assert proc.returncode == 0, proc.stderr
    assert np.load(next((tmp_path / "dim").glob("out_0_*.npy"))).shape == (9, OUT_FEATURES)


def _batch_symbol(path):
    doc = json.loads(run_cli("inspect", path, "--json").stdout)
    return doc["methods"][0]["inputs"][0]["dims"][0]["name"]


def test_run_input_errors_exit_1_naming_the_problem(mlp_program, tmp_path):
    path, _ = mlp_program
    x = np.zeros((2, IN_FEATURES), np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = run_cli("run", path, "--input", tmp_path / "x.npy", "--input", tmp_path / "x.npy")
    assert proc.returncode == 1
    assert "takes 1 inputs but 2 --input files were given" in proc.stderr

    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPX\x01\x00")
    proc = run_cli("run", path, "--input", tmp_path / "bad.npy")
    assert proc.returncode == 1
    assert "bad.npy" in proc.stderr and "bad magic" in proc.stderr

    good = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "short.npy").write_bytes(good[:-3])
    proc = run_cli("run", path, "--input", tmp_path / "short.npy")
    assert proc.returncode == 1
    assert "short.npy" in proc.stderr and "truncated data" in proc.stderr

    np.save(tmp_path / "c.npy", np.zeros((2, IN_FEATURES), np.complex64))
    proc = run_cli("run", path, "--input", tmp_path / "c.npy")
    assert proc.returncode == 1 and "unsupported dtype '<c8'" in proc.stderr

    proc = run_cli("run", path, "--method", "nope")
    assert proc.returncode == 1 and "nope" in proc.stderr and "forward" in proc.stderr


def test_run_writes_bfloat16_outputs_as_float32(tmp_path):
    torch, kiln = _export_deps()

    class ToBf16(torch.nn.Module):
        def forward(self, x):
            return (x * 2).to(torch.bfloat16)

    ep = torch.export.export(ToBf16(), (torch.randn(3, 5),))
    path = tmp_path / "bf16.kiln"
    kiln.export(ep, backend="cpu", verbose=False).save(str(path))
    x = np.random.default_rng(5).standard_normal((3, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = run_cli("run", path, "--input", tmp_path / "x.npy", "--output-dir", tmp_path / "o", "--repeat", "0")
    assert proc.returncode == 0, proc.stderr
    assert "numpy has no bfloat16" in proc.stdout
    got = np.load(next((tmp_path / "o").glob("out_0_*.npy")))
    assert got.dtype == np.float32
    expected = (torch.from_numpy(x) * 2).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(got, expected)


def test_run_int64_embedding_with_random_token_ids(tmp_path):
    torch, kiln = _export_deps()
    torch.manual_seed(0)
    model = torch.nn.Embedding(10, 4).eval()  # vocabulary of 10: default ids 0..9 fit
    ep = torch.export.export(model, (torch.zeros(2, 3, dtype=torch.int64),))
    path = tmp_path / "emb.kiln"
    kiln.export(ep, backend="cpu", verbose=False).save(str(path))
    proc = run_cli("run", path, "--output-dir", tmp_path / "o", "--repeat", "0", "--int-range", "3,4")
    assert proc.returncode == 0, proc.stderr
    got = np.load(next((tmp_path / "o").glob("out_0_*.npy")))
    # Every id is 3, so every row is embedding row 3.
    expected = np.broadcast_to(model.weight.detach().numpy()[3], (2, 3, 4))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
