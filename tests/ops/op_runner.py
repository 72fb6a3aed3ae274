"""Runs one op case through Kiln's shim and through ATen, in one input layout, and compares."""

from __future__ import annotations

import pytest
import torch

from compare import assert_same
from op_case import Case
from shim_caller import KilnError, ShimLibrary, aten_op, call_shim, declarations, schema_names

LAYOUTS = ("contiguous", "strided", "offset", "strided_out")


def _strided_copy(t: torch.Tensor) -> torch.Tensor:
    """Same values, every dimension of size > 1 strided (not contiguous)."""
    if t.dim() == 0:
        return t.clone()
    base = torch.empty(tuple(t.shape) + (2,), dtype=t.dtype, device=t.device)
    view = base[..., 1]
    view.copy_(t)
    return view


def _offset_copy(t: torch.Tensor) -> torch.Tensor:
    """Same values and contiguous strides, starting 3 elements into its storage."""
    flat = torch.empty(t.numel() + 3, dtype=t.dtype, device=t.device)
    view = flat[3:].view(t.shape)
    view.copy_(t)
    return view


def _same_layout_clone(t: torch.Tensor) -> torch.Tensor:
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out


def _poison(t: torch.Tensor) -> None:
    if t.dtype.is_floating_point or t.dtype.is_complex:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def _map(value, fn):
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    return value


def written_args(op) -> list[str]:
    """Schema arguments the op writes (out= and in-place self)."""
    return [a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write]


def applicable(case: Case, layout: str, op) -> bool:
    if layout == "contiguous":
        return True
    if not case.layouts or case.error:
        return False
    if layout == "strided_out":
        return any(isinstance(case.kwargs.get(n), torch.Tensor) and case.kwargs[n].dim() > 0
                   for n in written_args(op))
    return any(isinstance(v, torch.Tensor) and v.numel() > 1 for v in case.kwargs.values()) or any(
        isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v) for v in case.kwargs.values())


def _cpu(value):
    """Host copies with the same sizes and strides, so the checks see on the host the layouts the
    device produced (Tensor.cpu would make a non-dense view dense)."""
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    return _map(value, lambda t: _to_device(t, "cpu"))


def _to_device(t: torch.Tensor, device: str) -> torch.Tensor:
    """`t` on `device` with the same sizes, strides and storage offset (Tensor.to would make a
    non-dense view dense, and cases test odd layouts on purpose)."""
    if t.device.type == device:
        return t
    storage = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
    moved = storage.to(device).view(t.dtype) if t.element_size() else storage.to(device)
    return moved.as_strided(t.shape, t.stride(), t.storage_offset())


def check_alias(kiln: torch.Tensor, kiln_input: torch.Tensor, aten: torch.Tensor, aten_input: torch.Tensor) -> None:
    """Kiln's result shares its input's memory exactly where ATen's does."""
    base = kiln_input.untyped_storage().data_ptr()
    inside = base <= kiln.kiln_data_ptr < base + max(kiln_input.untyped_storage().nbytes(), 1)
    if aten.numel() == 0 or aten_input.untyped_storage().nbytes() == 0:
        return  # an empty tensor's address means nothing (ATen's may be null)
    if aten.untyped_storage().data_ptr() == aten_input.untyped_storage().data_ptr():
        want = aten.data_ptr() - aten_input.data_ptr()
        got = kiln.kiln_data_ptr - kiln_input.data_ptr()
        assert got == want, f"result is not the view ATen returns: starts {got} bytes from the input, ATen {want}"
    else:
        assert not inside, "result shares the input's memory where ATen's is a copy"


def run_case(lib: ShimLibrary, function: str, device: str, case: Case, layout: str) -> None:
    op = aten_op(function, device)
    written = set(written_args(op))
    kwargs = {}
    # Cases are written once for every device: their tensors, and a factory op's device
    # argument, move to the device under test (a CUDA model's program names its CUDA device).
    case_kwargs = {name: _map(value, lambda t: _to_device(t, device)) for name, value in case.kwargs.items()}
    if case_kwargs.get("device") == "cpu":
        case_kwargs["device"] = device
    for name, value in case_kwargs.items():
        if name in written:
            fn = _strided_copy if layout == "strided_out" else _same_layout_clone
        elif layout == "strided":
            fn = _strided_copy
        elif layout == "offset":
            fn = _offset_copy
        else:
            fn = _same_layout_clone
        kwargs[name] = _map(value, fn)
    ref_kwargs = {name: _map(value, _same_layout_clone) for name, value in kwargs.items()}
    for name in written:
        if name in kwargs and name != "self":
            _map(kwargs[name], _poison)

    if case.error is not None and case.without_readback is not None and device != "cpu":
        got = call_shim(lib, function, device, kwargs)
        case.without_readback(kwargs=_cpu(kwargs), got=_cpu(got))
        return
    if case.error is not None:
        with pytest.raises(KilnError) as info:
            call_shim(lib, function, device, kwargs)
        assert case.error in str(info.value), f"error message {str(info.value)!r} lacks {case.error!r}"
        return

    # A case may serve several overloads (rand and rand_generator): ATen gets the arguments its schema has.
    names = {a.name for a in op._schema.arguments}
    renamed = schema_names(function, device)  # cases name arguments as the shim does
    aten_kwargs = {renamed.get(k, k): v for k, v in ref_kwargs.items() if renamed.get(k, k) in names}
    try:
        expected = case.reference(**aten_kwargs) if case.reference else op(**aten_kwargs)
    except (RuntimeError, NotImplementedError) as e:
        if device == "cpu":
            raise
        # ATen's kernel for this device refuses inputs its CPU kernel takes (a dtype, an alignment):
        # there is no reference to compare with, which is not a pass.
        pytest.skip(f"ATen's {device} op refuses these inputs: {str(e).splitlines()[0]}")
    after: dict = {}
    got = call_shim(lib, function, device, kwargs, after=after)
    has_rets = any(p.name.startswith("ret") for p in declarations(device)[function])
    if case.self_after:
        got, expected, has_rets = [after["self"]], ref_kwargs["self"], True
        written.discard("self")
    if case.alias is not None:
        result = expected[0] if isinstance(expected, (tuple, list)) else expected
        check_alias(got[0], kwargs[case.alias], result, ref_kwargs[case.alias])
    if case.check is not None:
        case.check(kwargs=_cpu(kwargs), ref_kwargs=_cpu(ref_kwargs), got=_cpu(got), expected=_cpu(expected))
        return
    if has_rets:
        expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        assert len(got) == len(expected), f"{len(got)} results, ATen {len(expected)}"
        for i, (k, r) in enumerate(zip(got, expected)):
            if isinstance(r, torch.Tensor):
                assert_same(k, r, f"result {i}", case.rtol, case.atol, case.compare_strides)
    for name in written:
        if name in kwargs:
            assert_same(kwargs[name], ref_kwargs[name], f"argument {name!r}", case.rtol, case.atol, strides=False)
