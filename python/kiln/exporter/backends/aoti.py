"""AotiBackend: turns one ExportedProgram into an AOTInductor library + weights blob.

The shape mirrors ExecuTorch's AOTInductor-driven backends: a base class owns the
pipeline (passes -> decompositions -> AOTInductor -> fallback-kernel check -> codesign ->
bytes) and device subclasses override small hooks (options, passes, decompositions,
supported kernels, extra compile context, code signing).

The compiled library leaves every ``aoti_torch_*`` function undefined; Kiln's runtime
supplies them.  A library importing a function the runtime does not implement would
fail at load time on the user's machine, so export refuses it here instead
(:class:`UnsupportedKernelsError`).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable

from kiln.exporter.compile_specs import spec_bool
from kiln.exporter.constants_table import METADATA_KEY as CONSTANTS_METADATA_KEY
from kiln.exporter.constants_table import classify_by_fqn, encode_constants_table, parse_constants_info
from kiln.exporter.elf_imports import read_elf_imports
from kiln.exporter.passes.grouped_mm import rewrite_grouped_mm
from kiln.exporter.passes.norm_linear_fusion import fuse_norm_linear
from kiln.exporter.passes.projection_fusion import fuse_projections
from kiln.exporter.passes.weight_quantization import QuantizeSpec, parse_quantize_spec, quantize_weights
from kiln.exporter.progress import Progress

__all__ = [
    "AotiBackend",
    "CompiledMethod",
    "UnsupportedKernelsError",
    "DEVICE_SHIM_PREFIXES",
    "PROXY_EXECUTOR_SHIM",
    "SHIM_LIST_PATHS",
    "check_shim_imports",
    "load_supported_shims",
    "shim_calls_in_source",
    "validate_inductor_options",
]


def _shim_list_paths() -> tuple[Path, ...]:
    """The lists of the aoti_torch_* functions Kiln's runtime implements, shared with the
    C++ side: src/shims/{common,cpu,cuda}/shims.txt in a source tree, or the copies an
    installed package holds as kiln/shims/<device>.txt (cmake/KilnWheel.cmake puts them there)."""
    package = Path(__file__).resolve().parents[2]
    devices = ("common", "cpu", "cuda")
    installed = tuple(package / "shims" / f"{d}.txt" for d in devices)
    if all(p.is_file() for p in installed):
        return installed
    return tuple(package.parents[1] / "src" / "shims" / d / "shims.txt" for d in devices)


#: Every list the runtime's shims are named in (libkiln's and the CUDA plugin's).
SHIM_LIST_PATHS = _shim_list_paths()

#: Device-specific op shims are named aoti_torch_<device>_<op>; everything else is device-neutral.
DEVICE_SHIM_PREFIXES = ("cpu", "cuda", "mps", "xpu")

#: What AOTInductor calls for an op that has no C shim: it needs libtorch's dispatcher.
PROXY_EXECUTOR_SHIM = "aoti_torch_proxy_executor_call_function"

_SHIM_PATTERN = re.compile(r"\baoti_torch_[A-Za-z0-9_]+")


class UnsupportedKernelsError(RuntimeError):
    """The compiled library imports aoti_torch_* functions Kiln's runtime does not provide."""

    def __init__(self, method: str, missing: list[str], message: str):
        super().__init__(message)
        self.method = method
        self.missing = missing


@dataclass
class CompiledMethod:
    """One method compiled for one device: the bytes to pack and the method's contract.

    ``library`` is the AOTInductor ``*.wrapper.so``; ``weights`` the ``binary_blob``
    weights (empty for a model without constants).  Metadata values are strings.
    """

    name: str
    device: str
    library: bytes
    weights: bytes
    inputs: list = field(default_factory=list)  # list[kiln.spec.TensorSpec]
    outputs: list = field(default_factory=list)  # list[kiln.spec.TensorSpec]
    metadata: dict[str, str] = field(default_factory=dict)
    shim_imports: list[str] = field(default_factory=list)
    #: How many inputs the compiled library takes and outputs it returns, as its generated
    #: source states them; kiln.export refuses to pack a method whose contract disagrees
    #: (or that does not say).
    library_inputs: int | None = None
    library_outputs: int | None = None


def load_supported_shims(path: str | os.PathLike | None = None) -> set[str]:
    """Reads a shim list: one name per line, '#' starts a comment line. With no
    path: everything the runtime implements (SHIM_LIST_PATHS)."""
    paths = [path] if path else list(SHIM_LIST_PATHS)
    names: set[str] = set()
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    names.add(line)
    return names


def shim_device(name: str) -> str | None:
    """'aoti_torch_cpu_addmm_out' -> 'cpu'; None for a device-neutral shim."""
    for dev in DEVICE_SHIM_PREFIXES:
        if name.startswith(f"aoti_torch_{dev}_"):
            return dev
    return None


def shim_calls_in_source(source: str) -> dict[str, str]:
    """aoti_torch_* names used in generated wrapper C++ -> the first line using each.

    Cheaper than compiling and more telling in an error (the line shows the ATen op's
    arguments); the ELF import check remains the authority.
    """
    found: dict[str, str] = {}
    for line in source.splitlines():
        for name in _SHIM_PATTERN.findall(line):
            found.setdefault(name, line.strip())
    return found


def check_shim_imports(
    method: str,
    imports: Iterable[str],
    supported: Iterable[str],
    device: str,
    source_lines: dict[str, str] | None = None,
) -> list[str]:
    """Raises UnsupportedKernelsError if any aoti_torch_* import is not supported.

    Non-aoti imports (libc, libstdc++, ...) are not judged here.  Returns the sorted
    aoti_torch_* imports on success.
    """
    shim_imports = sorted({n for n in imports if n.startswith("aoti_torch_")})
    supported = set(supported)
    if PROXY_EXECUTOR_SHIM in shim_imports:
        raise UnsupportedKernelsError(
            method,
            [PROXY_EXECUTOR_SHIM],
            f"method {method!r} ({device}): the compiled library calls {PROXY_EXECUTOR_SHIM}, "
            "i.e. it contains custom ops or ATen ops without a C shim that AOTInductor can only "
            "run through libtorch's dispatcher (the proxy executor). Kiln runs without libtorch: "
            "replace those ops, decompose them, or give them a C shim "
            "(aot_inductor.custom_ops_to_c_shims) that Kiln's runtime implements.",
        )
    missing = [n for n in shim_imports if n not in supported]
    if missing:
        lines = []
        for n in missing:
            where = (source_lines or {}).get(n)
            lines.append(f"  {n}" + (f"    (wrapper: {where[:160]})" if where else ""))
        raise UnsupportedKernelsError(
            method,
            missing,
            f"method {method!r} ({device}): the compiled library needs {len(missing)} "
            f"aoti_torch_* function(s) that Kiln's runtime does not implement:\n"
            + "\n".join(lines)
            + "\nAdd them to the runtime (src/shims/<device>/, listed in shims.txt there; "
            + "docs/adding-an-op.md), or change the "
            "model/decompositions so AOTInductor generates code for them instead.",
        )
    return shim_imports


def _json_keys(value: Any) -> Any:
    """``value`` with every dict key a string (custom_ops_to_c_shims is keyed by ops)."""
    if isinstance(value, dict):
        return {str(k): _json_keys(v) for k, v in value.items()}
    return value


def validate_inductor_options(options: dict[str, Any]) -> None:
    """Raises KeyError naming any option key absent from this torch's torch._inductor.config.

    Inductor silently accepts some unknown keys in some versions; a typo or a key
    renamed between torch releases must fail loudly instead.
    """
    import torch._inductor.config as config

    unknown = []
    for key in options:
        obj: Any = config
        for part in key.split("."):
            if not hasattr(obj, part):
                unknown.append(key)
                break
            obj = getattr(obj, part)
    if unknown:
        import torch

        raise KeyError(f"torch {torch.__version__} has no inductor config option(s): {', '.join(unknown)}")


class AotiBackend:
    """Base of Kiln's AOTInductor backends.  Subclasses override the hooks below.

    Instances hold no state across preprocess calls except configuration, so one
    backend may compile several methods.  ``supported_shims`` overrides the runtime's
    list (for tests or a runtime with extra shims); ``None`` reads SHIM_LIST_PATHS.
    ``temp_dir`` is where each compile's private scratch directory is made (default:
    the system's temporary directory); it is removed when the method is done.
    """

    #: Device string AOTInductor and the runtime use ("cpu", "cuda", "mps").
    DEVICE = "cpu"

    #: Default of compile spec fuse_projections. Off here: on the CPU a 125 M-parameter
    #: decode step measured no faster fused (53-63 ms a step either way, 1 thread).
    FUSE_PROJECTIONS = False

    #: Most rows of x where the device's rms_norm_linear applies (None: any).
    NORM_LINEAR_MAX_ROWS: int | None = None

    #: The compile specs this backend reads; kiln.export warns about any other key
    #: (UnreadCompileSpecWarning). Subclasses add theirs.
    COMPILE_SPECS: frozenset[str] = frozenset({"fuse_projections", "fuse_norm_linear", "grouped_mm", "quantize"})

    def __init__(
        self,
        supported_shims: Iterable[str] | None = None,
        progress: Progress | None = None,
        temp_dir: str | os.PathLike | None = None,
    ):
        self._supported_override = set(supported_shims) if supported_shims is not None else None
        self.temp_dir = os.fspath(temp_dir) if temp_dir is not None else None
        self.progress = progress or Progress(verbose=False)

    # ---- hooks ------------------------------------------------------------------------

    def device_name(self) -> str:
        return self.DEVICE

    def supported_fallback_kernels(self) -> set[str]:
        """The aoti_torch_* names a library for this device may import: the device's own
        op shims plus the device-neutral ones."""
        names = self._supported_override if self._supported_override is not None else load_supported_shims()
        dev = self.device_name()
        return {n for n in names if shim_device(n) in (None, dev)}

    def decomposition_table(self, compile_specs: dict[str, Any]) -> dict:
        """Decompositions Inductor applies while it compiles the method, on top of its own
        table: ops the library must not call as fallbacks. Applied in Inductor's own trace,
        not by re-tracing the exported program (ExportedProgram.run_decompositions), which
        rewrites unrelated parts of the graph: BEiT's relative position index, built by
        writes into a new tensor, then fails in Inductor's lowering (torch 2.11)."""
        return {}

    def aoti_compile_options(self, compile_specs: dict[str, Any]) -> dict[str, Any]:
        """Inductor options; every key must exist in torch._inductor.config."""
        return {
            # The runtime provides the aoti_torch_* ABI; nothing may pull in libtorch.
            "aot_inductor.link_libtorch": False,
            # Weights travel next to the library (shareable between methods, mmap-able),
            # loaded through UpdateConstantsFromBlob.
            "aot_inductor.package_constants_in_so": False,
            "aot_inductor.package_constants_on_disk_format": "binary_blob",
            "aot_inductor.package": True,
            "aot_inductor.embed_kernel_binary": True,
            **self._kiln_op_options(compile_specs),
        }

    def _kiln_op_options(self, compile_specs: dict[str, Any]) -> dict[str, Any]:
        """Lets the library call Kiln's ops as C shims (kiln_ops.py) when a pass may have
        put them into the graph."""
        names = []
        if spec_bool(compile_specs, "fuse_norm_linear", False):
            names.append("rms_norm_linear")
        if spec_bool(compile_specs, "grouped_mm", True) and self._implements_kiln_op("grouped_mm"):
            names.append("grouped_mm")
        linear = _quantize_spec(compile_specs).linear
        if linear != "none" and self._implements_kiln_op(f"{linear}_linear"):
            names.append(f"{linear}_linear")
        if not names:
            return {}
        from kiln.exporter.kiln_ops import c_shims  # imports torch

        return {"aot_inductor.custom_ops_to_c_shims": c_shims(self.device_name(), names)}

    def custom_passes(self, compile_specs: dict[str, Any]) -> list[Callable]:
        """Callables ExportedProgram -> ExportedProgram (or None to keep it), run in order.

        With ``grouped_mm`` (default on), the grouped products of Mixture-of-Experts layers
        (``aten._grouped_mm``, ``transformers::grouped_mm_fallback``) become Kiln's op
        kiln::grouped_mm (passes/grouped_mm.py): without it such a model cannot run.
        Projections that read one input (q/k/v, gate/up) become one wider projection
        (passes/projection_fusion.py) when compile spec ``fuse_projections`` is on; the default
        is the backend's FUSE_PROJECTIONS. With ``fuse_norm_linear`` (default off), an
        RMSNorm and the linear after it become Kiln's fused op (passes/norm_linear_fusion.py).
        Compile spec ``quantize`` (passes/weight_quantization.py says its grammar) then turns
        linear and embedding weights into int8 or int4 codes with their scales."""
        passes = []
        if spec_bool(compile_specs, "grouped_mm", True):
            available = self._implements_kiln_op("grouped_mm")
            passes.append(lambda ep: rewrite_grouped_mm(ep, log=self.progress.note, available=available))
        if spec_bool(compile_specs, "fuse_projections", self.FUSE_PROJECTIONS):
            passes.append(lambda ep: fuse_projections(ep, log=self.progress.note))
        if spec_bool(compile_specs, "fuse_norm_linear", False):
            # After projection fusion, which leaves one projection per norm.
            self._require_kiln_op("fuse_norm_linear", "rms_norm_linear")
            passes.append(lambda ep: fuse_norm_linear(ep, log=self.progress.note, max_rows=self.NORM_LINEAR_MAX_ROWS))
        quantize = _quantize_spec(compile_specs)
        if quantize.active():
            # Last: the fused projections and norm-fused linears are what get quantized
            # (a norm-fused linear keeps its float weight: rms_norm_linear reads it).
            if quantize.linear != "none" and not self._implements_kiln_op(f"{quantize.linear}_linear"):
                raise ValueError(f"compile spec 'quantize': {quantize.linear} linears are not implemented on "
                                 f"{self.device_name()} yet (aoti_torch_{self.device_name()}_{quantize.linear}_linear)")
            passes.append(lambda ep: quantize_weights(ep, quantize, log=self.progress.note))
        return passes

    def _implements_kiln_op(self, op_name: str) -> bool:
        """Whether Kiln's runtime implements Kiln op ``op_name`` on this backend's device."""
        from kiln.exporter.kiln_ops import c_shim_name  # imports torch

        return c_shim_name(op_name, self.device_name()) in self.supported_fallback_kernels()

    def _require_kiln_op(self, spec: str, op_name: str) -> None:
        """Raises ValueError unless Kiln's runtime implements Kiln op ``op_name`` on this
        backend's device (the library would otherwise call a shim the runtime lacks)."""
        from kiln.exporter.kiln_ops import c_shim_name  # imports torch

        shim = c_shim_name(op_name, self.device_name())
        if shim not in self.supported_fallback_kernels():
            raise ValueError(
                f"compile spec {spec!r}: Kiln's runtime does not implement {shim} yet, so the "
                f"{self.device_name()} backend cannot use the fused op kiln::{op_name}; leave {spec} off"
            )

    def extra_compile_context(self, compile_specs: dict[str, Any]) -> ContextManager:
        return contextlib.nullcontext()

    def compile_retry_options(
        self, error: BaseException, options: dict[str, Any], compile_specs: dict[str, Any]
    ) -> tuple[dict[str, Any], str] | None:
        """Options for a second compile after ``error``, with the reason to print, or None to
        raise it. For failures that an optimisation Kiln turns on by default causes in
        Inductor, where the stock options compile."""
        return None

    def codesign_so(self, so_path: str, compile_specs: dict[str, Any]) -> None:
        """Signs the library in place before its bytes are read.  No-op by default."""
        return None

    def prepare_program(self, ep, compile_specs: dict[str, Any]):
        """Moves the program to the device (CPU: nothing to do)."""
        return ep

    def library_metadata(self, out_dir: str, so_path: str, imports, compile_specs: dict[str, Any]) -> dict[str, str]:
        """Device-specific facts about the compiled library, recorded in the method metadata."""
        return {}

    # ---- pipeline ---------------------------------------------------------------------

    def preprocess(self, method_name: str, exported_program, compile_specs: dict[str, Any] | None = None) -> CompiledMethod:
        """Compiles one method.  Raises UnsupportedKernelsError before anything is packed
        if the library needs shims the runtime lacks.  Temporary files are removed."""
        import torch
        from torch.utils import _pytree as pytree

        from kiln.exporter import metadata as md
        from kiln.exporter.passes import outputs as outputs_mod

        specs = dict(compile_specs or {})
        device = self.device_name()
        ep = exported_program
        prog = self.progress

        with prog.stage(f"{method_name}: passes ({device})"):
            ep = self.prepare_program(ep, specs)
            for p in self.custom_passes(specs):
                result = p(ep)
                ep = result if result is not None else ep

        # What the library will return: parameter writes taken out of the program (AOTInductor
        # would return them as extra outputs), then one output per tensor leaf.
        with self.extra_compile_context(specs):  # a re-trace, as for the decompositions above
            ep, written_parameters = outputs_mod.strip_parameter_writes(ep, method_name, progress=prog)
        plan = outputs_mod.plan_outputs(ep, method_name)
        input_plan = md.plan_inputs(ep, method_name)
        inputs = md.input_specs(ep, input_plan)
        outputs = plan.specs
        flat = md.user_input_values(ep)
        args, kwargs = pytree.tree_unflatten(flat, ep.call_spec.in_spec)

        options = self.aoti_compile_options(specs)
        validate_inductor_options(options)
        out_dir = tempfile.mkdtemp(prefix=f"kiln_export_{method_name}_", dir=self.temp_dir)
        try:
            options = {**options, "aot_inductor.output_path": out_dir}
            with prog.stage(f"{method_name}: aot compile ({device})"):
                with torch.no_grad(), self.extra_compile_context(specs), \
                        _inductor_decompositions(self.decomposition_table(specs)):
                    gm = outputs_mod.module_to_compile(ep, plan)
                    try:
                        produced = torch._inductor.aot_compile(gm, tuple(args), kwargs or None, options=options)
                    except Exception as error:
                        retry = self.compile_retry_options(error, options, specs)
                        if retry is None:
                            raise
                        options, reason = retry
                        prog.note(f"{method_name}: compiling again {reason}")
                        produced = torch._inductor.aot_compile(gm, tuple(args), kwargs or None, options=options)
            files = [str(p) for p in produced] if isinstance(produced, (list, tuple)) else [str(produced)]
            so_path = _pick(files, out_dir, ".wrapper.so", required=True)
            blob_path = _pick(files, out_dir, ".wrapper_weights.blob", required=False)
            cpp_path = _pick(files, out_dir, ".wrapper.cpp", required=False)
            cpp_source = Path(cpp_path).read_text(errors="replace") if cpp_path else ""

            # The library must take and return exactly what the contract says, or the program
            # would fail at load (or worse, at run time): checked on the generated source, the
            # only place the counts are stated without loading the library.
            interface = outputs_mod.read_library_interface(cpp_source)
            outputs_mod.check_library_interface(method_name, inputs, outputs, interface)

            with prog.stage(f"{method_name}: kernel check"):
                imports = read_elf_imports(so_path)
                source_lines = None
                if cpp_path:
                    source_lines = shim_calls_in_source(cpp_source)
                shim_imports = check_shim_imports(
                    method_name, imports.names(), self.supported_fallback_kernels(), device, source_lines
                )

            meta = {
                "device": device,
                "torch_version": torch.__version__,
                "aoti_options": json.dumps(
                    _json_keys({k: v for k, v in options.items() if k != "aot_inductor.output_path"}),
                    sort_keys=True, default=str,
                ),
                "shim_imports": ",".join(shim_imports),
            }
            mutated = md.mutated_user_inputs(ep, input_plan)
            if mutated:
                meta["mutated_inputs"] = ",".join(mutated)
            meta[md.INPUT_TREE_KEY] = input_plan.tree_json()
            meta[outputs_mod.OUTPUT_TREE_KEY] = plan.tree_json()
            if written_parameters:
                meta[outputs_mod.WRITTEN_PARAMETERS_KEY] = ",".join(written_parameters)
            aoti_meta = _read_aoti_metadata(out_dir)
            for k, v in aoti_meta.items():
                meta[k] = str(v)
            meta.update(self.library_metadata(out_dir, so_path, imports, specs))

            self.codesign_so(so_path, specs)
            library = Path(so_path).read_bytes()
            weights = Path(blob_path).read_bytes() if blob_path else b""
            if cpp_path and weights:
                constants = parse_constants_info(cpp_source)
                signature = ep.graph_signature
                classify_by_fqn(constants, set(signature.inputs_to_parameters.values()),
                                set(signature.inputs_to_lifted_tensor_constants.values()))
                table = encode_constants_table(constants, weights, device)
                if table:
                    meta[CONSTANTS_METADATA_KEY] = table
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)

        return CompiledMethod(
            name=method_name,
            device=device,
            library=library,
            weights=weights,
            inputs=inputs,
            outputs=outputs,
            metadata=meta,
            shim_imports=shim_imports,
            library_inputs=interface.num_inputs,
            library_outputs=interface.num_outputs,
        )


def _quantize_spec(compile_specs: dict[str, Any]) -> QuantizeSpec:
    return parse_quantize_spec(compile_specs.get("quantize", "none"))


@contextlib.contextmanager
def _inductor_decompositions(table: dict):
    """Inductor's compile traces with its decomposition table and `table` on top. compile_fx
    takes the table from select_decomp_table at each compile; the module-level table cannot
    be extended instead, as select_decomp_table returns a copy made at its first call."""
    if not table:
        yield
        return
    from torch._inductor import compile_fx

    original = getattr(compile_fx, "select_decomp_table", None)
    if original is None:
        raise RuntimeError(
            "kiln: this torch's Inductor has no compile_fx.select_decomp_table, through which "
            "Kiln adds its decompositions; the exporter supports torch 2.11"
        )
    compile_fx.select_decomp_table = lambda: {**original(), **table}
    try:
        yield
    finally:
        compile_fx.select_decomp_table = original


def _pick(files: list[str], out_dir: str, suffix: str, required: bool) -> str | None:
    hits = [f for f in files if f.endswith(suffix)]
    if not hits:  # older/newer torch may return a subset; the output dir is authoritative
        hits = sorted(glob.glob(os.path.join(out_dir, "**", "*" + suffix), recursive=True))
    if len(hits) > 1:
        raise RuntimeError(f"AOTInductor produced several {suffix} files: {hits}")
    if not hits:
        if required:
            raise RuntimeError(f"AOTInductor produced no {suffix} file (got: {files})")
        return None
    return hits[0]


def _read_aoti_metadata(out_dir: str) -> dict[str, Any]:
    """The AOTI_* keys of the generated *.wrapper_metadata.json (device, ISA, platform)."""
    paths = sorted(glob.glob(os.path.join(out_dir, "**", "*.wrapper_metadata.json"), recursive=True))
    if not paths:
        return {}
    try:
        data = json.loads(Path(paths[0]).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if str(k).startswith("AOTI_")}
