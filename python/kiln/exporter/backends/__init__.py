"""Backends: how one ExportedProgram becomes an AOTInductor library and weights blob.

:class:`AotiBackend` (aoti.py) owns the pipeline and its checks; the device subclasses
(cpu.py, cuda.py, metal.py) override its hooks. The graph rewrites a backend applies
before compiling live in kiln.exporter.passes.
"""

from __future__ import annotations

from kiln.exporter.backends.aoti import AotiBackend, CompiledMethod, UnsupportedKernelsError
from kiln.exporter.backends.cpu import CpuBackend
from kiln.exporter.backends.cuda import CudaBackend
from kiln.exporter.backends.metal import MetalBackend
from kiln.exporter.progress import Progress

__all__ = [
    "AotiBackend",
    "CompiledMethod",
    "CpuBackend",
    "CudaBackend",
    "MetalBackend",
    "UnsupportedKernelsError",
    "backend_for",
]

_BACKENDS: dict[str, type[AotiBackend]] = {
    "cpu": CpuBackend,
    "cuda": CudaBackend,
    "metal": MetalBackend,
    "mps": MetalBackend,
}


def backend_for(backend: AotiBackend | str, progress: Progress | None = None) -> AotiBackend:
    """A backend instance from a name ("cpu", "cuda", "metal"/"mps") or an instance."""
    if isinstance(backend, AotiBackend):
        if progress is not None:
            backend.progress = progress
        return backend
    if not isinstance(backend, str) or backend.lower() not in _BACKENDS:
        raise ValueError(f"unknown Kiln backend {backend!r}; expected one of {sorted(_BACKENDS)} or an AotiBackend")
    return _BACKENDS[backend.lower()](progress=progress)
