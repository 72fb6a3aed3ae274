"""Every CUDA fallback op Kiln implements, against ATen on the same inputs: the cases of
tests/ops (written once for every device) through libkiln_cuda.so's functions, with the
signatures of torch's c_shim_cuda.h."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))

import gpu_support  # noqa: E402
from op_case import CASES  # noqa: E402
from op_inventory import implemented, suffix  # noqa: E402
from op_runner import run_case  # noqa: E402
from op_suite import cases_of, params  # noqa: E402


DEVICE = "cuda"
FUNCTIONS = implemented(DEVICE)


@pytest.fixture(scope="module")
def lib():
    return gpu_support.cuda_shim_library()


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_cuda_op_has_cases(function):
    assert suffix(function, DEVICE) in CASES, f"{function} has no cases in tests/ops"


@pytest.mark.parametrize("function,index,layout", list(params(DEVICE)))
def test_cuda_op_matches_aten(lib, function, index, layout):
    # Cases are built on the host; the runner moves their tensors to the device.
    case = cases_of(suffix(function, DEVICE), "cpu")[index]
    run_case(lib, function, DEVICE, case, layout)


def test_staged_op_refuses_to_be_recorded_in_a_cuda_graph(lib):
    """A call that runs through the host cannot be replayed from a graph: while Kiln's current stream
    captures, it fails with a message saying so, before queuing anything on the stream. Every op has
    native code; a complex cumsum is one of the inputs its kernel does not take yet (cumsum.cpp)."""
    import ctypes

    from shim_caller import KilnError, call_shim

    function = "aoti_torch_cuda_cumsum"
    args = dict(self=torch.randn(4, 3, dtype=torch.complex64, device=DEVICE), dim=0, dtype=None)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    guard = ctypes.c_void_p()
    with torch.cuda.graph(graph, stream=stream, capture_error_mode="relaxed"):
        lib.check(lib.ops.aoti_torch_create_cuda_stream_guard(
            ctypes.c_void_p(stream.cuda_stream), ctypes.c_int32(0), ctypes.byref(guard)),
            "create_cuda_stream_guard")
        try:
            with pytest.raises(KilnError) as info:
                call_shim(lib, function, DEVICE, args)
        finally:
            lib.ops.aoti_torch_delete_cuda_stream_guard(guard)
    assert f"{function} runs through the host on CUDA and cannot be recorded in a CUDA graph" in str(info.value)


@pytest.mark.parametrize("function,kwargs,message", [
    ("aoti_torch_cuda_masked_select", lambda: dict(self=torch.randn(3, 4, device="cuda"),
                                                   mask=torch.rand(3, 4, device="cuda") > 0.5),
     "masked_select's result size depends on the data, so it cannot be recorded in a CUDA graph"),
    ("aoti_torch_cuda_repeat_interleave_Tensor",
     lambda: dict(repeats=torch.tensor([2, 0, 3], device="cuda"), output_size=None),
     "cannot be recorded in a CUDA graph (pass output_size)"),
])
def test_data_sized_op_refuses_to_be_recorded_in_a_cuda_graph(lib, function, kwargs, message):
    """A native op whose result size must be read back from the device fails while Kiln's current stream
    captures, with a message saying so, before queuing anything on the stream."""
    import ctypes

    from shim_caller import KilnError, call_shim

    args = kwargs()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    guard = ctypes.c_void_p()
    with torch.cuda.graph(graph, stream=stream, capture_error_mode="relaxed"):
        lib.check(lib.ops.aoti_torch_create_cuda_stream_guard(
            ctypes.c_void_p(stream.cuda_stream), ctypes.c_int32(0), ctypes.byref(guard)),
            "create_cuda_stream_guard")
        try:
            with pytest.raises(KilnError) as info:
                call_shim(lib, function, DEVICE, args)
        finally:
            lib.ops.aoti_torch_delete_cuda_stream_guard(guard)
    assert message in str(info.value)
