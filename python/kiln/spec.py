"""The input/output contract of a method: ``TensorSpec`` and its ``DimSpec`` dimensions.

One definition for the whole package: the exporter builds them, the program writer
(kiln.program) stores them, and both readers return them (kiln.program.load from the file,
kiln.runtime.Module.method_meta through the C API). Needs only the standard library, so it
imports with neither torch nor numpy.

Specs are immutable values (compare them with ==, hash them); sequences given as lists are
kept as tuples. Build a changed copy with ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

__all__ = ["DimSpec", "TensorSpec"]


@dataclasses.dataclass(frozen=True)
class DimSpec:
    """One dimension: static (``size``) or dynamic (``size`` is the example size, bounds
    ``[min, max]`` with max -1 for unbounded, ``name`` the symbol, e.g. "s0" or "2*s0")."""

    size: int
    dynamic: bool = False
    min: int = 0
    max: int = -1
    name: str = ""


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """An input or output. ``dtype`` is a Kiln dtype name ("float32", "bfloat16", "int64", ...).

    ``dim_order`` (inputs): the layout the compiled code reads the input in, as its dimensions
    from outermost to innermost of a dense tensor (``(0, 2, 3, 1)``: channels_last); empty:
    row-major. The runtime copies an input with other strides into it before running.
    """

    name: str
    dtype: str
    dims: tuple[DimSpec, ...] = ()
    dim_order: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        # Frozen: fields are set through object.__setattr__, once, here.
        object.__setattr__(self, "dims", _tuple(self.dims))
        object.__setattr__(self, "dim_order", _tuple(self.dim_order))

    @property
    def shape(self) -> tuple[int | None, ...]:
        """Sizes, with None for dynamic dimensions."""
        return tuple(None if d.dynamic else d.size for d in self.dims)


def _tuple(values: Iterable) -> tuple:
    return values if isinstance(values, tuple) else tuple(values)
