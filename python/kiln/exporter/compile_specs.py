"""Reading compile specs: the string-keyed options a user passes to kiln.export.

Specs travel into the program file as strings, and users write booleans every way a
command line or a config file does, so one reader accepts them all and names the bad
value when it is none of them.
"""

from __future__ import annotations

import difflib
import warnings
from typing import Any, Iterable

__all__ = ["UnreadCompileSpecWarning", "spec_bool", "warn_unread_specs"]


class UnreadCompileSpecWarning(UserWarning):
    """A compile spec that the chosen backend does not read (a typo, or an option of
    another backend): it is recorded in the program and has no other effect."""


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


def warn_unread_specs(specs: dict[str, Any], known: Iterable[str], backend: str) -> list[str]:
    """Warns (UnreadCompileSpecWarning) once per spec key the backend does not read,
    suggesting the closest key it does; returns those keys. Specs stay free-form (they
    are also a record in the program), so this never raises unless warnings are made
    errors."""
    known = sorted(set(known))
    unread = [k for k in specs if k not in known]
    for key in unread:
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f" (it reads: {', '.join(known) or 'none'})"
        warnings.warn(
            f"compile spec {key!r} is not read by Kiln's {backend} backend and is only recorded in the "
            f"program{hint}",
            UnreadCompileSpecWarning,
            stacklevel=3,
        )
    return unread
