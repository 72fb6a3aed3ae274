"""Which of torch's fallback functions Kiln implements on each device.

The universe is torch's own generated headers (c_shim_cpu.h, c_shim_cuda.h) and
its hand-written c/shim_cpu.h (oneDNN, MKL, int4 and collective ops);
Kiln's lists are src/shims/<device>/shims.txt; the ops left out on purpose,
with the reason, are in src/shims/ops_left_out.txt, and the ops not implemented
yet that no exported program calls today, with the reason, in
src/shims/ops_not_yet.txt.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from shim_caller import declarations, header_path

ROOT = Path(__file__).resolve().parents[2]
DEVICES = ("cpu", "cuda")


def header_functions(device: str) -> list[str]:
    return sorted(f for f in declarations(device) if f.startswith(f"aoti_torch_{device}_"))


def suffix(function: str, device: str) -> str:
    return function[len(f"aoti_torch_{device}_"):]


@functools.cache
def runtime_functions() -> frozenset[str]:
    """Names torch's c/shim.h declares (guards, allocator, tensor ABI): not fallback ops."""
    text = (header_path("cpu").parents[1] / "c" / "shim.h").read_text()
    return frozenset(re.findall(r"\b(aoti_torch_\w+)\s*\(", text))


def kiln_functions(device: str) -> set[str]:
    """The fallback ops Kiln defines for `device`: src/shims/<device>/shims.txt, and the
    device-neutral ones of src/shims/common/shims.txt named for it (views); runtime functions
    excluded."""
    names = set()
    for path in (ROOT / "src/shims" / device / "shims.txt", ROOT / "src/shims/common/shims.txt"):
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#") or line in runtime_functions():
                continue
            if path.parent.name == device or line.startswith(f"aoti_torch_{device}_"):
                names.add(line)
    return names


def host_staged() -> set[str]:
    """CUDA ops that run the CPU op on host copies of their tensors (src/shims/cuda/host_staged_ops.inc)."""
    text = (ROOT / "src/shims/cuda/host_staged_ops.inc").read_text()
    return {f"aoti_torch_cuda_{m}" for m in re.findall(r"^KILN_HOST_STAGED\((\w+),", text, re.M)}


def implemented(device: str) -> list[str]:
    """Header functions Kiln defines on `device`."""
    return sorted(set(header_functions(device)) & kiln_functions(device))


def _reasons(path: Path) -> dict[str, str]:
    """`<shim suffix>: <reason>` lines of `path` ('#' starts a comment line)."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(":")
        out[name.strip()] = reason.strip()
    return out


def left_out() -> dict[str, str]:
    """Shim suffix -> why Kiln does not implement it (every device)."""
    return _reasons(ROOT / "src/shims/ops_left_out.txt")


def not_yet() -> dict[str, str]:
    """Shim suffix -> why no program Kiln exports calls it yet (it is not implemented)."""
    return _reasons(ROOT / "src/shims/ops_not_yet.txt")


def is_backward(name: str) -> bool:
    return bool(re.search(r"backward", name))
