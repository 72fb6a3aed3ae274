"""Kiln's exporter: torch.export programs -> Kiln program files (needs torch).

Public API: :func:`export`, the backends (:class:`CpuBackend`, :class:`CudaBackend`,
:class:`MetalBackend`, base :class:`AotiBackend`), :class:`CompiledMethod`,
:class:`KilnProgram`, the export errors :class:`UnsupportedKernelsError`,
:class:`UnsupportedOutputError` (an output no method can return) and
:class:`ContractMismatchError` (a compiled library that disagrees with its contract), and the
warnings :class:`UnreadCompileSpecWarning` (a compile spec the backend does not read) and
:class:`ParameterWriteWarning` (a model that writes its parameters in place).

Layout:
  export.py          kiln.export: compiles every method and packs one program
  backends/          AotiBackend (the compile pipeline and its checks) and its CPU, CUDA
                     and Metal subclasses
  passes/            rewrites of the ExportedProgram before it is compiled (outputs,
                     projection and RMSNorm+linear fusion, convolution decomposition)
  metadata.py        a method's input/output contract and the program's metadata
  compile_specs.py   reading and checking compile specs
  kiln_ops.py        Kiln's own ops, declared to torch with their C shims
  elf_imports.py, constants_table.py
                     what the compiled library imports and the constants it holds
  progress.py        timed progress lines
"""

from kiln.exporter.backends import (AotiBackend, CompiledMethod, CpuBackend, CudaBackend, MetalBackend,
                                    UnsupportedKernelsError, backend_for)
from kiln.exporter.compile_specs import UnreadCompileSpecWarning
from kiln.exporter.export import KilnProgram, export
from kiln.exporter.passes.outputs import ContractMismatchError, ParameterWriteWarning, UnsupportedOutputError

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
