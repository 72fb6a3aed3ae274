"""Maps a call's arguments, by name and in the structure the model was exported with, to a
method's flat inputs.

A Kiln method takes the tensor leaves of the model's arguments, flattened in pytree order. The
exporter records the arguments' structure in the method's metadata (``input_tree``, JSON): the
positional and keyword arguments by name, the containers they were passed in, and the constants
export compiled in. :func:`flatten` turns a call into the method's inputs, the way the model
itself would have been called::

    from kiln.input_tree import flatten
    meta = module.method_meta("forward")
    inputs = flatten(meta.metadata["input_tree"], (), {"input_ids": ids, "attention_mask": mask})

``Module.forward`` and ``Module.execute`` (kiln.runtime) do this for every call. Needs no torch.

Tree format (version 1)::

    {"version": 1,
     "inputs": [names],                  # the method's inputs, in order: their paths
     "args":   [[name, NODE], ...],      # the positional arguments, in order
     "kwargs": [[name, NODE], ...]}      # the keyword arguments, in the order they were passed

where NODE is ``{"input": i}`` (the method's i-th input), ``{"constant": value}`` (compiled in
at export: None, a bool, int, float or str; ``"float": true`` marks an inf/nan written as text,
``"repr": true`` any other object, recorded as its repr), ``{"tuple": [NODE...]}``,
``{"list": [NODE...]}`` or ``{"dict": [[key, NODE]...]}``; containers of other types (a
namedtuple, a dataclass) add ``"type"``. An input's name is its path in the arguments: the
argument's name, then keys and positions joined by "." (``input_ids``,
``past_key_values.0.1``); a path that would read like an earlier one gets ``#<input index>``.

Calling rules, as for a Python function whose parameters are the recorded arguments: a
positional argument may be passed by position or by name, a keyword argument by name only; an
argument holding no tensor (only constants) may be left out; a constant passed must equal the
exported value, since it is compiled in. Lists and tuples are interchangeable; a dict must have
exactly the recorded keys. Anything else raises TypeError naming the method and the argument.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, Sequence

__all__ = ["flatten", "parse", "positional_tree"]


def parse(tree: str | dict) -> dict:
    """The parsed tree (``tree`` is the ``input_tree`` metadata string or its parsed form);
    ValueError for anything but a version 1 input tree that places each of its inputs once."""
    try:
        parsed = json.loads(tree) if isinstance(tree, str) else tree
    except ValueError as e:
        raise ValueError(f"not a Kiln input tree: {e}") from None
    if (not isinstance(parsed, dict) or parsed.get("version") != 1 or not isinstance(parsed.get("inputs"), list)
            or not isinstance(parsed.get("args"), list) or not isinstance(parsed.get("kwargs"), list)):
        raise ValueError("not a version 1 Kiln input tree")
    # Checked once here, so that a call never indexes past the inputs (the metadata of a
    # program is not trusted to be what the exporter wrote).
    placed: list[int] = []
    for entry in parsed["args"] + parsed["kwargs"]:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            raise ValueError(f"input tree argument {entry!r} is not [name, node]")
        _check_node(entry[1], placed, 0)
    if sorted(placed) != list(range(len(parsed["inputs"]))):
        raise ValueError(f"the input tree places inputs {sorted(placed)}, not each of its "
                         f"{len(parsed['inputs'])} inputs once")
    return parsed


def _check_node(node: Any, placed: list[int], depth: int) -> None:
    if not isinstance(node, dict) or depth > 64:
        raise ValueError(f"input tree node {node!r} is not a node")
    if "input" in node:
        if not isinstance(node["input"], int) or isinstance(node["input"], bool):
            raise ValueError(f"input tree node {node!r} is not a node")
        placed.append(node["input"])
    elif "constant" in node:
        pass
    elif isinstance(node.get("list", node.get("tuple")), list):
        for child in node.get("list", node.get("tuple")):
            _check_node(child, placed, depth + 1)
    elif isinstance(node.get("dict"), list):
        for item in node["dict"]:
            if not (isinstance(item, list) and len(item) == 2):
                raise ValueError(f"input tree dict item {item!r} is not [key, node]")
            _check_node(item[1], placed, depth + 1)
    else:
        raise ValueError(f"input tree node {node!r} is not a node")


def positional_tree(names: Sequence[str]) -> dict:
    """The tree of a method whose program records none (written before input trees were, or
    imported from a .pt2 package): each input a positional argument named as the input."""
    return {"version": 1, "inputs": list(names),
            "args": [[name, {"input": i}] for i, name in enumerate(names)], "kwargs": []}


def flatten(tree: str | dict, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None,
            method: str = "forward") -> list[Any]:
    """The method's inputs, in order, for a call with ``args`` and ``kwargs``. TypeError, naming
    ``method`` and the argument, when the call does not fit the recorded arguments."""
    parsed = parse(tree)
    kwargs = dict(kwargs or {})
    positional = [(str(name), node) for name, node in parsed["args"]]
    keyword = [(str(name), node) for name, node in parsed["kwargs"]]
    params = positional + keyword
    if len(args) > len(positional):
        hint = ""
        if keyword:
            hint = f"; {_names([n for n, _ in keyword])} were passed by keyword at export: pass them by name"
        raise TypeError(f"{method}() takes {len(positional)} positional argument(s) but {len(args)} were given"
                        f"{hint}")
    given: dict[str, Any] = {name: value for (name, _), value in zip(positional, args)}
    known = {name for name, _ in params}
    for name, value in kwargs.items():
        if name not in known:
            raise TypeError(f"{method}() got an unexpected keyword argument {name!r}; it takes "
                            f"{_names([n for n, _ in params]) or 'no arguments'}")
        if name in given:
            raise TypeError(f"{method}() got multiple values for argument {name!r}")
        given[name] = value

    flat: list[Any] = [_MISSING] * len(parsed.get("inputs", []))
    missing = []
    for name, node in params:
        if name in given:
            _fill(node, given[name], name, flat, method)
        elif _has_input(node):
            missing.append(name)
    if missing:
        raise TypeError(f"{method}() missing {len(missing)} required argument(s): {_names(missing)}")
    return flat


_MISSING = object()


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _has_input(node: dict) -> bool:
    if "input" in node:
        return True
    children = node.get("list", node.get("tuple", []))
    if "dict" in node:
        children = [child for _, child in node["dict"]]
    return any(_has_input(child) for child in children)


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "__dlpack__")


def _holds_tensors(value: Any) -> bool:
    """A container of tensors: never one input (a list of numbers is, as an array)."""
    if isinstance(value, Mapping):
        return True
    if isinstance(value, (list, tuple)):
        return any(_is_tensor(v) or _holds_tensors(v) for v in value)
    return False


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"a dict with keys {list(value)}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    return f"a {type(value).__name__}"


def _constant(node: dict) -> Any:
    value = node["constant"]
    return float(value) if node.get("float") else value


def _fill(node: dict, value: Any, path: str, flat: list, method: str) -> None:
    if "input" in node:
        if _holds_tensors(value):
            raise TypeError(f"{method}(): argument {path!r} is one tensor, but {_describe(value)} was given")
        flat[node["input"]] = value
        return
    if "constant" in node:
        expected = _constant(node)
        if node.get("repr"):
            same = repr(value) == expected
        elif isinstance(expected, float) and isinstance(value, (int, float)) and not isinstance(value, bool):
            same = value == expected or (math.isnan(expected) and math.isnan(value))
        else:
            same = type(value) is type(expected) and value == expected
        if not same:
            raise TypeError(f"{method}(): argument {path!r} was {expected!r} at export and is compiled into the "
                            f"method; leave it out or pass that value, not {value!r}")
        return
    if "list" in node or "tuple" in node:
        kind = "list" if "list" in node else "tuple"
        children = node[kind]
        if not isinstance(value, (list, tuple)) or len(value) != len(children):
            raise TypeError(f"{method}(): argument {path!r} must be a list or tuple of {len(children)} item(s), "
                            f"as at export, but {_describe(value)} was given")
        for i, (child, item) in enumerate(zip(children, value)):
            _fill(child, item, f"{path}.{i}", flat, method)
        return
    if "dict" in node:
        keys = [key for key, _ in node["dict"]]
        if isinstance(value, Mapping):
            get = value.__getitem__
            present = list(value)
        elif "type" in node and all(isinstance(k, str) and hasattr(value, k) for k in keys):
            get = lambda k: getattr(value, k)  # noqa: E731  (a namedtuple or dataclass passed as itself)
            present = keys
        else:
            raise TypeError(f"{method}(): argument {path!r} must be a dict with keys {keys}, as at export, "
                            f"but {_describe(value)} was given")
        missing = [k for k in keys if k not in present]
        extra = [k for k in present if k not in keys]
        if missing or extra:
            detail = "; ".join(part for part in (f"missing {missing}" if missing else "",
                                                 f"unexpected {extra}" if extra else "") if part)
            raise TypeError(f"{method}(): argument {path!r} must be a dict with keys {keys}, as at export ({detail})")
        for key, child in node["dict"]:
            _fill(child, get(key), f"{path}.{key}", flat, method)
        return
    raise ValueError(f"method {method!r}: unknown input tree node {sorted(node)} at {path!r}")
