"""Kiln's exporter: torch.export programs -> Kiln program files (needs torch).

Public API: :func:`export`, the backends (:class:`CpuBackend`, :class:`CudaBackend`,
:class:`MetalBackend`, base :class:`AotiBackend`), :class:`CompiledMethod`,
:class:`KilnProgram`, the export errors :class:`UnsupportedKernelsError`,
:class:`UnsupportedOutputError` (an output no method can return) and
:class:`ContractMismatchError` (a compiled library that disagrees with its contract), and the
warnings :class:`UnreadCompileSpecWarning` (a compile spec the backend does not read) and
:class:`ParameterWriteWarning` (a model that writes its parameters in place).
"""

from kiln.exporter.aoti_backend import AotiBackend, CompiledMethod, UnsupportedKernelsError
from kiln.exporter.compile_specs import UnreadCompileSpecWarning
from kiln.exporter.cpu_backend import CpuBackend
from kiln.exporter.cuda_backend import CudaBackend
from kiln.exporter.export import KilnProgram, backend_for, export
from kiln.exporter.metal_backend import MetalBackend
from kiln.exporter.outputs import ContractMismatchError, ParameterWriteWarning, UnsupportedOutputError

__all__ = [
    "AotiBackend",
    "CompiledMethod",
    "ContractMismatchError",
    "CpuBackend",
    "CudaBackend",
    "KilnProgram",
    "MetalBackend",
    "ParameterWriteWarning",
    "UnreadCompileSpecWarning",
    "UnsupportedKernelsError",
    "UnsupportedOutputError",
    "backend_for",
    "export",
]
