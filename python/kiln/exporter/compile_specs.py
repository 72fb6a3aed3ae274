"""Reading compile specs: the string-keyed options a user passes to kiln.export.

Specs travel into the program file as strings, and users write booleans every way a
command line or a config file does, so one reader accepts them all and names the bad
value when it is none of them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["spec_bool"]


def spec_bool(specs: dict[str, Any], key: str, default: bool) -> bool:
    """Reads a boolean compile spec given as bool, int or "ON"/"OFF"/"true"/"false"/"1"/"0"."""
    if key not in specs:
        return default
    v = specs[key]
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v != 0
    s = str(v).strip().lower()
    if s in ("1", "on", "true", "yes"):
        return True
    if s in ("0", "off", "false", "no"):
        return False
    raise ValueError(f"compile spec {key!r}: {v!r} is not a boolean (use ON/OFF, true/false or 1/0)")
