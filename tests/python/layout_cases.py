"""Models and input layouts for the "any input layout" checks, shared by
tests/python/test_input_layouts.py (CPU) and tests/gpu/test_layouts.py (CUDA).

Every layout helper returns (view, logical): a view of the given kind holding the logical
values, built over memory whose other elements are poison (NaN, or a huge integer), so that a
kernel reading the view in another layout than its own reads poison and shows it.
"""

from __future__ import annotations

import numpy as np
import torch

COLS, OUT = 16, 5
MAX_ROWS = 1024

LAYOUTS = ["contiguous", "transposed", "fortran", "every_other_column", "every_other_row", "broadcast",
           "row_offset", "column_offset", "misaligned"]

FLOAT_TYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16,
               "float16": torch.float16}
# Max |kiln - eager| / max |eager|.
TOLERANCE = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2e-2, "float16": 2e-3, "int64": 0.0}


class Mixed(torch.nn.Module):
    """A matmul (a fallback kernel), elementwise kernels over both inputs and a reduction."""

    def forward(self, a, b):
        return (a @ b).relu() * 2 + 1, torch.tanh(a) * 2 + b.sum(dim=1), a.sum(dim=0)


class IntMixed(torch.nn.Module):
    """Mixed without the matmul, for integer dtypes."""

    def forward(self, a, b):
        return (a * 3 - 1).sum(dim=1), a * 2 + b.sum(dim=1), a.sum(dim=0)


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(x).relu(), x * 2 + 1


class SingleImageConvs(torch.nn.Module):
    """One color image (channels_last at export) and one gray image (row-major), batch 1:
    inputs with size-1 dimensions, whose strides a caller's view may set to anything."""

    def __init__(self):
        super().__init__()
        self.color = torch.nn.Conv2d(3, 2, 1)
        self.gray = torch.nn.Conv2d(1, 2, 3, padding=1)

    def forward(self, image, gray):
        return self.color(image) + image[:, :2] * 2, self.gray(gray) + gray * 3


class Accumulate(torch.nn.Module):
    """Adds ``x`` into ``cache`` in place (metadata mutated_inputs: cache), as a KV cache update."""

    def forward(self, cache, x):
        cache.add_(x)
        return ((cache * 2).sum(dim=1),)


def rows_dim():
    return torch.export.Dim("rows", min=1, max=MAX_ROWS)


def export_mixed(dtype: str, device: str = "cpu", transposed_b: bool = False):
    """Mixed (IntMixed for int64) over a: [rows, COLS] (rows dynamic), b: [COLS, OUT]; with
    ``transposed_b`` the example b is a transposed view, so the method is compiled for a
    column-major b (dim order (1, 0))."""
    if dtype == "int64":
        a = torch.randint(-50, 50, (8, COLS), device=device)
        b = torch.randint(-50, 50, (COLS, OUT), device=device)
        model = IntMixed()
    else:
        a = torch.randn(8, COLS, dtype=FLOAT_TYPES[dtype], device=device)
        b = torch.randn(COLS, OUT, dtype=FLOAT_TYPES[dtype], device=device)
        model = Mixed()
    if transposed_b:
        b = b.t().contiguous().t()
    return torch.export.export(model, (a, b), dynamic_shapes=({0: rows_dim()}, None))


def model_for(dtype: str) -> torch.nn.Module:
    return IntMixed() if dtype == "int64" else Mixed()


def poison(dtype: torch.dtype) -> float | int:
    return float("nan") if dtype.is_floating_point else 2**62


def torch_layout(x: torch.Tensor, layout: str, device: str | torch.device = "cpu"):
    """(a view of ``layout`` on ``device`` holding x's values over poisoned memory, the logical values)."""
    rows, cols = x.shape
    fill = poison(x.dtype)
    x = x.to(device)

    def full(*shape):
        return torch.full(shape, fill, dtype=x.dtype, device=device)

    if layout == "contiguous":
        return x.clone(), x
    if layout in ("transposed", "fortran"):
        base = full(cols, rows)
        base.copy_(x.t())
        return base.t(), x
    if layout == "every_other_column":
        base = full(rows, 2 * cols)
        base[:, ::2] = x
        return base[:, ::2], x
    if layout == "every_other_row":
        base = full(2 * rows, cols)
        base[::2] = x
        return base[::2], x
    if layout == "broadcast":  # stride 0: every row is x's first row
        row = x[:1].clone()
        return row.expand(rows, cols), row.expand(rows, cols).clone()
    if layout == "row_offset":
        base = full(rows + 1, cols)
        base[1:] = x
        return base[1:], x
    if layout == "column_offset":
        base = full(rows, cols + 1)
        base[:, 1:] = x
        return base[:, 1:], x
    if layout == "misaligned":  # dense, one element past an aligned allocation
        base = full(rows * cols + 1)
        view = base[1:].view(rows, cols)
        view.copy_(x)
        return view, x
    raise AssertionError(layout)


def numpy_layout(x: np.ndarray, layout: str):
    """torch_layout's numpy twin (host memory only)."""
    rows, cols = x.shape
    fill = np.nan if np.issubdtype(x.dtype, np.floating) else 2**62

    def full(*shape):
        return np.full(shape, fill, dtype=x.dtype)

    if layout == "contiguous":
        return x.copy(), x
    if layout == "transposed":
        base = full(cols, rows)
        base[...] = x.T
        return base.T, x
    if layout == "fortran":
        return np.asfortranarray(x), x
    if layout == "every_other_column":
        base = full(rows, 2 * cols)
        base[:, ::2] = x
        return base[:, ::2], x
    if layout == "every_other_row":
        base = full(2 * rows, cols)
        base[::2] = x
        return base[::2], x
    if layout == "broadcast":
        # Read-only: the wrapper copies it (unversioned DLPack cannot say read-only), and
        # numpy's copy of a broadcast keeps a column-major layout, which Kiln lays out again.
        view = np.broadcast_to(x[0], (rows, cols))
        return view, np.ascontiguousarray(view)
    if layout == "row_offset":
        base = full(rows + 1, cols)
        base[1:] = x
        return base[1:], x
    if layout == "column_offset":
        base = full(rows, cols + 1)
        base[:, 1:] = x
        return base[:, 1:], x
    if layout == "misaligned":
        base = full(rows * cols + 1)
        view = base[1:].reshape(rows, cols)
        view[...] = x
        return view, x
    raise AssertionError(layout)


def random_tensor(shape, dtype: str, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == "int64":
        return torch.randint(-1000, 1000, shape, generator=g)
    return torch.randn(shape, generator=g).to(FLOAT_TYPES[dtype])


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want| / max |want| in float64 (inf when shapes or dtypes differ or got has NaN)."""
    if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
        return float("inf")
    g, w = got.detach().cpu().double(), want.detach().cpu().double()
    if torch.isnan(g).any():
        return float("inf")
    if g.numel() == 0:
        return 0.0
    return ((g - w).abs().max() / w.abs().max().clamp_min(1e-6)).item()


def eager(model, *inputs):
    with torch.no_grad():
        out = model(*inputs)
    return out if isinstance(out, tuple) else (out,)
