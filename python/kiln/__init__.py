"""Kiln: run AOTInductor-compiled PyTorch models without libtorch.

Importing ``kiln`` does not import torch: the runtime wrapper works without it.  The
exporter (which needs torch) loads on first use of ``kiln.export``.
"""

from __future__ import annotations

import os


def _read_version() -> str:
    # The release version is written once, in the repository's top-level VERSION file (CMake
    # reads it too); a built package carries a copy as kiln/VERSION (cmake/KilnWheel.cmake).
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = (os.path.join(here, "VERSION"), os.path.join(here, os.pardir, os.pardir, "VERSION"))
    for path in candidates:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read().strip()
        except FileNotFoundError:
            continue
    raise ImportError(f"kiln: no VERSION file (looked for {' and '.join(os.path.normpath(p) for p in candidates)})")


__version__ = _read_version()

__all__ = ["__version__", "export"]


def __getattr__(name: str):
    # Lazy so that `import kiln` stays torch-free; only the exporter needs torch.
    if name == "export":
        from kiln.exporter import export

        return export
    raise AttributeError(f"module 'kiln' has no attribute {name!r}")
