"""The container nodes shared by the input and output structure records (``input_tree``,
``output_tree``; docs/program-format.md): a walk of a pytree spec first yields nodes whose
leaves are ``{"leaf": i}`` placeholders, which :func:`fill_leaves` then replaces."""

from __future__ import annotations

from typing import Callable


def fill_leaves(node: dict, leaf: Callable[[int], dict]) -> dict:
    """``node`` with every ``{"leaf": i}`` replaced by ``leaf(i)``; list, tuple and dict
    containers are rebuilt around their filled children, other keys (``type``) kept."""
    if "leaf" in node:
        return leaf(node["leaf"])
    out = dict(node)
    for k in ("list", "tuple"):
        if k in out:
            out[k] = [fill_leaves(c, leaf) for c in out[k]]
    if "dict" in out:
        out["dict"] = [[key, fill_leaves(c, leaf)] for key, c in out["dict"]]
    return out
