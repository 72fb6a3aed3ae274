"""One check for the Python runtime's structured outputs (output_tree), shared by the export
and named-I/O suites: Kiln's rebuilt result against eager PyTorch's."""

from __future__ import annotations

import torch


def assert_same_structure(got, want, where: str = "output", rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """``got`` (rebuilt from Kiln's outputs) equals eager's ``want``: same containers (named
    ones, ModelOutput included, as dicts), equal constants of the same type, tensors of the
    same dtype and shape within rtol/atol."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{where}: {type(got).__name__} instead of a tensor"
        assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape), where
        torch.testing.assert_close(got, want.detach(), rtol=rtol, atol=atol, msg=where)
    elif isinstance(want, dict) or hasattr(want, "keys"):
        assert isinstance(got, dict), f"{where}: {type(got).__name__} instead of a dict"
        assert list(got) == list(want.keys()), where
        for k in want.keys():
            assert_same_structure(got[k], want[k], f"{where}.{k}", rtol, atol)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want), f"{where}: {type(got).__name__} instead of {type(want).__name__}"
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_structure(g, w, f"{where}.{i}", rtol, atol)
    else:
        assert got == want and type(got) is type(want), f"{where}: {got!r} != {want!r}"
