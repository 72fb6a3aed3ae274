"""Run by scripts/wheel_test.sh with the Python of a fresh environment holding the installed
wheel, from a directory outside the source tree, without KILN_LIBRARY:

  check_installed.py export DIR   exports a small CPU model to DIR/model.kiln, with its input
                                  and eager output as .npy files beside it
  check_installed.py run DIR      runs DIR/model.kiln with kiln.runtime, compares with eager,
                                  and checks that libkiln and SLEEF came from the wheel

The model calls exp and tanh on float vectors, which AOTInductor compiles into vectorised
SLEEF calls, so a run that succeeds has opened SLEEF; /proc/self/maps shows which copy.
"""

from __future__ import annotations

import os
import sys

import numpy as np


def fail(message: str) -> None:
    print(f"[wheel check] {message}", file=sys.stderr)
    sys.exit(1)


def package_lib_dir() -> str:
    import kiln

    return os.path.join(os.path.dirname(os.path.abspath(kiln.__file__)), "lib")


def export(out_dir: str) -> None:
    import torch

    import kiln

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(64, 64)

        def forward(self, x):
            return torch.tanh(self.linear(x)) + torch.exp(-x * x)

    torch.manual_seed(0)
    model = Model().eval()
    x = torch.randn(8, 64)
    ep = torch.export.export(model, (x,))
    kiln.export({"forward": ep}, backend="cpu").save(os.path.join(out_dir, "model.kiln"))
    with torch.no_grad():
        expected = model(x)
    np.save(os.path.join(out_dir, "input.npy"), x.numpy())
    np.save(os.path.join(out_dir, "expected.npy"), expected.numpy())


def run(out_dir: str) -> None:
    import kiln
    from kiln.runtime import Module, library_path, version

    lib_dir = package_lib_dir()
    if os.path.dirname(library_path()) != lib_dir:
        fail(f"kiln.runtime uses {library_path()}, not the wheel's copy in {lib_dir}")
    if version() != kiln.__version__:
        fail(f"libkiln reports version {version()}, the package {kiln.__version__}")
    module = Module(os.path.join(out_dir, "model.kiln"))
    module.load()
    (y,) = module.forward(np.load(os.path.join(out_dir, "input.npy")))
    expected = np.load(os.path.join(out_dir, "expected.npy"))
    if not np.allclose(y, expected, rtol=1e-4, atol=1e-5):
        fail(f"output differs from eager: max abs difference {np.abs(y - expected).max()}")
    with open("/proc/self/maps", encoding="utf-8") as maps:
        sleef = sorted({line.split()[-1] for line in maps if "libsleef" in line})
    bundled = os.path.join(lib_dir, "libsleef.so.3")
    if sleef != [bundled]:
        fail(f"expected SLEEF mapped from the wheel ({bundled}) alone; mapped: {sleef or 'none'}")
    print(f"[wheel check] output matches eager; libkiln and SLEEF from {lib_dir}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("export", "run"):
        fail("usage: check_installed.py export|run DIR")
    {"export": export, "run": run}[sys.argv[1]](sys.argv[2])
