"""Weights placed by Kiln from the exporter's weights table (aoti.weights="kiln",
what "auto" means on every device) against the library's own blob loading
(aoti.weights="library"): same results as eager, and on the CPU Kiln copies no
parameter out of the program's mapping."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

import kiln
from kiln.runtime import Module

D_IN, D_OUT = 512, 4096  # 8 MiB of float32 weight: large against the noise of a load


class Head(nn.Module):
    def __init__(self, shared: nn.Linear, scale: float):
        super().__init__()
        self.shared = shared
        self.register_buffer("offset", torch.full((D_OUT,), scale))

    def forward(self, x):
        return torch.tanh(self.shared(x)) + self.offset


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    torch.manual_seed(0)
    shared = nn.Linear(D_IN, D_OUT)
    first, second = Head(shared, 0.5).eval(), Head(shared, -0.25).eval()
    x = torch.randn(4, D_IN)
    eps = {"first": torch.export.export(first, (x,)), "second": torch.export.export(second, (x,))}
    program = kiln.export(eps, backend="cpu", verbose=False)
    path = tmp_path_factory.mktemp("weights") / "two_heads.kiln"
    program.save(str(path))
    return path, program, {"first": first, "second": second}


def anonymous_kib() -> int:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    raise AssertionError("no Anonymous line in smaps_rollup")


def test_exporter_records_the_weights_table(program):
    _, compiled, _ = program
    for name, method in compiled.methods.items():
        table = method.metadata.get("aoti_constants")
        assert table, f"{name}: no weights table"
        rows = [line.split("\t") for line in table.splitlines()]
        fqns = {r[1] for r in rows}
        assert "shared.weight" in fqns, fqns
        weight = next(r for r in rows if r[1] == "shared.weight")
        assert weight[2] == "float32" and weight[3] == "Parameter"
        assert weight[7] == f"{D_OUT},{D_IN}" and int(weight[5]) >= D_OUT * D_IN * 4


@pytest.mark.parametrize("placement", ["kiln", "library"])
def test_results_match_eager(program, placement):
    path, _, models = program
    module = Module(str(path))
    module.load({"aoti": {"weights": placement}})
    for name, model in models.items():
        x = torch.randn(4, D_IN)
        (got,) = module.execute(name, [x.numpy()])
        with torch.no_grad():
            want = model(x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    module.close()


def load_cost_kib(path, placement) -> int:
    """Anonymous memory a module with both methods loaded adds to the process."""
    before = anonymous_kib()
    module = Module(str(path))
    module.load({"aoti": {"weights": placement}})
    module.load_method("first")
    module.load_method("second")
    cost = anonymous_kib() - before
    module.close()
    return cost


def test_cpu_weights_are_held_once(program):
    """A method's weights blob is read into private memory once (what was checked is what
    runs: docs/program-format.md), and Kiln's CPU parameters are views of that copy, which
    both methods share: loading the two methods that use the 8 MiB weight adds it once (the
    copy is fresh anonymous memory, so it shows however warm the heap is)."""
    path, _, _ = program
    weight_kib = D_OUT * D_IN * 4 // 1024
    for placement in ("kiln", "library"):  # warm-up: libraries, allocator arenas
        load_cost_kib(path, placement)
    cost = load_cost_kib(path, "kiln")
    assert weight_kib * 0.9 < cost < weight_kib * 1.25, (cost, weight_kib)


def test_verify_weights_off_still_loads(program):
    path, _, models = program
    module = Module(str(path))
    module.load({"aoti": {"weights": "kiln", "verify_weights": False}})
    x = torch.randn(4, D_IN)
    (got,) = module.execute("first", [x.numpy()])
    with torch.no_grad():
        np.testing.assert_allclose(got, models["first"](x).numpy(), rtol=1e-5, atol=1e-5)
    module.close()


def test_unknown_placement_is_refused(program):
    path, _, _ = program
    module = Module(str(path))
    with pytest.raises(Exception, match="weights"):
        module.load({"aoti": {"weights": "elsewhere"}})


def test_auto_placement_on_the_cpu_is_kiln(program):
    """With no "weights" option a CPU method's weights are Kiln's: views of its
    private copy of the blob, buffers copied into an arena (the info log's "placed ... on cpu"
    line). The library's own loading copied the whole blob for larger models
    (187 MiB and 215 ms for a Whisper-base decoder step, docs/cpu.md)."""
    path, _, _ = program
    script = ("import sys; from kiln.runtime import Module; m = Module(sys.argv[1]); "
              "m.load_method('first'); m.close()")
    env = dict(os.environ, KILN_LOG_LEVEL="info")
    logs = {}
    for options in ("auto", "library"):
        args = [sys.executable, "-c", script if options == "auto" else script.replace(
            "m.load_method('first')", "m.load({'aoti': {'weights': 'library'}}); m.load_method('first')"), str(path)]
        run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        logs[options] = run.stderr
    assert "placed" in logs["auto"] and "on cpu" in logs["auto"], logs["auto"]
    assert "placed" not in logs["library"], logs["library"]


class Ballast(nn.Module):
    """A 4 MiB buffer: Kiln copies buffers (a model may update them in place)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("ballast", torch.randn(1 << 20))

    def forward(self, x):
        return x + self.ballast[: x.shape[0]]


def test_unloading_releases_placed_weights(tmp_path):
    """The container keeps its own handle to each user-managed weight and never
    deletes it; Kiln deletes those after the container, so 100 load/unload
    cycles do not keep 100 copies of the 4 MiB buffer."""
    torch.manual_seed(1)
    model = Ballast().eval()
    x = torch.randn(8)
    path = tmp_path / "ballast.kiln"
    kiln.export({"forward": torch.export.export(model, (x,))}, backend="cpu", verbose=False).save(str(path))

    def cycle():
        m = Module(str(path))
        m.load_method("forward", {"aoti": {"weights": "kiln"}})
        (y,) = m.forward(x.numpy())
        np.testing.assert_allclose(y, model(x).numpy(), rtol=1e-6, atol=1e-6)
        m.close()

    for _ in range(5):
        cycle()
    before = anonymous_kib()
    for _ in range(100):
        cycle()
    grown = anonymous_kib() - before
    assert grown < 40 * 1024, f"anonymous memory grew by {grown} KiB over 100 cycles (each leaked copy is 4096 KiB)"


class OddBuffers(nn.Module):
    """Buffers of odd sizes (7, 13 and 1001 floats: 28, 52 and 4004 bytes), so
    their neighbours in the blob are not 256-byte aligned: Kiln copies buffers
    into one arena per method, each constant aligned on its own."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 1001)
        self.register_buffer("a", torch.randn(7))
        self.register_buffer("b", torch.randn(13))
        self.register_buffer("c", torch.randn(1001))

    def forward(self, x):
        y = self.proj(x) * self.c
        return torch.cat([y, (x[:, :7] * self.a), (x[:, :13] + self.b)], dim=1)


class Wrapped(nn.Module):
    """The same OddBuffers under the same attribute name: same FQNs in every method."""

    def __init__(self, inner: OddBuffers, scale: float):
        super().__init__()
        self.inner = inner
        self.scale = scale

    def forward(self, x):
        return self.inner(x) * self.scale


def test_odd_sized_buffers_in_one_arena_shared_between_methods(tmp_path):
    """Two methods use the same module (same FQNs and bytes): the second takes the
    first's buffers, both match eager, and unloading one method keeps the other's
    shared buffers alive."""
    torch.manual_seed(2)
    inner = OddBuffers().eval()
    models = {"once": Wrapped(inner, 1.0).eval(), "twice": Wrapped(inner, 2.0).eval()}
    x = torch.randn(3, 16)
    eps = {name: torch.export.export(m, (x,)) for name, m in models.items()}
    path = tmp_path / "odd_buffers.kiln"
    program = kiln.export(eps, backend="cpu", verbose=False)
    program.save(str(path))
    for name in eps:
        rows = [line.split("\t") for line in program.methods[name].metadata["aoti_constants"].splitlines()]
        # (Inductor may inline the smallest one.)
        assert {"inner.b", "inner.c"} <= {r[1] for r in rows if r[3] == "Buffer"}, rows
    module = Module(str(path))
    module.load({"aoti": {"weights": "kiln"}})
    module.load_method("once")
    module.load_method("twice")
    module.unload_method("once")  # its arena holds the buffers "twice" shares
    for name in ("twice", "once", "twice"):
        xi = torch.randn(3, 16)  # fresh values, the exported shape
        (got,) = module.execute(name, [xi.numpy()])
        with torch.no_grad():
            want = models[name](xi).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    module.close()
