"""Pure-Python reader for the dynamic imports of an ELF64 little-endian shared library.

The exporter must know, before it packs a compiled method, which ``aoti_torch_*``
functions the library expects its host to provide and which glibc symbol versions it
requires.  Reading them here (rather than shelling out to ``nm``/``readelf``) keeps the
exporter free of binutils and gives exact, testable results.

Only what the exporter needs is read: ``.dynsym``/``.dynstr`` (undefined symbols),
``.gnu.version``/``.gnu.version_r`` (required symbol versions) and ``.dynamic``
(``DT_NEEDED``).  Every offset read from the file is bounds-checked; a malformed file
raises :class:`ElfError`, never an ``IndexError`` or ``struct.error``.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field

__all__ = [
    "DynamicSymbol",
    "ElfError",
    "ElfImports",
    "max_version",
    "read_elf_imports",
    "undefined_symbol_names",
]

# Section types (ELF gABI and the GNU extensions used by glibc's symbol versioning).
_SHT_DYNAMIC = 6
_SHT_DYNSYM = 11
_SHT_GNU_VERNEED = 0x6FFFFFFE
_SHT_GNU_VERSYM = 0x6FFFFFFF
_DT_NULL = 0
_DT_NEEDED = 1
_SHN_UNDEF = 0
_STB_WEAK = 2
_VERSYM_HIDDEN = 0x8000

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_DYN = struct.Struct("<qQ")
_VERNEED = struct.Struct("<HHIII")
_VERNAUX = struct.Struct("<IHHII")


class ElfError(ValueError):
    """The bytes are not an ELF64 little-endian file, or its tables are malformed."""


@dataclass(frozen=True)
class DynamicSymbol:
    """One undefined dynamic symbol: its name, required version (or None) and binding."""

    name: str
    version: str | None = None
    weak: bool = False


@dataclass
class ElfImports:
    """What a shared library needs from the process that loads it."""

    undefined: list[DynamicSymbol] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)  # DT_NEEDED entries, in file order
    version_needs: dict[str, list[str]] = field(default_factory=dict)  # file -> versions

    def names(self) -> list[str]:
        return [s.name for s in self.undefined]


@dataclass
class _Section:
    name_off: int
    type: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int
    name: str = ""


class _Reader:
    def __init__(self, data: bytes | bytearray | memoryview):
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data

    def unpack(self, st: struct.Struct, off: int, what: str) -> tuple:
        if off < 0 or off + st.size > len(self.data):
            raise ElfError(f"{what} at offset {off} (+{st.size}) lies outside the file ({len(self.data)} bytes)")
        return st.unpack_from(self.data, off)

    def cstr(self, table: _Section, off: int, what: str) -> str:
        if off < 0 or off >= table.size:
            raise ElfError(f"{what}: string offset {off} outside its string table ({table.size} bytes)")
        start = table.offset + off
        end_limit = table.offset + table.size
        if end_limit > len(self.data):
            raise ElfError(f"{what}: string table extends past the end of the file")
        raw = bytes(self.data[start:end_limit])
        nul = raw.find(b"\0")
        if nul < 0:
            raise ElfError(f"{what}: unterminated string at offset {off}")
        return raw[:nul].decode("utf-8", errors="replace")


def _read_sections(r: _Reader) -> list[_Section]:
    if len(r.data) < _EHDR.size or bytes(r.data[:4]) != b"\x7fELF":
        raise ElfError("not an ELF file (bad magic)")
    ident = bytes(r.data[:16])
    if ident[4] != 2:
        raise ElfError("only ELF64 is supported (EI_CLASS is not ELFCLASS64)")
    if ident[5] != 1:
        raise ElfError("only little-endian ELF is supported (EI_DATA is not ELFDATA2LSB)")
    (_, _, _, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx) = r.unpack(_EHDR, 0, "ELF header")
    if shoff == 0 or shnum == 0:
        raise ElfError("the file has no section headers (stripped section table is not supported)")
    if shentsize != _SHDR.size:
        raise ElfError(f"unexpected section header size {shentsize} (expected {_SHDR.size})")
    sections = []
    for i in range(shnum):
        (name, typ, _flags, _addr, off, size, link, info, _align, entsize) = r.unpack(
            _SHDR, shoff + i * shentsize, f"section header {i}"
        )
        sections.append(_Section(name, typ, off, size, link, info, entsize))
    for s in sections:
        if s.type not in (8,) and s.offset + s.size > len(r.data):  # 8 = SHT_NOBITS occupies no file space
            raise ElfError(f"section at offset {s.offset} (+{s.size}) lies outside the file")
    if shstrndx < len(sections):
        strtab = sections[shstrndx]
        for s in sections:
            try:
                s.name = r.cstr(strtab, s.name_off, "section name")
            except ElfError:
                s.name = ""
    return sections


def _linked(sections: list[_Section], sec: _Section, what: str) -> _Section:
    if sec.link >= len(sections):
        raise ElfError(f"{what}: sh_link {sec.link} is not a section index")
    return sections[sec.link]


def _read_verneed(r: _Reader, sections: list[_Section]) -> tuple[dict[str, list[str]], dict[int, str]]:
    """Returns (file -> required version names, version index -> version name)."""
    needs: dict[str, list[str]] = {}
    by_index: dict[int, str] = {}
    for sec in sections:
        if sec.type != _SHT_GNU_VERNEED:
            continue
        strtab = _linked(sections, sec, ".gnu.version_r")
        off = sec.offset
        end = sec.offset + sec.size
        for _ in range(max(sec.info, 0) or 1 << 16):
            if off + _VERNEED.size > end:
                raise ElfError(".gnu.version_r entry runs past its section")
            (_ver, cnt, file_off, aux, nxt) = r.unpack(_VERNEED, off, ".gnu.version_r entry")
            file_name = r.cstr(strtab, file_off, ".gnu.version_r file name")
            names = needs.setdefault(file_name, [])
            aoff = off + aux
            for _ in range(cnt):
                if aoff + _VERNAUX.size > end:
                    raise ElfError(".gnu.version_r aux entry runs past its section")
                (_hash, _flags, other, name_off, anext) = r.unpack(_VERNAUX, aoff, ".gnu.version_r aux entry")
                vname = r.cstr(strtab, name_off, ".gnu.version_r version name")
                names.append(vname)
                by_index[other & 0x7FFF] = vname
                if anext == 0:
                    break
                aoff += anext
            if nxt == 0:
                break
            off += nxt
    return needs, by_index


def read_elf_imports(source: bytes | bytearray | memoryview | str | os.PathLike) -> ElfImports:
    """Reads undefined dynamic symbols, DT_NEEDED and required versions of an ELF64 LE file.

    ``source`` is the file's bytes or a path.  Raises :class:`ElfError` if it is not a
    well-formed ELF64 little-endian file.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            source = f.read()
    r = _Reader(source)
    sections = _read_sections(r)
    result = ElfImports()
    result.version_needs, version_names = _read_verneed(r, sections)

    dynsyms = [s for s in sections if s.type == _SHT_DYNSYM]
    versym = next((s for s in sections if s.type == _SHT_GNU_VERSYM), None)
    for dynsym in dynsyms:
        strtab = _linked(sections, dynsym, ".dynsym")
        entsize = dynsym.entsize or _SYM.size
        if entsize != _SYM.size:
            raise ElfError(f".dynsym entry size {entsize} (expected {_SYM.size})")
        count = dynsym.size // entsize
        for i in range(1, count):  # entry 0 is the reserved null symbol
            (name_off, info, _other, shndx, _value, _size) = r.unpack(_SYM, dynsym.offset + i * entsize, "dynamic symbol")
            if shndx != _SHN_UNDEF or name_off == 0:
                continue
            name = r.cstr(strtab, name_off, "dynamic symbol name")
            version = None
            if versym is not None and (i + 1) * 2 <= versym.size:
                (idx,) = r.unpack(struct.Struct("<H"), versym.offset + 2 * i, ".gnu.version entry")
                version = version_names.get(idx & ~_VERSYM_HIDDEN & 0xFFFF)
            result.undefined.append(DynamicSymbol(name, version, (info >> 4) == _STB_WEAK))

    for dyn in (s for s in sections if s.type == _SHT_DYNAMIC):
        strtab = _linked(sections, dyn, ".dynamic")
        for i in range(dyn.size // _DYN.size):
            (tag, val) = r.unpack(_DYN, dyn.offset + i * _DYN.size, ".dynamic entry")
            if tag == _DT_NULL:
                break
            if tag == _DT_NEEDED:
                result.needed.append(r.cstr(strtab, val, "DT_NEEDED name"))
    return result


def undefined_symbol_names(source) -> list[str]:
    """Names of the undefined dynamic symbols (what the library imports), sorted."""
    return sorted({s.name for s in read_elf_imports(source).undefined})


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def max_version(version_needs: dict[str, list[str]], prefix: str = "GLIBC_") -> str | None:
    """Highest required version named ``<prefix><x.y[.z]>`` across all files, e.g. "GLIBC_2.34".

    Compares numerically (2.9 < 2.34).  Returns None if nothing with that prefix is required.
    """
    pattern = re.compile(re.escape(prefix) + r"\d+(\.\d+)*$")
    found = [v for names in version_needs.values() for v in names if pattern.match(v)]
    if not found:
        return None
    return max(found, key=lambda v: _version_key(v[len(prefix):]))
