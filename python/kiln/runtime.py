"""Run ``.kiln`` programs from Python: ctypes over Kiln's C API, tensors in and out through DLPack.

Needs neither torch nor a compiler; numpy is needed only to pass Python lists/scalars or to get
numpy outputs (the default).

    import numpy as np
    from kiln.runtime import Module, Runtime

    module = Module("mlp.kiln")
    module.load()
    (y,) = module.forward(np.ones((4, 16), dtype=np.float32))

    bert = Module("bert.kiln")                  # exported with input_ids=..., attention_mask=...
    out = bert.forward(input_ids=ids, attention_mask=mask, structure="names")
    out["last_hidden_state"], out["pooler_output"]

    strict = Runtime(require_signature=True, trusted_keys="release.pub")   # settings: docs/settings.md
    signed = Module("model.kiln", runtime=strict)
    in_memory = Module.from_bytes(open("model.kiln", "rb").read())

Inputs may be numpy arrays, torch tensors or anything implementing ``__dlpack__``, in any
layout (transposed, sliced, Fortran order, broadcast with stride 0, offset views). They are
handed to Kiln without copying; Kiln uses an input as it is when it already has the layout the
method was compiled for (``TensorSpec.dim_order``: row-major unless the export example was, say,
channels_last) and otherwise copies it into that layout on the method's device before any
kernel runs. Inputs the method writes in place (metadata ``mutated_inputs``) must already be in
that layout (KilnError InvalidArgument otherwise). Read-only numpy arrays and arrays with
negative strides are copied here first, because unversioned DLPack cannot express either (and
so are lists and scalars); such an input is refused when the method writes it in place, since
the writes would go to the copy.
Outputs are numpy arrays (``output="numpy"``, default) or torch tensors (``output="torch"``),
sharing Kiln's memory without copies.

A method takes the model's arguments as the model took them at export (metadata
``input_tree``, kiln.input_tree): by position or by parameter name, nested in the lists, tuples
and dicts they were passed in; arguments compiled in at export (None, ints) may be left out. Its
flat inputs in order (``MethodMeta.inputs``) are accepted too, as before. It returns a list of its
outputs (``structure="flat"``, default), a dict of them by name (``"names"``: their paths in the
model's output) or the model's output structure (``"tree"``: kiln.output_tree). See
``Module.execute``.

The shared library is found through, in order (``library_path``):

1. the ``KILN_LIBRARY`` environment variable (path to ``libkiln.so``): an explicit choice wins;
2. ``kiln/lib/libkiln.so.0`` inside this package, where the wheel (``pip install .``) puts the
   runtime it was built with, so an installed package needs no environment variable;
3. ``build/libkiln.so`` of the source tree this file lies in (a checkout used through
   ``PYTHONPATH=python`` or an editable install), the runtime a developer just built;
4. ``ctypes.util.find_library("kiln")``: a runtime installed on the system (``cmake --install``).

The package's own copy comes before the source tree's so that an installed wheel never picks up a
stray build; a checkout holds no ``kiln/lib``, so there the source tree's build is used.
The library is loaded with RTLD_GLOBAL because model libraries resolve ``aoti_torch_*`` through it.

Thread safety: calls on one Module follow the C API's rules (load/unload must not race with
anything else on that module; execute may run from several threads; ctypes releases the GIL
during each call).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import os
import threading
from typing import Any, Iterable, Mapping, Sequence

from kiln import _dlpack
from kiln.spec import DimSpec, TensorSpec

__all__ = [
    "KilnError",
    "Runtime",
    "Setting",
    "settings",
    "cuda",
    "Module",
    "MethodMeta",
    "TensorSpec",
    "DimSpec",
    "library_path",
    "abi_version",
    "version",
]

# The C API ABI version this wrapper was written against (KILN_ABI_VERSION).
_ABI_VERSION = 2


class KilnError(RuntimeError):
    """A Kiln call failed. ``status`` is the status name ("NotFound", ...), ``message`` the detail."""

    def __init__(self, status: str, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


# ---- library -----------------------------------------------------------------------


def library_path() -> str:
    """Path of the libkiln.so this wrapper uses (see the module docstring for the search order)."""
    env = os.environ.get("KILN_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise KilnError("NotFound", f"KILN_LIBRARY={env!r} is not a file")
        return os.path.abspath(env)
    here = os.path.dirname(os.path.abspath(__file__))
    # Under its SONAME: a wheel cannot hold the libkiln.so link (cmake/KilnWheel.cmake).
    packaged = os.path.join(here, "lib", "libkiln.so.0")
    if os.path.isfile(packaged):
        return packaged
    repo_root = os.path.abspath(os.path.join(here, os.pardir, os.pardir))
    candidate = os.path.join(repo_root, "build", "libkiln.so")
    if os.path.isfile(candidate):
        return candidate
    found = ctypes.util.find_library("kiln")
    if found:
        return found
    raise KilnError(
        "NotFound",
        f"libkiln.so not found: not in this package ({packaged}; `pip install .` builds it there), "
        f"nor at {candidate} (cmake --build build), nor on the library path; or set KILN_LIBRARY",
    )


_P = ctypes.c_void_p
_STATUS = ctypes.c_int32
_SIZE = ctypes.c_size_t
_STR = ctypes.c_char_p

# name -> (restype, argtypes)
_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "kiln_abi_version": (ctypes.c_uint32, []),
    "kiln_version_string": (_STR, []),
    "kiln_status_name": (_STR, [_STATUS]),
    "kiln_last_error_message": (_STR, []),
    "kiln_dtype_name": (_STR, [ctypes.c_int32]),
    "kiln_options_create": (_STATUS, [ctypes.POINTER(_P)]),
    "kiln_options_set_bool": (_STATUS, [_P, _STR, _STR, ctypes.c_bool]),
    "kiln_options_set_int": (_STATUS, [_P, _STR, _STR, ctypes.c_int64]),
    "kiln_options_set_string": (_STATUS, [_P, _STR, _STR, _STR]),
    "kiln_options_free": (None, [_P]),
    "kiln_tensor_free": (None, [_P]),
    "kiln_tensor_array_free": (None, [ctypes.POINTER(_P), _SIZE]),
    "kiln_tensor_from_dlpack": (_STATUS, [_P, ctypes.POINTER(_P)]),
    "kiln_tensor_to_dlpack": (_STATUS, [_P, ctypes.POINTER(_P)]),
    "kiln_dlpack_to_versioned": (_STATUS, [_P, ctypes.POINTER(_P)]),
    "kiln_tensor_dtype": (_STATUS, [_P, ctypes.POINTER(ctypes.c_int32)]),
    "kiln_tensor_device": (_STATUS, [_P, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32)]),
    "kiln_module_create": (_STATUS, [_STR, ctypes.POINTER(_STR), _SIZE, ctypes.POINTER(_P)]),
    "kiln_module_create_with_runtime": (_STATUS, [_P, _STR, ctypes.POINTER(_STR), _SIZE, ctypes.POINTER(_P)]),
    "kiln_module_create_from_buffer": (_STATUS, [_P, _P, _SIZE, ctypes.POINTER(_P)]),
    "kiln_runtime_create": (_STATUS, [ctypes.POINTER(_P)]),
    "kiln_runtime_default": (_STATUS, [ctypes.POINTER(_P)]),
    "kiln_runtime_set_bool": (_STATUS, [_P, _STR, ctypes.c_bool]),
    "kiln_runtime_set_int": (_STATUS, [_P, _STR, ctypes.c_int64]),
    "kiln_runtime_set_string": (_STATUS, [_P, _STR, _STR]),
    "kiln_runtime_get_setting": (_STATUS, [_P, _STR, ctypes.c_char_p, _SIZE, ctypes.POINTER(_SIZE)]),
    "kiln_runtime_free": (None, [_P]),
    "kiln_setting_count": (_SIZE, []),
    "kiln_setting_describe": (
        _STATUS,
        [_SIZE, ctypes.POINTER(_STR), ctypes.POINTER(_STR), ctypes.POINTER(_STR), ctypes.POINTER(_STR),
         ctypes.POINTER(_STR)],
    ),
    "kiln_cuda_device_count": (ctypes.c_int32, []),
    "kiln_cuda_current_stream": (_STATUS, [ctypes.c_int32, ctypes.POINTER(_P)]),
    "kiln_cuda_set_current_stream": (_STATUS, [ctypes.c_int32, _P, ctypes.POINTER(_P)]),
    "kiln_cuda_memory_stats": (
        _STATUS,
        [ctypes.c_int32] + [ctypes.POINTER(ctypes.c_uint64)] * 4,
    ),
    "kiln_cuda_reset_peak_memory_stats": (_STATUS, [ctypes.c_int32]),
    "kiln_cuda_release_cached_memory": (_STATUS, [ctypes.c_int32]),
    "kiln_module_load": (_STATUS, [_P, _P]),
    "kiln_module_load_method": (_STATUS, [_P, _STR, _P]),
    "kiln_module_unload_method": (_STATUS, [_P, _STR]),
    "kiln_module_is_method_loaded": (_STATUS, [_P, _STR, ctypes.POINTER(ctypes.c_bool)]),
    "kiln_module_method_count": (_STATUS, [_P, ctypes.POINTER(_SIZE)]),
    "kiln_module_method_name": (_STATUS, [_P, _SIZE, ctypes.POINTER(_STR)]),
    "kiln_module_method_meta": (_STATUS, [_P, _STR, ctypes.POINTER(_P)]),
    "kiln_module_execute": (
        _STATUS,
        [_P, _STR, ctypes.POINTER(_P), _SIZE, ctypes.POINTER(ctypes.POINTER(_P)), ctypes.POINTER(_SIZE)],
    ),
    "kiln_module_free": (None, [_P]),
    "kiln_method_meta_name": (_STATUS, [_P, ctypes.POINTER(_STR)]),
    "kiln_method_meta_backend": (_STATUS, [_P, ctypes.POINTER(_STR)]),
    "kiln_method_meta_device": (_STATUS, [_P, ctypes.POINTER(_STR)]),
    "kiln_method_meta_input_count": (_STATUS, [_P, ctypes.POINTER(_SIZE)]),
    "kiln_method_meta_output_count": (_STATUS, [_P, ctypes.POINTER(_SIZE)]),
    "kiln_method_meta_input": (_STATUS, [_P, _SIZE, ctypes.POINTER(_P)]),
    "kiln_method_meta_output": (_STATUS, [_P, _SIZE, ctypes.POINTER(_P)]),
    "kiln_method_meta_metadata_count": (_STATUS, [_P, ctypes.POINTER(_SIZE)]),
    "kiln_method_meta_metadata_entry": (_STATUS, [_P, _SIZE, ctypes.POINTER(_STR), ctypes.POINTER(_STR)]),
    "kiln_method_meta_free": (None, [_P]),
    "kiln_tensor_spec_name": (_STATUS, [_P, ctypes.POINTER(_STR)]),
    "kiln_tensor_spec_dtype": (_STATUS, [_P, ctypes.POINTER(ctypes.c_int32)]),
    "kiln_tensor_spec_dim": (_STATUS, [_P, ctypes.POINTER(_SIZE)]),
    "kiln_tensor_spec_dim_size": (_STATUS, [_P, _SIZE, ctypes.POINTER(ctypes.c_int64)]),
    "kiln_tensor_spec_dim_is_dynamic": (_STATUS, [_P, _SIZE, ctypes.POINTER(ctypes.c_bool)]),
    "kiln_tensor_spec_dim_bounds": (
        _STATUS,
        [_P, _SIZE, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)],
    ),
    "kiln_tensor_spec_dim_name": (_STATUS, [_P, _SIZE, ctypes.POINTER(_STR)]),
    "kiln_tensor_spec_dim_order": (_STATUS, [_P, _SIZE, ctypes.POINTER(_SIZE)]),
}

_lib: ctypes.CDLL | None = None
_lib_lock = threading.Lock()


def _library() -> ctypes.CDLL:
    global _lib
    with _lib_lock:
        if _lib is None:
            path = library_path()
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            for name, (restype, argtypes) in _PROTOTYPES.items():
                fn = getattr(lib, name)
                fn.restype = restype
                fn.argtypes = argtypes
            if lib.kiln_abi_version() < _ABI_VERSION:
                raise KilnError(
                    "NotSupported",
                    f"{path} has C ABI version {lib.kiln_abi_version()}, this wrapper needs {_ABI_VERSION}",
                )
            _lib = lib
        return _lib


def _check(status: int) -> None:
    if status != 0:
        lib = _library()
        name = lib.kiln_status_name(status).decode()
        message = lib.kiln_last_error_message().decode(errors="replace")
        raise KilnError(name, message)


def abi_version() -> int:
    """The loaded library's C ABI version."""
    return int(_library().kiln_abi_version())


def version() -> str:
    """The loaded library's release version string."""
    return _library().kiln_version_string().decode()


def _text(value: bytes | None) -> str:
    return value.decode() if value is not None else ""


# ---- metadata ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MethodMeta:
    name: str
    backend: str
    device: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    metadata: dict[str, str]


def _read_spec(lib: ctypes.CDLL, spec: ctypes.c_void_p) -> TensorSpec:
    name = _STR()
    _check(lib.kiln_tensor_spec_name(spec, ctypes.byref(name)))
    dtype = ctypes.c_int32()
    _check(lib.kiln_tensor_spec_dtype(spec, ctypes.byref(dtype)))
    rank = _SIZE()
    _check(lib.kiln_tensor_spec_dim(spec, ctypes.byref(rank)))
    dims = []
    for d in range(rank.value):
        size, lo, hi = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        dynamic = ctypes.c_bool()
        dim_name = _STR()
        _check(lib.kiln_tensor_spec_dim_size(spec, d, ctypes.byref(size)))
        _check(lib.kiln_tensor_spec_dim_is_dynamic(spec, d, ctypes.byref(dynamic)))
        _check(lib.kiln_tensor_spec_dim_bounds(spec, d, ctypes.byref(lo), ctypes.byref(hi)))
        _check(lib.kiln_tensor_spec_dim_name(spec, d, ctypes.byref(dim_name)))
        dims.append(DimSpec(size.value, bool(dynamic.value), lo.value, hi.value, _text(dim_name.value)))
    order = []
    for k in range(rank.value):
        d = _SIZE()
        _check(lib.kiln_tensor_spec_dim_order(spec, k, ctypes.byref(d)))
        order.append(d.value)
    dtype_name = lib.kiln_dtype_name(dtype.value)
    # The C API reports row-major as the identity order; the spec spells it as empty, as the file does.
    return TensorSpec(_text(name.value), _text(dtype_name) or f"dtype{dtype.value}", dims,
                      () if order == list(range(len(order))) else order)


def _read_meta(lib: ctypes.CDLL, meta: ctypes.c_void_p) -> MethodMeta:
    strings = {}
    for field, fn in (
        ("name", lib.kiln_method_meta_name),
        ("backend", lib.kiln_method_meta_backend),
        ("device", lib.kiln_method_meta_device),
    ):
        out = _STR()
        _check(fn(meta, ctypes.byref(out)))
        strings[field] = _text(out.value)
    specs = {}
    for kind, count_fn, get_fn in (
        ("inputs", lib.kiln_method_meta_input_count, lib.kiln_method_meta_input),
        ("outputs", lib.kiln_method_meta_output_count, lib.kiln_method_meta_output),
    ):
        count = _SIZE()
        _check(count_fn(meta, ctypes.byref(count)))
        items = []
        for i in range(count.value):
            spec = _P()
            _check(get_fn(meta, i, ctypes.byref(spec)))
            items.append(_read_spec(lib, spec))
        specs[kind] = tuple(items)
    count = _SIZE()
    _check(lib.kiln_method_meta_metadata_count(meta, ctypes.byref(count)))
    metadata = {}
    for i in range(count.value):
        key, value = _STR(), _STR()
        _check(lib.kiln_method_meta_metadata_entry(meta, i, ctypes.byref(key), ctypes.byref(value)))
        metadata[_text(key.value)] = _text(value.value)
    return MethodMeta(inputs=specs["inputs"], outputs=specs["outputs"], metadata=metadata, **strings)


# ---- options ---------------------------------------------------------------------------


class _Options:
    """Owns a kiln_options_t built from {backend: {key: bool | int | str}}."""

    def __init__(self, lib: ctypes.CDLL, options: Mapping[str, Mapping[str, bool | int | str]]):
        self._lib = lib
        self.handle = _P()
        _check(lib.kiln_options_create(ctypes.byref(self.handle)))
        try:
            for backend, values in options.items():
                if not isinstance(backend, str) or not isinstance(values, Mapping):
                    raise TypeError("options must be a dict of backend name -> dict of key -> value")
                for key, value in values.items():
                    b, k = backend.encode(), str(key).encode()
                    if isinstance(value, bool):  # before int: bool is an int subclass
                        _check(lib.kiln_options_set_bool(self.handle, b, k, value))
                    elif isinstance(value, int):
                        _check(lib.kiln_options_set_int(self.handle, b, k, value))
                    elif isinstance(value, str):
                        _check(lib.kiln_options_set_string(self.handle, b, k, value.encode()))
                    else:
                        raise TypeError(
                            f"option {backend}.{key}: expected bool, int or str, got {type(value).__name__}"
                        )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.handle:
            self._lib.kiln_options_free(self.handle)
            self.handle = _P()


def _build_options(lib, options) -> _Options | None:
    return None if options is None else _Options(lib, options)


# ---- tensors in ---------------------------------------------------------------------------


def _is_torch_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "detach")


def _dlpack_source(obj: Any) -> tuple[Any, str | None]:
    """Something whose __dlpack__() gives an unversioned capsule Kiln can take as is, and why
    it is a copy of ``obj`` (None when it shares ``obj``'s memory)."""
    if _is_torch_tensor(obj):
        return obj.detach(), None  # __dlpack__ refuses tensors that require grad
    if hasattr(obj, "__dlpack__"):
        if type(obj).__module__ == "numpy":
            # Unversioned DLPack has no read-only flag (numpy refuses to export) and Kiln
            # tensors need non-negative strides: copy those two cases.
            if not obj.flags.writeable or any(s < 0 for s in obj.strides):
                import numpy as np

                why = "a read-only array" if not obj.flags.writeable else "an array with negative strides"
                return np.array(obj, copy=True), why
        return obj, None
    import numpy as np  # lists, scalars, buffers

    return np.ascontiguousarray(obj), f"a {type(obj).__name__}, not an array"


class _StreamCheck:
    """Whether a CUDA torch input may skip the DLPack protocol's stream handling, asked
    once per call. ``Tensor.__dlpack__()`` orders the legacy default stream after the
    caller's current stream, which is a no-op when the current stream is that default
    stream (the common case) and costs two stream queries and a comparison per tensor
    either way; the capsule from ``torch.utils.dlpack.to_dlpack`` is the same without them."""

    def __init__(self):
        self._direct: dict[Any, bool] = {}

    def direct(self, tensor) -> bool:
        device = tensor.device
        if device.type != "cuda":
            return True
        if device not in self._direct:
            import torch

            self._direct[device] = torch.cuda.current_stream(device) == torch.cuda.default_stream(device)
        return self._direct[device]


def _to_kiln_tensor(lib: ctypes.CDLL, obj: Any, streams: _StreamCheck | None = None,
                    source: Any = None) -> ctypes.c_void_p:
    """A new kiln_tensor_t sharing ``obj``'s memory, or ``source``'s when given (its
    _dlpack_source); the caller frees it with kiln_tensor_free."""
    if source is None:
        source, _ = _dlpack_source(obj)
    if streams is not None and _is_torch_tensor(source) and streams.direct(source):
        import torch.utils.dlpack

        capsule = torch.utils.dlpack.to_dlpack(source)
    else:
        capsule = source.__dlpack__()
    managed = _dlpack.capsule_pointer(capsule, _dlpack.CAPSULE_NAME)
    handle = _P()
    _check(lib.kiln_tensor_from_dlpack(managed, ctypes.byref(handle)))
    # Kiln owns the DLManagedTensor now; the capsule must not delete it too.
    _dlpack.mark_capsule_used(capsule, _dlpack.USED_CAPSULE_NAME)
    return handle


# ---- tensors out ----------------------------------------------------------------------------


class _KilnDLPackExport:
    """Hands one exported Kiln tensor to a DLPack consumer (np.from_dlpack / torch.from_dlpack).

    Owns the DLManagedTensor until __dlpack__ passes it into a capsule; frees it if never consumed.
    """

    def __init__(self, managed_address: int):
        self._managed = managed_address
        tensor = ctypes.cast(managed_address, ctypes.POINTER(_dlpack.DLManagedTensor)).contents.dl_tensor
        self._device = (int(tensor.device.device_type), int(tensor.device.device_id))

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: bool | None = None) -> object:
        if self._managed is None:
            raise BufferError("this Kiln output was already exported")
        if copy:
            raise BufferError("Kiln exports share memory; copy=True is not supported")
        managed, self._managed = self._managed, None
        if max_version is not None and tuple(max_version)[0] >= _dlpack.DLPACK_MAJOR_VERSION:
            versioned = _P()
            try:
                _check(_library().kiln_dlpack_to_versioned(managed, ctypes.byref(versioned)))
            except KilnError:
                _dlpack.call_deleter(managed)
                raise
            return _dlpack.new_versioned_capsule(versioned.value)
        return _dlpack.new_unversioned_capsule(managed)

    def __del__(self):
        managed, self._managed = getattr(self, "_managed", None), None
        if managed:
            _dlpack.call_deleter(managed)


# dtypes numpy has no type for (bfloat16, float8): returned only as torch tensors.
_NOT_IN_NUMPY = {15: "bfloat16", 23: "float8_e5m2", 24: "float8_e4m3fn"}


def _from_kiln_tensor(lib: ctypes.CDLL, handle: ctypes.c_void_p, output: str) -> Any:
    if output == "numpy":
        dtype = ctypes.c_int32()
        _check(lib.kiln_tensor_dtype(handle, ctypes.byref(dtype)))
        if dtype.value in _NOT_IN_NUMPY:
            raise TypeError(f"numpy has no {_NOT_IN_NUMPY[dtype.value]} dtype; use output='torch' for this method")
    managed = _P()
    _check(lib.kiln_tensor_to_dlpack(handle, ctypes.byref(managed)))
    if output == "numpy":
        import numpy as np

        return np.from_dlpack(_KilnDLPackExport(managed.value))
    import torch.utils.dlpack

    # A capsule, not the protocol object: torch then skips its stream queries, which
    # Kiln's outputs do not need (ready when execute returns, or ordered on the caller's
    # stream). Unconsumed, the capsule's destructor frees the tensor.
    return torch.utils.dlpack.from_dlpack(_dlpack.new_unversioned_capsule(managed.value))


# ---- module ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Setting:
    """One entry of the runtime's settings table (docs/settings.md)."""

    name: str
    type: str  # "bool", "int", "string", or a choice's words separated by "|"
    default: str
    scope: str  # "process" (the whole process) or "runtime" (one Runtime's modules)
    doc: str

    @property
    def environment_variable(self) -> str:
        return "KILN_" + self.name.upper()


def settings() -> list[Setting]:
    """The settings table of the loaded libkiln."""
    lib = _library()
    out = []
    for i in range(lib.kiln_setting_count()):
        fields = [_STR() for _ in range(5)]
        _check(lib.kiln_setting_describe(i, *(ctypes.byref(f) for f in fields)))
        out.append(Setting(*(_text(f.value) for f in fields)))
    return out


class Runtime:
    """The context modules run in: this build's devices, backends and importers, and the settings
    (docs/settings.md). ``Runtime(**settings)`` makes a new one (reading the environment, which
    overrides); ``Runtime.default()`` is the one modules use when given none. A module keeps its
    runtime alive.

    Process-scope settings (log level, CUDA plugin, host memory, library paths) change the whole
    process whichever runtime sets them; runtime-scope ones (signature policy, ``disable_cuda``)
    apply to this runtime's modules."""

    def __init__(self, **settings: bool | int | str):
        self._lib = _library()
        self._handle = _P()
        _check(self._lib.kiln_runtime_create(ctypes.byref(self._handle)))
        for name, value in settings.items():
            self.set(name, value)

    @classmethod
    def default(cls) -> "Runtime":
        runtime = cls.__new__(cls)
        runtime._lib = _library()
        runtime._handle = _P()
        _check(runtime._lib.kiln_runtime_default(ctypes.byref(runtime._handle)))
        return runtime

    def set(self, name: str, value: bool | int | str) -> None:
        """Sets a setting (KilnError InvalidArgument for an unknown name or a wrong type,
        InvalidState when the environment fixes it)."""
        key = name.encode()
        if isinstance(value, bool):
            _check(self._lib.kiln_runtime_set_bool(self._handle, key, value))
        elif isinstance(value, int):
            _check(self._lib.kiln_runtime_set_int(self._handle, key, value))
        elif isinstance(value, str):
            _check(self._lib.kiln_runtime_set_string(self._handle, key, value.encode()))
        else:
            raise TypeError(f"setting {name!r}: a bool, int or str, not {type(value).__name__}")

    def get(self, name: str) -> bool | int | str:
        """A setting's value, typed by the table."""
        length = _SIZE()
        _check(self._lib.kiln_runtime_get_setting(self._handle, name.encode(), None, 0, ctypes.byref(length)))
        buffer = ctypes.create_string_buffer(length.value + 1)
        _check(self._lib.kiln_runtime_get_setting(self._handle, name.encode(), buffer, len(buffer),
                                                  ctypes.byref(length)))
        text = buffer.value.decode()
        kind = next(s.type for s in settings() if s.name == name)
        return text == "true" if kind == "bool" else int(text) if kind == "int" else text

    def close(self) -> None:
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._lib.kiln_runtime_free(handle)

    def __del__(self):
        self.close()


class _Cuda:
    """Kiln's CUDA device through the C API: its stream per thread and its allocator's counters
    (KilnError NotSupported, with the reason, where there is no usable GPU)."""

    def device_count(self) -> int:
        return int(_library().kiln_cuda_device_count())

    def current_stream(self, device: int = 0) -> int:
        out = _P()
        _check(_library().kiln_cuda_current_stream(device, ctypes.byref(out)))
        return out.value or 0

    def set_current_stream(self, stream: int, device: int = 0) -> int:
        """Makes ``stream`` (a cudaStream_t as an int, e.g. ``torch.cuda.current_stream().cuda_stream``)
        the calling thread's current stream on ``device``; returns the previous one."""
        previous = _P()
        _check(_library().kiln_cuda_set_current_stream(device, _P(stream), ctypes.byref(previous)))
        return previous.value or 0

    def memory_stats(self, device: int = 0) -> dict[str, int]:
        values = [ctypes.c_uint64() for _ in range(4)]
        _check(_library().kiln_cuda_memory_stats(device, *(ctypes.byref(v) for v in values)))
        keys = ("bytes_in_use", "peak_bytes_in_use", "bytes_reserved", "allocations_in_use")
        return dict(zip(keys, (v.value for v in values)))

    def reset_peak_memory_stats(self, device: int = 0) -> None:
        _check(_library().kiln_cuda_reset_peak_memory_stats(device))

    def release_cached_memory(self, device: int = 0) -> None:
        _check(_library().kiln_cuda_release_cached_memory(device))


#: ``kiln.runtime.cuda.memory_stats()``, ``cuda.set_current_stream(...)``: see _Cuda.
cuda = _Cuda()


class _CallSpec:
    """How one method is called: its arguments' structure (metadata ``input_tree``, or its
    inputs as positional arguments where the program records none) and its outputs' names and
    structure (``output_tree``)."""

    def __init__(self, method: str, meta: MethodMeta):
        from kiln import input_tree

        self.method = method
        self.meta = meta
        self.input_names = [spec.name for spec in meta.inputs]
        self.output_names = [spec.name for spec in meta.outputs]
        recorded = meta.metadata.get("input_tree")
        self.tree, self.tree_error = input_tree.positional_tree(self.input_names), None
        if recorded:
            try:
                self.tree = input_tree.parse(recorded)
                if len(self.tree["inputs"]) != len(self.input_names):
                    raise ValueError(f"it places {len(self.tree['inputs'])} inputs, the method has "
                                     f"{len(self.input_names)}")
            except ValueError as e:
                # Only calls by name or structure need the record: flat calls still work.
                self.tree, self.tree_error = None, f"method {method!r}: metadata input_tree is unusable: {e}"
        self.output_tree = meta.metadata.get("output_tree")
        # Whether the recorded arguments are exactly the inputs as positional arguments: then
        # a positional call needs no mapping.
        self.trivial = self.tree is not None and (
            not self.tree["kwargs"] and len(self.tree["args"]) == len(self.input_names)
            and all(node == {"input": i} for i, (_, node) in enumerate(self.tree["args"])))

    def flatten(self, args: Sequence[Any], kwargs: Mapping[str, Any] | None) -> list[Any]:
        from kiln import input_tree

        args = list(args)
        if not kwargs and not any(input_tree._holds_tensors(a) for a in args):
            # The method's inputs flattened in order, as every program could always be called:
            # as many plain values (no container of tensors) as inputs. Where those are the
            # arguments anyway, any count passes on, so a wrong one is refused by Kiln as before.
            if self.trivial or len(args) == len(self.input_names):
                return args
        if self.tree is None:
            raise ValueError(f"{self.tree_error}; pass the method's {len(self.input_names)} inputs in order")
        return input_tree.flatten(self.tree, args, kwargs, self.method)

    def arrange(self, results: list[Any], structure: str) -> Any:
        if structure == "flat":
            return results
        if structure == "names":
            return dict(zip(self.output_names, results))
        if not self.output_tree:
            raise ValueError(f"method {self.method!r} records no output structure (metadata output_tree: a program "
                             "written by an older exporter, or imported); use structure='flat' or 'names'")
        from kiln.output_tree import rebuild

        return rebuild(self.output_tree, results)


class Module:
    """One ``.kiln`` program. See the module docstring."""

    def __init__(self, path: str | os.PathLike, data_files: Iterable[str | os.PathLike] = (),
                 runtime: Runtime | None = None):
        self._lib = _library()
        self._handle = _P()
        self._call_specs: dict[str, _CallSpec] = {}
        self.path = os.fspath(path)
        files = [os.fsencode(f) for f in data_files]
        array = (_STR * max(len(files), 1))(*files)
        _check(self._lib.kiln_module_create_with_runtime(runtime._handle if runtime else None, os.fsencode(self.path),
                                                         array, len(files), ctypes.byref(self._handle)))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, runtime: Runtime | None = None) -> "Module":
        """A module of the program in ``data`` (a ``.kiln`` program with its weights inside, or a
        PyTorch ``.pt2`` package), copied at once into a sealed in-memory file: ``data`` may change
        or go away afterwards."""
        module = cls.__new__(cls)
        module._lib = _library()
        module._handle = _P()
        module._call_specs = {}
        view = memoryview(data).cast("B")
        buffer = (ctypes.c_char * view.nbytes).from_buffer_copy(view) if view.nbytes else None
        _check(module._lib.kiln_module_create_from_buffer(runtime._handle if runtime else None, buffer,
                                                          view.nbytes, ctypes.byref(module._handle)))
        module.path = "<memory>"
        return module

    # lifetime
    def close(self) -> None:
        """Frees the module and its loaded methods; outputs already returned stay valid."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._lib.kiln_module_free(handle)

    def __del__(self):
        self.close()

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _h(self) -> ctypes.c_void_p:
        if not self._handle:
            raise KilnError("InvalidState", f"module {self.path!r} is closed")
        return self._handle

    # loading
    def load(self, options: Mapping[str, Mapping[str, bool | int | str]] | None = None) -> None:
        """Maps and validates the program; ``options`` is {backend: {key: bool | int | str}}.

        ``{"program": {"require_signature": True, "trusted_keys": <text of .pub files>}}``
        (or ``"trusted_keys_file": "a.pub:b.pub"``) refuses a program that is not signed by a
        trusted key or was modified (KilnError "IntegrityError"), before any library is loaded.
        """
        opts = _build_options(self._lib, options)
        try:
            _check(self._lib.kiln_module_load(self._h(), opts.handle if opts else None))
        finally:
            if opts:
                opts.close()

    def load_method(self, name: str, options: Mapping[str, Mapping[str, bool | int | str]] | None = None) -> None:
        """Loads one method; without ``options`` the ones given to load() apply."""
        opts = _build_options(self._lib, options)
        try:
            _check(self._lib.kiln_module_load_method(self._h(), name.encode(), opts.handle if opts else None))
        finally:
            if opts:
                opts.close()

    def unload_method(self, name: str) -> None:
        _check(self._lib.kiln_module_unload_method(self._h(), name.encode()))

    def is_method_loaded(self, name: str) -> bool:
        out = ctypes.c_bool()
        _check(self._lib.kiln_module_is_method_loaded(self._h(), name.encode(), ctypes.byref(out)))
        return bool(out.value)

    # queries
    def method_names(self) -> list[str]:
        count = _SIZE()
        _check(self._lib.kiln_module_method_count(self._h(), ctypes.byref(count)))
        names = []
        for i in range(count.value):
            out = _STR()
            _check(self._lib.kiln_module_method_name(self._h(), i, ctypes.byref(out)))
            names.append(_text(out.value))
        return names

    def method_meta(self, name: str) -> MethodMeta:
        meta = _P()
        _check(self._lib.kiln_module_method_meta(self._h(), name.encode(), ctypes.byref(meta)))
        try:
            return _read_meta(self._lib, meta)
        finally:
            self._lib.kiln_method_meta_free(meta)

    # running
    def execute(self, name: str, inputs: Sequence[Any] = (), output: str = "numpy", *,
                kwargs: Mapping[str, Any] | None = None, structure: str = "flat") -> Any:
        """Runs method ``name`` with positional arguments ``inputs`` and keyword arguments
        ``kwargs``. Inputs are not copied here; Kiln copies an input only when its layout
        differs from the compiled one (see the module docstring). Outputs share Kiln's memory.

        Arguments are the model's, as it was exported (kiln.input_tree): by position or by the
        names of its parameters (``input_ids=...``), nested as they were (a list of tensors, a
        dict). The method's inputs flattened in order (``MethodMeta.inputs``) are accepted as
        well. A call that fits neither raises TypeError naming the method and the argument.

        ``output``: "numpy" (default) or "torch".

        ``structure``: what is returned.
          * "flat" (default): the list of the method's outputs, in order (``MethodMeta.outputs``);
          * "names": a dict of the same outputs by name (their paths in the model's output,
            "last_hidden_state", "past_key_values.0.1");
          * "tree": the model's output as the model returned it (kiln.output_tree.rebuild): a
            tensor, or tuples, lists and dicts with the outputs, None and constants in place;
            named containers (Hugging Face ModelOutput, namedtuples, dataclasses) are dicts.
            ValueError for a method whose program records no output structure.
        """
        if output not in ("numpy", "torch"):
            raise ValueError(f"output must be 'numpy' or 'torch', got {output!r}")
        if structure not in ("flat", "names", "tree"):
            raise ValueError(f"structure must be 'flat', 'names' or 'tree', got {structure!r}")
        call = self._call_spec(name)
        inputs = call.flatten(inputs, kwargs)
        lib = self._lib
        handles: list[ctypes.c_void_p] = []
        streams = _StreamCheck()
        try:
            for i, obj in enumerate(inputs):
                source, copied = _dlpack_source(obj)
                if copied is not None:
                    self._refuse_copy_of_written_input(name, i, copied)
                handles.append(_to_kiln_tensor(lib, obj, streams, source))
            array = (_P * max(len(handles), 1))(*handles)
            outputs = ctypes.POINTER(_P)()
            n_outputs = _SIZE()
            _check(lib.kiln_module_execute(self._h(), name.encode(), array, len(handles),
                                           ctypes.byref(outputs), ctypes.byref(n_outputs)))
        finally:
            for handle in handles:
                lib.kiln_tensor_free(handle)
        try:
            results = []
            for i in range(n_outputs.value):
                results.append(_from_kiln_tensor(lib, _P(outputs[i]), output))
        finally:
            lib.kiln_tensor_array_free(outputs, n_outputs.value)
        return call.arrange(results, structure)

    def _call_spec(self, name: str) -> "_CallSpec":
        """The method's argument and output structure, read once per method: a program does not
        change under a Module."""
        call = self._call_specs.get(name)
        if call is None:
            call = self._call_specs[name] = _CallSpec(name, self.method_meta(name))
        return call

    def _refuse_copy_of_written_input(self, name: str, index: int, why: str) -> None:
        """An input the method writes in place (a KV cache) must reach Kiln as it is: passed as
        a copy, the method would write into the copy and the caller would never see it."""
        meta = self.method_meta(name)
        written = {n for n in meta.metadata.get("mutated_inputs", "").split(",") if n}
        if index < len(meta.inputs) and meta.inputs[index].name in written:
            raise KilnError("InvalidArgument",
                            f"method '{name}' input {index} ('{meta.inputs[index].name}') is written in place by "
                            f"the method, but it is {why}, which has to be copied to pass it to Kiln, and the "
                            "method's writes would go to the copy and be lost; pass a writable array with "
                            "non-negative strides and keep it across calls")

    def forward(self, *args: Any, output: str = "numpy", structure: str = "flat", **kwargs: Any) -> Any:
        """``execute("forward", args, output, kwargs=kwargs, structure=structure)``: the model's
        arguments by position or by name (``module.forward(input_ids=ids, attention_mask=mask)``).
        A model input named ``output`` or ``structure`` is passed through ``execute``'s
        ``kwargs``."""
        return self.execute("forward", args, output=output, kwargs=kwargs, structure=structure)

    __call__ = forward

    def __repr__(self) -> str:
        return f"kiln.runtime.Module({self.path!r})"
