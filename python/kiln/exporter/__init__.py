"""Kiln's exporter: torch.export programs -> Kiln program files (needs torch).

Public API: :func:`export`, the backends (:class:`CpuBackend`, :class:`CudaBackend`,
:class:`MetalBackend`, base :class:`AotiBackend`), :class:`CompiledMethod`,
:class:`KilnProgram`, :class:`UnsupportedKernelsError` and
:class:`UnreadCompileSpecWarning` (a compile spec the backend does not read).
"""

from kiln.exporter.aoti_backend import AotiBackend, CompiledMethod, UnsupportedKernelsError
from kiln.exporter.compile_specs import UnreadCompileSpecWarning
from kiln.exporter.cpu_backend import CpuBackend
from kiln.exporter.cuda_backend import CudaBackend
from kiln.exporter.export import KilnProgram, backend_for, export
from kiln.exporter.metal_backend import MetalBackend

__all__ = [
    "AotiBackend",
    "CompiledMethod",
    "CpuBackend",
    "CudaBackend",
    "KilnProgram",
    "MetalBackend",
    "UnreadCompileSpecWarning",
    "UnsupportedKernelsError",
    "backend_for",
    "export",
]
