"""The weights table of a compiled method: where each constant of the AOTInductor
library lies in its weights blob and what tensor it is.

With it the runtime can place weights itself (user-managed constant buffers)
instead of letting the library copy the blob: overlapped host-to-device uploads,
weights shared by the methods of one program (same FQN, same bytes) kept once on
the device, and CPU parameters used in place from the program's mapping.

The facts come from the ``constants_info_`` table Inductor writes into the
generated wrapper source, which is exactly what the library was compiled with.
Blob layout (torch/_inductor/codecache.py): the non-folded constants in table
order, each its whole untyped storage (``data_size`` bytes, already padded to
64 bytes when any constant lives on the CPU).

Encoding in the method metadata (key ``aoti_constants``): one line per constant
that is in the blob, tab-separated:
    name, original_fqn, dtype, type, storage_offset, data_size, blob_offset,
    shape (comma list), stride (comma list), sha256 of its data_size bytes
Constants the runtime cannot place itself (folded ones are computed at run
time and skipped; mkldnn / non-strided layouts or a device other than the
method's make the whole table absent) leave the method on the library's own
blob loading.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

METADATA_KEY = "aoti_constants"

_LINE = re.compile(r"constants_info_\[(\d+)\]\.(\w+)\s*=\s*(.*?);\s*$")
_TYPE = re.compile(r"ConstantType::(\w+)")


@dataclasses.dataclass
class ConstantInfo:
    name: str = ""
    original_fqn: str = ""
    dtype: str = ""
    device_type: str = ""
    type: str = "Unknown"
    offset: int = 0
    data_size: int = 0
    from_folded: bool = False
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    layout: str = "strided"
    opaque: bool = False


def _int_list(text: str) -> tuple[int, ...]:
    inner = text.strip().strip("{}").strip()
    return tuple(int(v) for v in inner.split(",")) if inner else ()


def parse_constants_info(source: str) -> list[ConstantInfo]:
    """The constants_info_ table of a generated wrapper source, in index order."""
    table: dict[int, ConstantInfo] = {}
    for line in source.splitlines():
        m = _LINE.search(line)
        if not m:
            continue
        idx, field, value = int(m.group(1)), m.group(2), m.group(3).strip()
        c = table.setdefault(idx, ConstantInfo())
        if field in ("name", "original_fqn"):
            setattr(c, field, value.strip('"'))
        elif field == "dtype":
            c.dtype = value.removeprefix("cached_torch_dtype_")
        elif field == "device_type":
            c.device_type = value.removeprefix("cached_torch_device_type_")
        elif field in ("offset", "data_size"):
            setattr(c, field, int(value))
        elif field == "from_folded":
            c.from_folded = value == "true"
        elif field == "type":
            t = _TYPE.search(value)
            c.type = t.group(1) if t else "Unknown"
        elif field in ("shape", "stride"):
            setattr(c, field, _int_list(value))
        elif field == "layout":
            c.layout = value.split("cached_torch_layout_")[-1].rstrip(")")
        elif field == "opaque_metadata":
            c.opaque = True
    if sorted(table) != list(range(len(table))):
        raise ValueError("constants_info_ indices in the wrapper source are not contiguous")
    return [table[i] for i in range(len(table))]


def classify_by_fqn(constants: list[ConstantInfo], parameters: set[str], tensor_constants: set[str]) -> int:
    """Types the constants Inductor left ``Unknown`` from the exported program's signature,
    by original FQN; returns how many it typed. Inductor matches a constant's name against
    the program's parameter names, and a parameter whose FQN starts with a digit (a layer of
    ``nn.Sequential``: ``0.weight``) gets a prefixed constant name (``constant_0_weight``)
    that never matches, so it would count as a possibly written buffer: copied into memory
    of its own instead of used in place, and never kept packed by the CPU kernels."""
    typed = 0
    for c in constants:
        if c.type != "Unknown" or not c.original_fqn:
            continue
        if c.original_fqn in parameters:
            c.type = "Parameter"
        elif c.original_fqn in tensor_constants:
            c.type = "TensorConstant"
        else:
            continue
        typed += 1
    return typed


def encode_constants_table(constants: list[ConstantInfo], blob: bytes, device: str) -> str | None:
    """The metadata value for ``constants`` laid out in ``blob``, or None when
    the runtime must leave the weights to the library (see module docstring).
    Raises ValueError when the table and the blob disagree."""
    in_blob = [c for c in constants if not c.from_folded]
    if not in_blob:
        return None
    if any(c.opaque or c.layout != "strided" or c.device_type != device for c in in_blob):
        return None
    lines = []
    offset = 0
    for c in in_blob:
        end = offset + c.data_size
        if end > len(blob):
            raise ValueError(f"constant {c.name} ends at byte {end} of a {len(blob)}-byte weights blob")
        digest = hashlib.sha256(blob[offset:end]).hexdigest()
        fields = [c.name, c.original_fqn, c.dtype, c.type, str(c.offset), str(c.data_size), str(offset),
                  ",".join(map(str, c.shape)), ",".join(map(str, c.stride)), digest]
        if any("\t" in f or "\n" in f for f in fields):
            return None
        lines.append("\t".join(fields))
        offset = end
    if offset != len(blob):
        raise ValueError(f"the constants table covers {offset} bytes but the weights blob has {len(blob)}")
    return "\n".join(lines)
