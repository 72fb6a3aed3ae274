"""kiln.export: ExportedPrograms -> one Kiln program file.

Each method is compiled by an AotiBackend; the library and weights become named data
entries keyed by content (``<sha256>_so``, ``<sha256>_weights``), so methods whose
weights blobs are byte-identical share one entry, and the method records which keys it
uses together with its input/output contract.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from kiln.exporter.backends import AotiBackend, CompiledMethod, backend_for
from kiln.exporter.compile_specs import warn_unread_specs
from kiln.exporter.passes.outputs import ContractMismatchError
from kiln.exporter.progress import Progress

__all__ = ["export", "KilnProgram", "backend_for", "check_contract", "LIBRARY_ALIGNMENT", "WEIGHTS_ALIGNMENT"]

#: Libraries are copied out (memfd) before dlopen: cache-line alignment is enough.
LIBRARY_ALIGNMENT = 64
#: Weights may be mapped and handed to UpdateConstantsFromBlob in place: page alignment.
WEIGHTS_ALIGNMENT = 4096

def check_contract(compiled: CompiledMethod) -> None:
    """Raises ContractMismatchError unless the method's contract has as many inputs and outputs
    as its compiled library (``library_inputs``/``library_outputs``, read by the backend from
    the library's generated source). The runtime refuses such a program at load; it is never
    written. A backend that does not report the counts cannot be checked, so it is refused too."""
    name = compiled.name
    if compiled.library_inputs is None or compiled.library_outputs is None:
        raise ContractMismatchError(
            name,
            f"method {name!r}: the backend did not report how many inputs and outputs its compiled "
            "library has (CompiledMethod.library_inputs/library_outputs), so the contract cannot be "
            "checked; refusing to write a program that might not load",
        )
    if compiled.library_inputs != len(compiled.inputs) or compiled.library_outputs != len(compiled.outputs):
        raise ContractMismatchError(
            name,
            f"method {name!r}: the compiled library takes {compiled.library_inputs} input(s) and returns "
            f"{compiled.library_outputs} output(s), but the contract lists {len(compiled.inputs)} input(s) "
            f"({', '.join(t.name for t in compiled.inputs) or 'none'}) and {len(compiled.outputs)} output(s) "
            f"({', '.join(t.name for t in compiled.outputs) or 'none'}); the program would fail at load",
        )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class KilnProgram:
    """The result of :func:`export`: the program (``.program``) and the compiled methods.

    ``save(path)`` writes the program file; with external weights the weights go to
    ``external_data_path`` (default: ``<path>.data``).
    """

    program: Any  # kiln.program.Program
    methods: dict[str, CompiledMethod] = field(default_factory=dict)
    has_external_data: bool = False
    progress: Progress = field(default_factory=lambda: Progress(verbose=False))

    def save(self, path: str | os.PathLike, external_data_path: str | os.PathLike | None = None) -> None:
        """Writes the program file; external weights go to ``external_data_path``
        (default ``<path>.data``, kiln.program's convention)."""
        path = os.fspath(path)
        with self.progress.stage(f"save {os.path.basename(path)}"):
            if external_data_path is None:
                self.program.save(path)
            else:
                self.program.save(path, external_data_path=os.fspath(external_data_path))


def export(
    programs: Mapping[str, Any] | Any,
    backend: AotiBackend | str = "cpu",
    compile_specs: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    external_weights: bool = False,
    verbose: bool = True,
) -> KilnProgram:
    """Compiles ``torch.export`` programs into one Kiln program.

    ``programs``: an ExportedProgram (becomes method "forward") or a dict method name ->
    ExportedProgram.  ``backend``: "cpu", "cuda", "metal" or an AotiBackend instance.
    ``compile_specs`` apply to every method and are recorded in each method.
    ``metadata`` is added to the program's metadata (strings).  ``external_weights``
    stores weights in a separate data file at save time.  ``verbose`` prints a line on
    stderr when each stage starts and when it ends, with its time.

    Raises, before anything is packed: UnsupportedKernelsError when a compiled method
    needs aoti_torch_* functions Kiln's runtime lacks; UnsupportedOutputError for a model
    output no method can return (a SymInt, an object); ContractMismatchError when the
    compiled library's inputs/outputs disagree with the contract. A method's outputs are
    the tensor leaves of the model's output (docs/program-format.md, "Method contract").
    """
    from torch.export import ExportedProgram

    from kiln.exporter.metadata import program_metadata
    from kiln.program import MethodSpec, Program

    if isinstance(programs, ExportedProgram):
        programs = {"forward": programs}
    if not isinstance(programs, Mapping) or not programs:
        raise TypeError("kiln.export takes an ExportedProgram or a non-empty dict name -> ExportedProgram")
    for name, ep in programs.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"method names must be non-empty strings, got {name!r}")
        if not isinstance(ep, ExportedProgram):
            raise TypeError(f"method {name!r}: expected a torch.export.ExportedProgram, got {type(ep).__name__}")

    progress = Progress(verbose=verbose)
    be = backend_for(backend, progress)
    specs = dict(compile_specs or {})
    warn_unread_specs(specs, be.COMPILE_SPECS, be.device_name())
    program = Program(metadata=program_metadata(metadata))
    result = KilnProgram(program=program, has_external_data=external_weights, progress=progress)

    for name, ep in programs.items():
        compiled = be.preprocess(name, ep, specs)
        check_contract(compiled)
        with progress.stage(f"{name}: pack"):
            so_sha = _sha256(compiled.library)
            library_key = program.add_named_data(f"{so_sha}_so", compiled.library, alignment=LIBRARY_ALIGNMENT)
            weights_key = ""
            meta = dict(compiled.metadata)
            meta["library_sha256"] = so_sha
            if compiled.weights:
                w_sha = _sha256(compiled.weights)
                weights_key = program.add_named_data(
                    f"{w_sha}_weights", compiled.weights, alignment=WEIGHTS_ALIGNMENT, external=external_weights
                )
                meta["weights_sha256"] = w_sha
            program.add_method(
                MethodSpec(
                    name=name,
                    backend="aoti",
                    device=compiled.device,
                    inputs=compiled.inputs,
                    outputs=compiled.outputs,
                    compile_specs={str(k): str(v) for k, v in specs.items()},
                    metadata=meta,
                    library_key=library_key,
                    weights_key=weights_key,
                )
            )
        result.methods[name] = compiled
    return result
