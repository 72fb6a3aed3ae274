"""Kiln: run AOTInductor-compiled PyTorch models without libtorch.

Importing ``kiln`` does not import torch: the runtime wrapper works without it.  The
exporter (which needs torch) loads on first use of ``kiln.export``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "export"]


def __getattr__(name: str):
    # Lazy so that `import kiln` stays torch-free; only the exporter needs torch.
    if name == "export":
        from kiln.exporter import export

        return export
    raise AttributeError(f"module 'kiln' has no attribute {name!r}")
