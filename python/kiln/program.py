"""Pure-Python writer and reader of the ``.kiln`` program file.

Needs only the ``flatbuffers`` package and the standard library (no torch, no
numpy): the exporter writes programs with it, tools and tests read them back.
The byte layout is documented in docs/program-format.md; the C++ reader
(src/program/program_file.cpp) is the authoritative validator, this reader
mirrors its checks so that a file Python accepts is one C++ accepts.

    from kiln.program import Program, MethodSpec, TensorSpec, DimSpec, load
    p = Program({"model": "tiny"})
    p.add_named_data("forward.so", so_bytes)
    p.add_named_data("forward.weights", blob, alignment=4096, external=True)
    p.add_method(MethodSpec("forward", inputs=[TensorSpec("x", "float32", [DimSpec(4)])],
                            library_key="forward.so", weights_key="forward.weights"))
    p.save("m.kiln")                      # and m.kiln.data for the external entry
    q = load("m.kiln")                    # validates; digests checked on named_data_bytes

Not thread-safe: use one Program per thread.
"""
from __future__ import annotations

import hashlib
import mmap
import os
import stat
import struct
from dataclasses import dataclass, field
from typing import Callable

import flatbuffers

from kiln._fb import Dim as _Dim
from kiln._fb import KeyValue as _KeyValue
from kiln._fb import Method as _Method
from kiln._fb import NamedData as _NamedData
from kiln._fb import Program as _Program
from kiln._fb import Segment as _Segment
from kiln._fb import TensorSpec as _TensorSpec
from kiln.spec import DimSpec, TensorSpec

__all__ = [
    "DTYPE_CODES",
    "DimSpec",
    "TensorSpec",
    "MethodSpec",
    "Program",
    "load",
    "FORMAT_VERSION",
]

# c10::ScalarType codes, the same values as include/kiln/dtype.h (a test checks).
DTYPE_CODES: dict[str, int] = {
    "uint8": 0,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "float16": 5,
    "float32": 6,
    "float64": 7,
    "complex64": 9,
    "complex128": 10,
    "bool": 11,
    "bfloat16": 15,
    "float8_e5m2": 23,
    "float8_e4m3fn": 24,
    "uint16": 27,
    "uint32": 28,
    "uint64": 29,
}
_DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}

# Layout constants; keep in step with src/program/file_format.h and kiln::kProgramVersion.
FORMAT_VERSION = 1
MIN_FORMAT_VERSION = 1
PROGRAM_MAGIC = b"KILNPROG"
DATA_MAGIC = b"KILNDATA"
FILE_IDENTIFIER = b"KLNP"
PROGRAM_HEADER_SIZE = 80
DATA_HEADER_SIZE = 32
DEFAULT_ALIGNMENT = 64
WEIGHTS_ALIGNMENT = 4096
MAX_ALIGNMENT = 4096
DATA_BASE_OFFSET = 4096
_FLATBUFFER_ALIGNMENT = 8
# magic, version, header_size, fb offset, fb size, segment base, segment size, fb sha256
_PROGRAM_HEADER = struct.Struct("<8sIIQQQQ32s")
# magic, version, header_size, data base offset, data size
_DATA_HEADER = struct.Struct("<8sIIQQ")
# Signature trailer after the last segment (docs/program-format.md, "Signatures");
# read here, verified only by the C++ runtime (kiln verify / the load policy).
SIGNATURE_MAGIC = b"KILNSIG1"
SIGNATURE_TRAILER_SIZE = 112
_SIGNATURE_TRAILER = struct.Struct("<8sII32s64s")
assert _PROGRAM_HEADER.size == PROGRAM_HEADER_SIZE and _DATA_HEADER.size == DATA_HEADER_SIZE
assert _SIGNATURE_TRAILER.size == SIGNATURE_TRAILER_SIZE


@dataclass
class MethodSpec:
    """Everything the program says about one method (mirrors kiln::MethodInfo)."""

    name: str
    backend: str = "aoti"
    device: str = "cpu"
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    compile_specs: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    library_key: str = ""
    weights_key: str = ""


@dataclass
class _Entry:
    key: str
    size: int
    alignment: int
    external: bool
    sha256: bytes
    read: Callable[[], bytes]  # returns the entry's bytes (no digest check)
    verified: bool = False


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


class Program:
    """A program being built, or one read by load()."""

    def __init__(self, metadata: dict[str, str] | None = None):
        self.metadata: dict[str, str] = dict(metadata or {})
        self.methods: list[MethodSpec] = []
        self._entries: dict[str, _Entry] = {}
        self._keepalive: list = []  # mappings of a loaded program
        # Public key of the signature trailer of a loaded program (not verified here), else None.
        self.signed_by: bytes | None = None

    # ---- building ---------------------------------------------------------

    def add_named_data(self, key: str, data: bytes | memoryview, alignment: int = DEFAULT_ALIGNMENT,
                       external: bool = False) -> str:
        """Adds a named blob and returns its key. The bytes are copied and their SHA-256 computed.

        Adding an existing key with identical bytes is a no-op (the larger alignment is kept);
        different bytes raise ValueError. alignment: a power of two <= 4096. Weights named by a
        method's weights_key are placed on a 4096-byte boundary at save() whatever is given here.
        """
        if not isinstance(key, str) or not key:
            raise ValueError("named data key must be a non-empty string")
        if not isinstance(alignment, int) or not _is_power_of_two(alignment) or alignment > MAX_ALIGNMENT:
            raise ValueError(f"named data {key!r}: alignment {alignment!r} is not a power of two <= {MAX_ALIGNMENT}")
        payload = bytes(data)
        digest = hashlib.sha256(payload).digest()
        old = self._entries.get(key)
        if old is not None:
            if old.sha256 != digest or old.size != len(payload):
                raise ValueError(f"named data {key!r} was already added with different bytes")
            old.alignment = max(old.alignment, alignment)
            return key
        self._entries[key] = _Entry(key, len(payload), alignment, bool(external), digest, lambda: payload, True)
        return key

    def add_method(self, spec: MethodSpec) -> None:
        """Adds a method; ValueError for an empty or repeated name, or an unknown dtype name."""
        if not spec.name:
            raise ValueError("method name must not be empty")
        if any(m.name == spec.name for m in self.methods):
            raise ValueError(f"method {spec.name!r} was already added")
        for t in list(spec.inputs) + list(spec.outputs):
            if t.dtype not in DTYPE_CODES:
                raise ValueError(f"method {spec.name!r} tensor {t.name!r}: unknown dtype {t.dtype!r}")
            problem = _dim_order_problem(t.dim_order, len(t.dims))
            if problem:
                raise ValueError(f"method {spec.name!r} tensor {t.name!r}: {problem}")
        self.methods.append(spec)

    # ---- reading ----------------------------------------------------------

    def named_data_info(self) -> list[dict]:
        """One dict per entry: key, size, alignment, sha256 (hex), external."""
        return [
            {"key": e.key, "size": e.size, "alignment": e.alignment, "sha256": e.sha256.hex(), "external": e.external}
            for e in self._entries.values()
        ]

    def named_data_bytes(self, key: str) -> bytes:
        """The entry's bytes; for a loaded program the SHA-256 is checked first (ValueError on mismatch).
        KeyError for an unknown key."""
        entry = self._entries.get(key)
        if entry is None:
            raise KeyError(f"no named data entry {key!r}")
        data = entry.read()
        if not entry.verified:
            if hashlib.sha256(data).digest() != entry.sha256:
                raise ValueError(f"named data {key!r}: SHA-256 does not match the recorded {entry.sha256.hex()}")
            entry.verified = True
        return data

    # ---- writing ----------------------------------------------------------

    def save(self, path: str | os.PathLike, external_data_path: str | os.PathLike | None = None) -> None:
        """Writes the program to `path`; entries added with external=True go to `external_data_path`
        (default path + ".data"), of which the program records only the basename. No data file is
        written when there are no external entries. ValueError if a method names a missing key.

        Each file is replaced atomically (kiln.atomic_file): a process that has the old file open
        or mapped keeps its bytes, and a failed write leaves the old files as they were and no
        temporary file behind."""
        from kiln.atomic_file import AtomicFile

        path = os.fspath(path)
        data_path = os.fspath(external_data_path) if external_data_path is not None else path + ".data"
        for m in self.methods:
            for what, k in (("library_key", m.library_key), ("weights_key", m.weights_key)):
                if k and k not in self._entries:
                    raise ValueError(f"method {m.name!r}: {what} {k!r} names no named data entry")
        weights = {m.weights_key for m in self.methods if m.weights_key}
        entries = list(self._entries.values())
        blobs = {e.key: self.named_data_bytes(e.key) for e in entries}
        alignment = {e.key: max(e.alignment, WEIGHTS_ALIGNMENT) if e.key in weights else e.alignment for e in entries}

        # Identical bytes with the same placement share one segment / range (e.g. two methods, one weights blob).
        groups: dict[tuple, list[_Entry]] = {}
        for e in entries:
            groups.setdefault((e.external, e.sha256, e.size), []).append(e)
        segments: list[tuple[int, int]] = []
        segment_bytes = bytearray()
        data_bytes = bytearray()
        location: dict[str, tuple[int, int]] = {}  # key -> (segment index or -1, external offset)
        max_alignment = DEFAULT_ALIGNMENT
        for (external, _, size), members in groups.items():
            align = max(alignment[e.key] for e in members)
            blob = blobs[members[0].key]
            if external:
                offset = _align_up(len(data_bytes), align)
                data_bytes.extend(b"\0" * (offset - len(data_bytes)))
                data_bytes.extend(blob)
                for e in members:
                    alignment[e.key] = align
                    location[e.key] = (-1, offset)
            else:
                offset = _align_up(len(segment_bytes), align)
                segment_bytes.extend(b"\0" * (offset - len(segment_bytes)))
                segment_bytes.extend(blob)
                segments.append((offset, size))
                max_alignment = max(max_alignment, align)
                for e in members:
                    alignment[e.key] = align
                    location[e.key] = (len(segments) - 1, 0)
        has_external = bool(data_bytes) or any(e.external for e in entries)

        fb = _build_flatbuffer(self, entries, alignment, location, segments,
                               [os.path.basename(data_path)] if has_external else [])
        fb_offset = PROGRAM_HEADER_SIZE
        segment_base = _align_up(fb_offset + len(fb), max_alignment)
        header = _PROGRAM_HEADER.pack(PROGRAM_MAGIC, FORMAT_VERSION, PROGRAM_HEADER_SIZE, fb_offset, len(fb),
                                      segment_base, len(segment_bytes), hashlib.sha256(fb).digest())
        out = bytearray(header)
        out.extend(fb)
        out.extend(b"\0" * (segment_base - len(out)))
        out.extend(segment_bytes)
        # Both files are written and synced under temporary names before either is renamed, so a
        # failed write leaves the old pair as it was; the data file is renamed first, so the new
        # program never names data that is not there yet.
        pending: list[AtomicFile] = []
        try:
            if has_external:
                data_header = _DATA_HEADER.pack(DATA_MAGIC, FORMAT_VERSION, DATA_HEADER_SIZE, DATA_BASE_OFFSET,
                                                len(data_bytes))
                pending.append(AtomicFile(data_path))
                pending[-1].write(data_header)
                pending[-1].write(b"\0" * (DATA_BASE_OFFSET - len(data_header)))
                pending[-1].write(data_bytes)
                pending[-1].sync()
            pending.append(AtomicFile(path))
            pending[-1].write(out)
            pending[-1].sync()
            for f in pending:
                f.commit()
        finally:
            for f in pending:
                f.discard()


def _build_flatbuffer(program: Program, entries: list[_Entry], alignment: dict[str, int],
                      location: dict[str, tuple[int, int]], segments: list[tuple[int, int]],
                      external_files: list[str]) -> bytes:
    b = flatbuffers.Builder(1024)

    def table_vector(start, offsets):
        start(b, len(offsets))
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    def key_values(kv: dict[str, str]) -> int:
        offs = []
        for k, v in kv.items():
            ks, vs = b.CreateString(str(k)), b.CreateString(str(v))
            _KeyValue.Start(b)
            _KeyValue.AddKey(b, ks)
            _KeyValue.AddValue(b, vs)
            offs.append(_KeyValue.End(b))
        return table_vector(lambda bb, n: bb.StartVector(4, n, 4), offs)

    def tensors(specs: list[TensorSpec]) -> int:
        offs = []
        for t in specs:
            dim_offs = []
            for d in t.dims:
                ns = b.CreateString(d.name)
                _Dim.Start(b)
                _Dim.AddSize(b, int(d.size))
                _Dim.AddDynamic(b, bool(d.dynamic))
                _Dim.AddMin(b, int(d.min))
                _Dim.AddMax(b, int(d.max))
                _Dim.AddName(b, ns)
                dim_offs.append(_Dim.End(b))
            dims = table_vector(_TensorSpec.StartDimsVector, dim_offs)
            # Row-major (empty) is written as no vector, so such programs read as before the field existed.
            order = b.CreateByteVector(bytes(t.dim_order)) if t.dim_order else None
            name = b.CreateString(t.name)
            _TensorSpec.Start(b)
            _TensorSpec.AddName(b, name)
            _TensorSpec.AddDtype(b, DTYPE_CODES[t.dtype])
            _TensorSpec.AddDims(b, dims)
            if order is not None:
                _TensorSpec.AddDimOrder(b, order)
            offs.append(_TensorSpec.End(b))
        return table_vector(lambda bb, n: bb.StartVector(4, n, 4), offs)

    method_offs = []
    for m in program.methods:
        name, backend, device = b.CreateString(m.name), b.CreateString(m.backend), b.CreateString(m.device)
        inputs, outputs = tensors(m.inputs), tensors(m.outputs)
        specs, meta = key_values(m.compile_specs), key_values(m.metadata)
        lib, weights = b.CreateString(m.library_key), b.CreateString(m.weights_key)
        _Method.Start(b)
        _Method.AddName(b, name)
        _Method.AddBackend(b, backend)
        _Method.AddDevice(b, device)
        _Method.AddInputs(b, inputs)
        _Method.AddOutputs(b, outputs)
        _Method.AddCompileSpecs(b, specs)
        _Method.AddMetadata(b, meta)
        _Method.AddLibraryKey(b, lib)
        _Method.AddWeightsKey(b, weights)
        method_offs.append(_Method.End(b))
    methods = table_vector(_Program.StartMethodsVector, method_offs)

    named_offs = []
    for e in entries:
        key = b.CreateString(e.key)
        digest = b.CreateByteVector(e.sha256)
        segment, offset = location[e.key]
        _NamedData.Start(b)
        _NamedData.AddKey(b, key)
        if e.external:
            _NamedData.AddExternalFile(b, 0)
            _NamedData.AddOffset(b, offset)
        else:
            _NamedData.AddSegment(b, segment)
        _NamedData.AddSize(b, e.size)
        # Written explicitly: a reader must not depend on the schema default.
        b.ForceDefaults(True)
        _NamedData.AddAlignment(b, alignment[e.key])
        b.ForceDefaults(False)
        _NamedData.AddSha256(b, digest)
        named_offs.append(_NamedData.End(b))
    named = table_vector(_Program.StartNamedDataVector, named_offs)

    _Program.StartSegmentsVector(b, len(segments))
    for offset, size in reversed(segments):
        _Segment.CreateSegment(b, offset, size)
    segs = b.EndVector()

    metadata = key_values(program.metadata)
    file_offs = [b.CreateString(n) for n in external_files]
    files = table_vector(_Program.StartExternalFilesVector, file_offs)

    _Program.Start(b)
    _Program.AddMethods(b, methods)
    _Program.AddNamedData(b, named)
    _Program.AddSegments(b, segs)
    _Program.AddMetadata(b, metadata)
    _Program.AddExternalFiles(b, files)
    root = _Program.End(b)
    b.Finish(root, file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())


# ---- reading ------------------------------------------------------------------


def _map(path: str, what: str):
    """Read-only view of a regular file (mmap; an empty file gives b""). Opened without blocking
    and checked before anything is read: a FIFO, a device or a directory given as a path is an
    error naming it and what it is, never a hang (open() of a FIFO with no writer blocks)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {path!r} does not exist") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            mode = info.st_mode
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "a device")
            raise ValueError(f"{what} {path!r} is {kind}, not a regular file")
        if info.st_size == 0:
            return b""
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)


def _text(value) -> str:
    return value.decode("utf-8") if value is not None else ""


def load(path: str | os.PathLike, data_files: list[str] | None = None) -> Program:
    """Reads and validates a program file (and its external data files: `data_files` in the order the
    program names them, default: next to the program). ValueError names what is wrong;
    FileNotFoundError names a missing file. Named data digests are checked on named_data_bytes()."""
    path = os.fspath(path)
    buf = _map(path, "program file")
    label = f"program file {path!r}"
    try:
        return _decode(buf, label, path, data_files)
    except (struct.error, IndexError, UnicodeDecodeError, OverflowError) as e:
        # Offsets inside the FlatBuffer that point nowhere: the C++ Verifier rejects these too.
        raise ValueError(f"{label}: the FlatBuffer is corrupt ({type(e).__name__}: {e})") from None


def _decode(buf, label: str, path: str, data_files: list[str] | None) -> Program:
    def invalid(message: str):
        return ValueError(f"{label}: {message}")

    size = len(buf)
    if size < 8:
        raise invalid(f"truncated: {size} bytes, shorter than the 8-byte magic at offset 0")
    if bytes(buf[:8]) != PROGRAM_MAGIC:
        raise invalid(f"bad magic at offset 0: expected b'KILNPROG', found {bytes(buf[:8])!r}")
    if size < PROGRAM_HEADER_SIZE:
        raise invalid(f"truncated: {size} bytes, shorter than the {PROGRAM_HEADER_SIZE}-byte header")
    _, version, header_size, fb_offset, fb_size, seg_base, seg_size, fb_digest = _PROGRAM_HEADER.unpack_from(buf, 0)
    if not MIN_FORMAT_VERSION <= version <= FORMAT_VERSION:
        raise invalid(f"format_version (offset 8) is {version}; this reader accepts {MIN_FORMAT_VERSION}..{FORMAT_VERSION}")
    if not PROGRAM_HEADER_SIZE <= header_size <= size:
        raise invalid(f"header_size (offset 12) is {header_size}; must be in [{PROGRAM_HEADER_SIZE}, file size {size}]")
    fb_end = fb_offset + fb_size
    if fb_offset < header_size or fb_offset % _FLATBUFFER_ALIGNMENT or fb_end > size or fb_size < 8:
        raise invalid(f"flatbuffer_offset/flatbuffer_size (offsets 16/24) = {fb_offset}/{fb_size} do not lie inside "
                      f"the file after the header (file size {size})")
    seg_end = seg_base + seg_size
    if seg_base < fb_end or seg_end > size:
        raise invalid(f"segment_base_offset/segment_data_size (offsets 32/40) = {seg_base}/{seg_size} do not lie "
                      f"inside the file after the FlatBuffer (ends at {fb_end}, file size {size})")
    signed_by = None
    if seg_end != size:
        tail = bytes(buf[seg_end:])
        if not tail.startswith(SIGNATURE_MAGIC):
            raise invalid(f"file size {size} does not match the header, which says the segments end at {seg_end}")
        if len(tail) < SIGNATURE_TRAILER_SIZE:
            raise invalid(f"signature trailer after the last segment (offset {seg_end}) is truncated: {len(tail)} bytes")
        _, trailer_size, _, public_key, _ = _SIGNATURE_TRAILER.unpack_from(tail, 0)
        if trailer_size != len(tail):
            raise invalid(f"signature trailer after the last segment (offset {seg_end}) records its size as "
                          f"{trailer_size} but {len(tail)} bytes follow the last segment")
        signed_by = public_key
    fb = bytes(buf[fb_offset:fb_end])
    digest = hashlib.sha256(fb).digest()
    if digest != fb_digest:
        raise invalid(f"SHA-256 of the FlatBuffer is {digest.hex()} but the header (offset 48) records {fb_digest.hex()}")
    if not _Program.Program.ProgramBufferHasIdentifier(fb, 0):
        raise invalid("the FlatBuffer does not carry the Kiln identifier 'KLNP'")
    root = _Program.Program.GetRootAs(fb, 0)

    prog = Program(_key_values(root.MetadataLength(), root.Metadata, "metadata", invalid))
    prog._keepalive.append(buf)
    prog.signed_by = signed_by

    # External data files.
    names = []
    for i in range(root.ExternalFilesLength()):
        name = _text(root.ExternalFiles(i))
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise invalid(f"external_files[{i}] = {name!r} is not a plain file name")
        if name in names:
            raise invalid(f"external_files[{i}] = {name!r} is listed twice")
        names.append(name)
    if data_files and len(data_files) != len(names):
        raise ValueError(f"{label}: {len(data_files)} data files were given but the program names {len(names)}")
    externals = []  # (name, buffer, data base, data size)
    for i, name in enumerate(names):
        dpath = os.fspath(data_files[i]) if data_files else os.path.join(os.path.dirname(path), name)
        dbuf = _map(dpath, f"{label}: external data file {name!r} at")
        at = f"external data file {name!r} ({dpath!r})"
        if len(dbuf) < 8 or bytes(dbuf[:8]) != DATA_MAGIC:
            raise invalid(f"{at}: bad magic at offset 0 (expected b'KILNDATA')")
        if len(dbuf) < DATA_HEADER_SIZE:
            raise invalid(f"{at}: truncated: {len(dbuf)} bytes, shorter than the {DATA_HEADER_SIZE}-byte header")
        _, dversion, dheader, dbase, dsize = _DATA_HEADER.unpack_from(dbuf, 0)
        if not MIN_FORMAT_VERSION <= dversion <= FORMAT_VERSION:
            raise invalid(f"{at}: format_version (offset 8) is {dversion}")
        if dheader < DATA_HEADER_SIZE or dbase < dheader or dbase + dsize != len(dbuf):
            raise invalid(f"{at}: header_size/data_base_offset/data_size (offsets 12/16/24) = "
                          f"{dheader}/{dbase}/{dsize} do not describe the file (size {len(dbuf)})")
        prog._keepalive.append(dbuf)
        externals.append((name, dbuf, dbase, dsize))

    # Segments.
    segments = []
    for i in range(root.SegmentsLength()):
        s = root.Segments(i)
        off, sz = s.Offset(), s.Size()
        if off + sz > seg_size:
            raise invalid(f"segments[{i}] (offset {off}, size {sz}) lies outside the segment region of {seg_size} bytes")
        segments.append((off, sz))
    ordered = sorted(range(len(segments)), key=lambda k: segments[k])
    for a, c in zip(ordered, ordered[1:]):
        (ps, pz), (cs, cz) = segments[a], segments[c]
        if pz and cz and cs < ps + pz:
            raise invalid(f"segments[{a}] and segments[{c}] overlap")

    referenced = [False] * len(segments)
    ext_ranges: dict[int, list[tuple[int, int, int]]] = {}
    for i in range(root.NamedDataLength()):
        nd = root.NamedData(i)
        key = _text(nd.Key())
        where = f"named_data[{i}] {key!r}"
        if not key:
            raise invalid(f"named_data[{i}] has an empty key")
        if key in prog._entries:
            raise invalid(f"{where}: duplicate key")
        sha = bytes(nd.Sha256(j) for j in range(nd.Sha256Length()))
        if len(sha) != 32:
            raise invalid(f"{where}: sha256 holds {len(sha)} bytes, not 32")
        alignment, sz = nd.Alignment(), nd.Size()
        if not _is_power_of_two(alignment) or alignment > MAX_ALIGNMENT:
            raise invalid(f"{where}: alignment {alignment} is not a power of two <= {MAX_ALIGNMENT}")
        seg, ext = nd.Segment(), nd.ExternalFile()
        if (seg >= 0) == (ext >= 0):
            raise invalid(f"{where}: must name exactly one of a segment ({seg}) or an external file ({ext})")
        if seg >= 0:
            if seg >= len(segments):
                raise invalid(f"{where}: segment {seg} does not exist (the program has {len(segments)} segments)")
            off, ssz = segments[seg]
            if nd.Offset() != 0:
                raise invalid(f"{where}: offset must be 0 for data inside the program file")
            if sz != ssz:
                raise invalid(f"{where}: size {sz} does not match segments[{seg}] size {ssz}")
            start = seg_base + off
            if start % alignment:
                raise invalid(f"{where}: segments[{seg}] at file offset {start} is not aligned to {alignment}")
            referenced[seg] = True
            source = buf
            external = False
        else:
            if ext >= len(externals):
                raise invalid(f"{where}: external file {ext} does not exist (the program names {len(externals)})")
            name, source, dbase, dsize = externals[ext]
            off = nd.Offset()
            if off + sz > dsize:
                raise invalid(f"{where}: offset {off} + size {sz} lies outside the data region ({dsize} bytes) "
                              f"of external data file {name!r}")
            start = dbase + off
            if start % alignment:
                raise invalid(f"{where}: external data file {name!r} offset {start} is not aligned to {alignment}")
            ext_ranges.setdefault(ext, []).append((off, off + sz, i))
            external = True
        prog._entries[key] = _Entry(key, sz, alignment, external, sha,
                                    (lambda src=source, s=start, n=sz: bytes(src[s:s + n])), False)
    for i, used in enumerate(referenced):
        if not used:
            raise invalid(f"segments[{i}] is not referenced by any named data entry")
    for ext, ranges in ext_ranges.items():
        ranges.sort()
        for (ps, pe, pi), (cs, ce, ci) in zip(ranges, ranges[1:]):
            if (ps, pe) != (cs, ce) and cs < pe and cs != ce and ps != pe:
                raise invalid(f"named_data[{pi}] and named_data[{ci}] overlap in external data file {externals[ext][0]!r}")

    for i in range(root.MethodsLength()):
        m = root.Methods(i)
        name = _text(m.Name())
        where = f"methods[{i}] {name!r}"
        if not name:
            raise invalid(f"methods[{i}] has an empty name")
        if any(x.name == name for x in prog.methods):
            raise invalid(f"{where}: duplicate method name")
        spec = MethodSpec(
            name=name,
            backend=_text(m.Backend()),
            device=_text(m.Device()),
            inputs=_tensors(m.InputsLength(), m.Inputs, f"{where} inputs", invalid),
            outputs=_tensors(m.OutputsLength(), m.Outputs, f"{where} outputs", invalid),
            compile_specs=_key_values(m.CompileSpecsLength(), m.CompileSpecs, f"{where} compile_specs", invalid),
            metadata=_key_values(m.MetadataLength(), m.Metadata, f"{where} metadata", invalid),
            library_key=_text(m.LibraryKey()),
            weights_key=_text(m.WeightsKey()),
        )
        if not spec.backend:
            raise invalid(f"{where}: empty backend")
        if not spec.device:
            raise invalid(f"{where}: empty device")
        for what in ("library_key", "weights_key"):
            k = getattr(spec, what)
            if k and k not in prog._entries:
                raise invalid(f"{where}: {what} {k!r} names no named data entry")
        prog.methods.append(spec)
    return prog


def _key_values(count: int, get, where: str, invalid) -> dict[str, str]:
    out: dict[str, str] = {}
    for i in range(count):
        kv = get(i)
        key = _text(kv.Key())
        if not key:
            raise invalid(f"{where}[{i}] has an empty key")
        if key in out:
            raise invalid(f"{where}[{i}]: duplicate key {key!r}")
        out[key] = _text(kv.Value())
    return out


def _tensors(count: int, get, where: str, invalid) -> list[TensorSpec]:
    out = []
    for i in range(count):
        t = get(i)
        name = _text(t.Name())
        at = f"{where}[{i}] {name!r}"
        code = t.Dtype()
        if code not in _DTYPE_NAMES:
            raise invalid(f"{at}: unknown dtype code {code}")
        dims = []
        for d in range(t.DimsLength()):
            dim = t.Dims(d)
            spec = DimSpec(dim.Size(), dim.Dynamic(), dim.Min(), dim.Max(), _text(dim.Name()))
            if spec.size < 0:
                raise invalid(f"{at} dim {d}: negative size {spec.size}")
            if spec.dynamic and (spec.min < 0 or (spec.max != -1 and spec.max < spec.min)):
                raise invalid(f"{at} dim {d}: bounds [{spec.min}, {spec.max}] are not a valid range")
            dims.append(spec)
        order = [t.DimOrder(j) for j in range(t.DimOrderLength())]
        problem = _dim_order_problem(order, len(dims))
        if problem:
            raise invalid(f"{at}: {problem}")
        out.append(TensorSpec(name, _DTYPE_NAMES[code], dims, order))
    return out


def _dim_order_problem(order, rank: int) -> str:
    """Why ``order`` is not a valid dim_order for a tensor of ``rank`` dims ("" if it is):
    empty, or a permutation of range(rank) (the same rule as the C++ reader)."""
    order = list(order)
    if not order:
        return ""
    listed = ", ".join(str(d) for d in order)
    if len(order) != rank:
        return f"dim_order [{listed}] has {len(order)} entries but the tensor has rank {rank}"
    if sorted(order) != list(range(rank)):
        return f"dim_order [{listed}] is not a permutation of [0, {rank})"
    return ""
