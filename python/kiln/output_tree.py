"""Rebuilds a method's flat outputs into the structure the model returned.

A Kiln method returns the tensor leaves of the model's output, flattened in pytree order. The
exporter records the structure in the method's metadata (``output_tree``, JSON), with the None
and constant leaves the library does not return::

    from kiln.output_tree import rebuild
    meta = module.method_meta("forward")
    outs = module.forward(input_ids)
    result = rebuild(meta.metadata["output_tree"], outs)   # {"logits": ..., "state": [...]}

``Module.forward(..., structure="tree")`` (kiln.runtime) returns this directly.
Tuples and lists come back as tuples and lists; named containers (dicts, namedtuples,
dataclasses, Hugging Face ModelOutput) as dicts keyed by their field names. Needs no torch.

Tree format (version 1): ``{"version": 1, "outputs": [names], "tree": NODE}`` where NODE is
``{"output": i}`` (the i-th returned tensor), ``{"constant": value}`` (``"float": true`` marks
an inf/nan written as text), ``{"tuple": [NODE...]}``, ``{"list": [NODE...]}`` or
``{"dict": [[key, NODE]...]}``; containers of other types add ``"type"`` (informational).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

__all__ = ["rebuild"]


def rebuild(tree: str | dict, outputs: Sequence[Any]) -> Any:
    """The model's output structure with ``outputs`` (what the method returned) at its tensor
    leaves. ``tree`` is the ``output_tree`` metadata string or its parsed form. ValueError if
    the outputs do not fit the tree."""
    parsed = json.loads(tree) if isinstance(tree, str) else tree
    if not isinstance(parsed, dict) or parsed.get("version") != 1 or "tree" not in parsed:
        raise ValueError("not a version 1 Kiln output tree")
    expected = len(parsed.get("outputs", []))
    if expected and expected != len(outputs):
        raise ValueError(f"the output tree has {expected} tensor outputs but {len(outputs)} were given")
    return _build(parsed["tree"], outputs)


def _build(node: dict, outputs: Sequence[Any]) -> Any:
    if "output" in node:
        i = node["output"]
        if not 0 <= i < len(outputs):
            raise ValueError(f"the output tree refers to output {i} but {len(outputs)} were given")
        return outputs[i]
    if "constant" in node:
        return float(node["constant"]) if node.get("float") else node["constant"]
    if "dict" in node:
        return {key: _build(child, outputs) for key, child in node["dict"]}
    if "list" in node:
        return [_build(child, outputs) for child in node["list"]]
    if "tuple" in node:
        return tuple(_build(child, outputs) for child in node["tuple"])
    raise ValueError(f"unknown output tree node {sorted(node)}")
