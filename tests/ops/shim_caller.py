"""Calls Kiln's ``aoti_torch_<device>_<op>`` fallback functions directly, with torch tensors.

The C signature of each function is read from torch's own generated header
(``torch/include/torch/csrc/inductor/aoti_torch/generated/c_shim_<device>.h``) and, for the
CPU, its hand-written ``c/shim_cpu.h`` (oneDNN ops such as mkldnn_rnn_layer): the contract
a model library compiled by AOTInductor is built against. Arguments
are marshalled by their C types the way torchgen's C shim generator maps an ATen
schema: ``Tensor`` -> handle, ``Tensor?`` -> pointer to a handle, lists -> pointer
and ``<name>_len_``, optional scalars -> pointers, returns -> ``retN`` slots. The
reference is the ATen overload the function is named after, called with the same
arguments, so a case is written once as ATen keyword arguments.
"""

from __future__ import annotations

import ctypes
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import torch

DTYPE_CODES = {
    torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4, torch.float16: 5,
    torch.float32: 6, torch.float64: 7, torch.complex64: 9, torch.complex128: 10, torch.bool: 11,
    torch.bfloat16: 15, torch.float8_e5m2: 23, torch.float8_e4m3fn: 24, torch.uint16: 27, torch.uint32: 28,
    torch.uint64: 29,
}
CODE_DTYPES = {code: dt for dt, code in DTYPE_CODES.items()}
LAYOUT_CODES = {torch.strided: 0}
DEVICE_CODES = {"cpu": 0, "cuda": 1}
MEMORY_FORMAT_CODES = {torch.contiguous_format: 0, torch.channels_last: 1, torch.channels_last_3d: 2,
                       torch.preserve_format: 3}


def header_path(device: str) -> Path:
    return Path(torch.__file__).parent / "include/torch/csrc/inductor/aoti_torch/generated" / f"c_shim_{device}.h"


def handwritten_header_path(device: str) -> Path:
    """torch's hand-written shim header of `device` (c/shim_cpu.h: ops with no generated shim,
    e.g. oneDNN's, whose ATen kernels exist only in builds with MKLDNN); it may not exist."""
    return Path(torch.__file__).parent / "include/torch/csrc/inductor/aoti_torch/c" / f"shim_{device}.h"


def header_paths(device: str) -> list[Path]:
    """The headers declaring `device`'s fallback ops: the generated one, and the hand-written one
    where torch has it."""
    extra = handwritten_header_path(device)
    return [header_path(device)] + ([extra] if extra.is_file() else [])


@dataclass(frozen=True)
class Param:
    ctype: str
    name: str


@functools.cache
def declarations(device: str) -> dict[str, list[Param]]:
    """Function name -> its C parameters, from torch's headers for `device` (header_paths)."""
    text = "\n".join(p.read_text() for p in header_paths(device))
    out: dict[str, list[Param]] = {}
    for m in re.finditer(r"AOTITorchError\s+(aoti_torch_\w+)\(([^)]*)\);", text):
        params = []
        for raw in m.group(2).split(","):
            raw = " ".join(raw.split())
            if not raw:
                continue
            ctype, name = raw.rsplit(" ", 1)
            params.append(Param(ctype.replace(" *", "*"), name))
        if m.group(1) in out and out[m.group(1)] != params:
            raise ValueError(f"{m.group(1)} is declared twice with different parameters")
        out[m.group(1)] = params
    return out


@functools.cache
def aten_overloads() -> dict[str, torch._ops.OpOverload]:
    """The shim suffix torchgen derives from each ATen overload -> the overload."""
    table = {}
    for full in torch._C._dispatch_get_all_op_names():
        if not full.startswith("aten::"):
            continue
        name, _, overload = full[len("aten::"):].partition(".")
        key = f"{name}_{overload}" if overload else name
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        try:
            table[key] = getattr(packet, overload or "default")
        except AttributeError:
            continue
    return table


# Shims of torch's hand-written c/shim_cpu.h whose name torchgen would not derive from their
# operator: suffix -> (the operator Inductor calls the shim for, the shim's parameter names that
# differ from the operator's argument names).
HAND_WRITTEN = {
    "_weight_int4pack_mm_cpu_tensor": ("quantized::int4mm_packed_weight_cpu", {"X": "self", "w": "mat2"}),
}


def aten_op(function: str, device: str) -> torch._ops.OpOverload:
    suffix = function[len(f"aoti_torch_{device}_"):]
    if suffix in HAND_WRITTEN:
        namespace, _, name = HAND_WRITTEN[suffix][0].partition("::")
        return getattr(getattr(torch.ops, namespace), name).default
    # A versioned shim (foo_v2) takes the newest schema of the same overload.
    base = re.sub(r"_v\d+$", "", suffix)
    return aten_overloads()[base]


def schema_names(function: str, device: str) -> dict[str, str]:
    """The shim's parameter names that differ from its operator's argument names -> those."""
    return HAND_WRITTEN.get(function[len(f"aoti_torch_{device}_"):], (None, {}))[1]


class KilnError(RuntimeError):
    pass


class Unreadable:
    """Stands for a returned tensor whose memory the harness could not copy."""

    def __init__(self, reason: str):
        self.reason = reason

    def __getattr__(self, name):
        raise AssertionError(self.reason)


class _Renamed:
    """libkiln exports each aoti_torch_* shim as kiln_torch_* (the same length: it rewrites a
    model library's imports to these names, so Kiln's and libtorch's models can share a process).
    Names are looked up in each library in turn (the CUDA plugin, then libkiln, which defines the
    device-neutral ops such as views for every device)."""

    def __init__(self, *libs: ctypes.CDLL):
        self._libs = libs

    def __getattr__(self, name: str):
        if name.startswith("aoti_torch_"):
            name = "kiln_torch_" + name[len("aoti_torch_"):]
        for lib in self._libs:
            try:
                fn = getattr(lib, name)
            except AttributeError:
                continue
            setattr(self, name, fn)
            return fn
        raise AttributeError(name)


class ShimLibrary:
    """libkiln.so's shim functions, with tensors crossing as borrowed handles."""

    def __init__(self, path: str, ops_path: str | None = None):
        """`path`: libkiln.so (tensor handles, CPU ops); `ops_path`: the library defining the ops
        under test when not libkiln (libkiln_cuda.so, which libkiln must have loaded already)."""
        base = ctypes.CDLL(path)
        self.lib = _Renamed(base)
        self.ops = _Renamed(ctypes.CDLL(ops_path), base) if ops_path else self.lib
        lib = self.lib
        lib.kiln_last_error_message.restype = ctypes.c_char_p
        lib.aoti_torch_create_tensor_from_blob.argtypes = [
            ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
            ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
        for fn in ("aoti_torch_get_data_ptr",):
            getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        for fn in ("aoti_torch_get_sizes", "aoti_torch_get_strides"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))]
        for fn in ("aoti_torch_get_dim", "aoti_torch_get_storage_offset"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)]
        for fn in ("aoti_torch_get_dtype", "aoti_torch_get_device_type"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32)]
        lib.aoti_torch_delete_tensor_object.argtypes = [ctypes.c_void_p]

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise KilnError(f"{what}: {(self.lib.kiln_last_error_message() or b'').decode()}")

    def handle(self, t: torch.Tensor) -> ctypes.c_void_p:
        """A Kiln handle borrowing `t`'s memory (storage start + offset, as ATen's from_blob)."""
        sizes = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
        strides = (ctypes.c_int64 * max(t.dim(), 1))(*t.stride())
        base = t.untyped_storage().data_ptr()
        device = DEVICE_CODES[t.device.type]
        out = ctypes.c_void_p()
        self.check(self.lib.aoti_torch_create_tensor_from_blob(
            base, t.dim(), sizes, strides, t.storage_offset(), DTYPE_CODES[t.dtype], device,
            t.device.index or 0, ctypes.byref(out)), "create_tensor_from_blob")
        return out

    def to_torch(self, h: ctypes.c_void_p, device: str) -> torch.Tensor:
        """A copy of Kiln tensor `h` as a torch tensor with the same sizes and strides."""
        lib = self.lib
        dim, dtype = ctypes.c_int64(), ctypes.c_int32()
        sizes_p, strides_p = ctypes.POINTER(ctypes.c_int64)(), ctypes.POINTER(ctypes.c_int64)()
        data = ctypes.c_void_p()
        self.check(lib.aoti_torch_get_dim(h, ctypes.byref(dim)), "get_dim")
        self.check(lib.aoti_torch_get_dtype(h, ctypes.byref(dtype)), "get_dtype")
        self.check(lib.aoti_torch_get_sizes(h, ctypes.byref(sizes_p)), "get_sizes")
        self.check(lib.aoti_torch_get_strides(h, ctypes.byref(strides_p)), "get_strides")
        self.check(lib.aoti_torch_get_data_ptr(h, ctypes.byref(data)), "get_data_ptr")
        # A result is read where it lives: a CUDA op may return host tensors (ATen's CUDA
        # attention ops give their philox seed and offset on the CPU).
        device_type = ctypes.c_int32()
        self.check(lib.aoti_torch_get_device_type(h, ctypes.byref(device_type)), "get_device_type")
        if device_type.value == DEVICE_CODES["cpu"]:
            device = "cpu"
        sizes = [sizes_p[i] for i in range(dim.value)]
        strides = [strides_p[i] for i in range(dim.value)]
        dt = CODE_DTYPES[dtype.value]
        numel = 1
        for s in sizes:
            numel *= s
        if numel == 0:
            out = torch.empty_strided(sizes, strides, dtype=dt, device=device)
        else:
            extent = 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
            nbytes = extent * torch.empty((), dtype=dt).element_size()
            if device == "cpu":
                raw = bytearray(ctypes.string_at(data.value, nbytes))
                flat = torch.frombuffer(raw, dtype=torch.uint8).clone().view(dt)
                out = torch.as_strided(flat, sizes, strides)
            else:
                out = _device_copy(data.value, nbytes, dt, sizes, strides, device)
        # Where the Kiln tensor's element 0 was, so a caller can check which
        # memory a view shares (the copy itself shares nothing).
        out.kiln_data_ptr = data.value or 0
        return out

    def delete(self, h: ctypes.c_void_p) -> None:
        self.check(self.lib.aoti_torch_delete_tensor_object(h), "delete_tensor_object")


def _device_copy(ptr: int, nbytes: int, dt, sizes, strides, device: str) -> torch.Tensor:
    """A copy of device memory Kiln owns, after every stream's work on it (Kiln's ops run on
    its own current stream, not torch's)."""
    cudart = _cudart()
    assert cudart.cudaDeviceSynchronize() == 0
    flat = torch.empty(nbytes, dtype=torch.uint8, device=device)
    rc = cudart.cudaMemcpy(ctypes.c_void_p(flat.data_ptr()), ctypes.c_void_p(ptr), ctypes.c_size_t(nbytes), 3)
    if rc != 0:
        cudart.cudaGetLastError()  # a failed copy must not be reported by torch's next launch check
    assert rc == 0, f"cudaMemcpy failed ({rc})"
    return torch.as_strided(flat.view(dt), sizes, strides)


@functools.cache
def _cudart() -> ctypes.CDLL:
    import glob
    import os
    for pattern in ("libcudart.so.13", "libcudart.so"):
        try:
            return ctypes.CDLL(pattern)
        except OSError:
            pass
    candidates = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*", "lib", "libcudart.so*"))
    return ctypes.CDLL(candidates[0])


def _scalar_value(value, ctype: str):
    base = ctype.rstrip("*")
    if isinstance(value, torch.dtype):
        value = DTYPE_CODES[value]
    elif isinstance(value, torch.layout):
        value = LAYOUT_CODES[value]
    elif isinstance(value, torch.memory_format):
        value = MEMORY_FORMAT_CODES[value]
    return {"int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32, "double": ctypes.c_double}[base](value)


def call_shim(lib: ShimLibrary, function: str, device: str, kwargs: dict,
              after: dict | None = None) -> list[torch.Tensor | None]:
    """Calls `function` with ATen-named `kwargs`; returns its ret* tensors as torch copies.

    Tensors passed in are borrowed: an out= or in-place argument is written in place.
    With `after`, it receives a torch copy of each plain tensor argument's Kiln handle
    as it stands after the call (an in-place op such as resize_ or set_ may make the
    handle view other memory or geometry than the torch tensor passed in).
    """
    params = declarations(device)[function]
    args: list = []
    keep: list = []  # keeps ctypes objects alive through the call
    handles: list = []
    rets: list[ctypes.c_void_p] = []
    named: dict[str, ctypes.c_void_p] = {}

    def tensor_handle(t):
        h = lib.handle(t)
        handles.append(h)
        return h

    i = 0
    while i < len(params):
        p = params[i]
        nxt = params[i + 1] if i + 1 < len(params) else None
        has_len = nxt is not None and nxt.name == f"{p.name}_len_"
        if re.fullmatch(r"ret\d+", p.name):
            # Tensor returns come back as handles; SymInt/float returns as values.
            slot = {"AtenTensorHandle*": ctypes.c_void_p, "int64_t*": ctypes.c_int64,
                    "double*": ctypes.c_double, "int32_t*": ctypes.c_int32}[p.ctype]()
            rets.append(slot)
            args.append(ctypes.byref(slot))
            i += 1
            continue
        if p.ctype == "AtenGeneratorHandle*":
            # Kiln has no generator objects (random ops draw from the method's seed).
            args.append(None)
            i += 1
            continue
        value = kwargs[p.name]
        if p.ctype == "AtenTensorHandle":
            h = tensor_handle(value)
            named[p.name] = h
            args.append(h)
        elif p.ctype == "AtenTensorHandle*":
            if value is None:
                args.append(None)
            else:
                slot = tensor_handle(value)
                keep.append(slot)
                args.append(ctypes.byref(slot))
        elif p.ctype == "const AtenTensorHandle*" and has_len:
            arr = (ctypes.c_void_p * max(len(value), 1))(*[tensor_handle(t).value for t in value])
            keep.append(arr)
            args += [arr, ctypes.c_int64(len(value))]
            i += 1
        elif p.ctype == "const AtenTensorHandle**" and has_len:
            slots = [None if t is None else tensor_handle(t) for t in value]
            keep.append(slots)
            arr = (ctypes.POINTER(ctypes.c_void_p) * max(len(value), 1))(
                *[ctypes.POINTER(ctypes.c_void_p)() if s is None else ctypes.pointer(s) for s in slots])
            keep.append(arr)
            args += [arr, ctypes.c_int64(len(value))]
            i += 1
        elif p.ctype in ("const int64_t*", "const double*") and has_len:
            ct = ctypes.c_int64 if "int64" in p.ctype else ctypes.c_double
            arr = (ct * max(len(value), 1))(*value)
            keep.append(arr)
            args += [arr, ctypes.c_int64(len(value))]
            i += 1
        elif p.ctype in ("const int64_t**", "const double**") and has_len:
            if value is None:
                args += [None, ctypes.c_int64(0)]
            else:
                ct = ctypes.c_int64 if "int64" in p.ctype else ctypes.c_double
                arr = (ct * max(len(value), 1))(*value)
                # An optional list is a pointer to the array's pointer (torch's
                # pointer_to_optional_list dereferences it once more).
                ptr = ctypes.cast(arr, ctypes.POINTER(ct))
                keep += [arr, ptr]
                args += [ctypes.byref(ptr), ctypes.c_int64(len(value))]
            i += 1
        elif p.ctype == "int32_t*" and nxt is not None and nxt.name == f"{p.name}_index_":
            if value is None:
                args += [None, ctypes.c_int32(0)]
            else:
                dev = torch.device(value)
                code = ctypes.c_int32(DEVICE_CODES[dev.type])
                keep.append(code)
                args += [ctypes.byref(code), ctypes.c_int32(dev.index or 0)]
            i += 1
        elif p.ctype == "const char*":
            args.append(ctypes.c_char_p(value.encode()))
        elif p.ctype == "const char**":
            if value is None:
                args.append(None)
            else:
                s = ctypes.c_char_p(value.encode())
                keep.append(s)
                args.append(ctypes.byref(s))
        elif p.ctype in ("int64_t", "int32_t", "double"):
            args.append(_scalar_value(value, p.ctype))
        elif p.ctype in ("int64_t*", "int32_t*", "double*"):
            if value is None:
                args.append(None)
            else:
                v = _scalar_value(value, p.ctype)
                keep.append(v)
                args.append(ctypes.byref(v))
        else:
            raise NotImplementedError(f"{function}: C parameter type {p.ctype} {p.name}")
        i += 1

    fn = getattr(lib.ops, function)
    fn.restype = ctypes.c_int32
    try:
        rc = fn(*args)
        lib.check(rc, function)
        if device == "cuda":
            assert _cudart().cudaDeviceSynchronize() == 0
        out = []
        for r in rets:
            if isinstance(r, ctypes.c_void_p):
                if not r.value:
                    out.append(None)
                    continue
                try:
                    out.append(lib.to_torch(r, device))
                except (AssertionError, RuntimeError) as e:
                    # A result Kiln returned but the harness cannot read back: comparing it fails
                    # with this reason, while checks that ignore it (auxiliary results) still run.
                    out.append(Unreadable(f"result could not be read: {e}"))
            else:
                out.append(r.value)
        if after is not None:
            for name, h in named.items():
                after[name] = lib.to_torch(h, device)
        return out
    finally:
        for r in rets:
            if isinstance(r, ctypes.c_void_p) and r.value:
                lib.delete(r)
        for h in handles:
            lib.delete(h)
