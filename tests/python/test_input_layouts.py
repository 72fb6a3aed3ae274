"""Inputs of any layout give the right answer, or a named error, on the CPU.

AOTInductor compiles each kernel for the strides of the example input and never looks at a
caller's strides; Kiln records that layout per input (TensorSpec.dim_order) and copies every
input in another layout into it before running. Checked here with the real AOTInductor:

  * one program, exported once for the module: the same two-input model (a matmul, elementwise
    ops and a reduction over a dim; dynamic rows) in float32, float64 (whose example ``b`` is a
    transposed view, so the method is compiled for column-major ``b``), bfloat16 and int64
    (without the matmul), a convolution exported with a channels_last example, and a method
    that adds into its first input in place (a KV cache in miniature);
  * numpy and torch inputs in every layout (transposed and Fortran-order views, every other
    column or row, broadcast with stride 0, offset views, contiguous), against eager PyTorch
    on the same logical values. The memory around each view holds poison (NaN, or a huge
    integer), so an element read from the wrong place shows;
  * a (1024, 16) stride-0 view of 64 bytes made through the C API, which a kernel reading it
    densely would read 64 KiB past;
  * a .pt2 package compiled for a channels_last input (the importer reads the layout from the
    wrapper's stride checks).
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import kiln
from kiln import runtime
from kiln.program import load as load_program
from kiln.runtime import KilnError, Module
from layout_cases import (COLS, LAYOUTS, MAX_ROWS, OUT, TOLERANCE, Accumulate, Conv, Mixed, SingleImageConvs, eager,
                          export_mixed, model_for, numpy_layout, random_tensor, relative_error, torch_layout)

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("KILN_CLI", str(REPO / "build" / "kiln"))

ROWS = 7  # the export example has 8: the runs use other sizes of the dynamic dim


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    torch.manual_seed(0)
    methods = {dtype: export_mixed(dtype, transposed_b=dtype == "float64")
               for dtype in ("float32", "float64", "bfloat16", "int64")}
    conv = Conv().eval()
    image = torch.randn(2, 3, 8, 8).contiguous(memory_format=torch.channels_last)
    methods["conv"] = torch.export.export(conv, (image,))
    methods["accumulate"] = torch.export.export(Accumulate(), (torch.zeros(4, 6), torch.zeros(4, 6)))
    single = SingleImageConvs().eval()
    methods["single"] = torch.export.export(
        single, (torch.randn(1, 3, 4, 5).contiguous(memory_format=torch.channels_last), torch.randn(1, 1, 4, 5)))
    path = tmp_path_factory.mktemp("layouts") / "layouts.kiln"
    kiln.export(methods, backend="cpu", verbose=False).save(path)
    module = Module(path)
    module.load()
    module.single = single  # the eager model of method "single"
    return path, module, conv


def assert_close(got, want: torch.Tensor, rtol: float, what: str) -> None:
    got = got if isinstance(got, torch.Tensor) else torch.as_tensor(got)
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if rtol == 0:
        assert torch.equal(got, want), f"{what}: values differ"
        return
    err = relative_error(got, want)
    assert err <= rtol, f"{what}: relative error {err:.3g} > {rtol} (inf: NaN, a poisoned element was read)"


CASES = [(dtype, lib, layout) for dtype in ("float32", "float64", "int64") for lib in ("numpy", "torch")
         for layout in LAYOUTS] + [("bfloat16", "torch", layout) for layout in LAYOUTS]


@pytest.mark.parametrize("dtype,lib,layout", CASES, ids=["-".join(c) for c in CASES])
def test_every_layout_matcheseager(program, dtype, lib, layout):
    _, module, _ = program
    seed = 100 * CASES.index((dtype, lib, layout))
    a, b = random_tensor((ROWS, COLS), dtype, seed), random_tensor((COLS, OUT), dtype, seed + 1)
    if lib == "numpy":
        (va, la), (vb, lb) = numpy_layout(a.numpy(), layout), numpy_layout(b.numpy(), layout)
        got = module.execute(dtype, [va, vb], output="torch")
        la, lb = torch.from_numpy(np.ascontiguousarray(la)), torch.from_numpy(np.ascontiguousarray(lb))
    else:
        (va, la), (vb, lb) = torch_layout(a, layout), torch_layout(b, layout)
        got = module.execute(dtype, [va, vb], output="torch")
    want = eager(model_for(dtype), la, lb)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, TOLERANCE[dtype], f"{dtype} {lib} {layout} output {i}")


def test_the_program_records_each_inputs_compiled_layout(program):
    path, module, _ = program
    meta = {name: module.method_meta(name) for name in module.method_names()}
    assert meta["conv"].inputs[0].dim_order == (0, 2, 3, 1)  # channels_last example
    assert meta["float64"].inputs[1].dim_order == (1, 0)     # transposed example
    assert meta["float64"].inputs[0].dim_order == ()
    assert meta["float32"].inputs[0].dim_order == meta["float32"].inputs[1].dim_order == ()
    # The same through the pure-Python reader and the CLI.
    methods = {m.name: m for m in load_program(path).methods}
    assert methods["conv"].inputs[0].dim_order == (0, 2, 3, 1)
    assert methods["float64"].inputs[1].dim_order == (1, 0)
    assert methods["float32"].inputs[0].dim_order == ()
    text = subprocess.run([CLI, "inspect", str(path)], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert "dim order (0, 2, 3, 1)" in text.stdout and "dim order (1, 0)" in text.stdout
    js = subprocess.run([CLI, "inspect", str(path), "--json"], capture_output=True, text=True, timeout=120)
    assert js.returncode == 0, js.stderr
    specs = {m["name"]: m for m in json.loads(js.stdout)["methods"]}
    assert specs["conv"]["inputs"][0]["dim_order"] == [0, 2, 3, 1]
    assert "dim_order" not in specs["float32"]["inputs"][0]


def test_channels_last_export_runs_inputs_of_either_layout(program):
    _, module, conv = program
    x = random_tensor((2, 3, 8, 8), "float32", 40)
    want = eager(conv, x)
    sliced = torch.full((2, 3, 8, 16), float("nan"))
    sliced[..., ::2] = x
    inputs = {
        "contiguous": x.contiguous(),
        "channels_last": x.contiguous(memory_format=torch.channels_last),
        "sliced": sliced[..., ::2],
        "numpy": x.numpy(),
        "numpy_channels_last": x.permute(0, 2, 3, 1).contiguous().numpy().transpose(0, 3, 1, 2),
    }
    for what, value in inputs.items():
        got = module.execute("conv", [value], output="torch")
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, 1e-5, f"conv {what} output {i}")


def test_size_one_dimensions_reach_the_kernels_with_the_compiled_strides(program):
    """Views whose only difference from the compiled layout is the stride of a size-1
    dimension need no copy, but the kernels may read that stride too (a CPU convolution
    picks its memory format from it): they get the compiled strides. Before, an HWC image
    permuted to CHW (the usual way a single image reaches a channels_last model) and a gray
    NHWC batch permuted to NCHW gave wrong answers with no error."""
    _, module, _ = program
    single = module.single
    image = random_tensor((1, 3, 4, 5), "float32", 60)
    gray = random_tensor((1, 1, 4, 5), "float32", 61)
    want = eager(single, image, gray)
    hwc = image[0].permute(1, 2, 0).contiguous()  # (4, 5, 3)
    cases = {
        "torch permuted HWC": (hwc.permute(2, 0, 1).unsqueeze(0), gray),               # strides (3, 1, 15, 3)
        "numpy transposed HWC": (hwc.numpy().transpose(2, 0, 1)[None], gray.numpy()),  # strides (0, 1, 15, 3)
        "gray from NHWC": (image, torch.empty_strided((1, 1, 4, 5), (20, 1, 5, 1)).copy_(gray)),
        "gray batch stride 7": (image, torch.empty_strided((1, 1, 4, 5), (7, 20, 5, 1)).copy_(gray)),
    }
    for what, (x, g) in cases.items():
        got = module.execute("single", [x, g], output="torch")
        for i, (o, w) in enumerate(zip(got, want)):
            assert_close(o, w, 1e-5, f"{what} output {i}")


def test_input_written_in_place_works_in_its_layout_and_is_refused_in_another(program):
    _, module, _ = program
    assert module.method_meta("accumulate").metadata.get("mutated_inputs") == "cache"
    x = random_tensor((4, 6), "float32", 50).numpy()
    start = random_tensor((4, 6), "float32", 51).numpy()
    # A row-offset view is dense: passed as it is, so the writes land in the caller's memory.
    base = np.full((5, 6), -7.0, dtype=np.float32)
    base[1:] = start
    cache = base[1:]
    (got,) = module.execute("accumulate", [cache, x])
    np.testing.assert_allclose(cache, start + x, rtol=1e-6)
    np.testing.assert_allclose(got, ((start + x) * 2).sum(axis=1), rtol=1e-5)
    assert (base[0] == -7.0).all()
    # Transposed, a copy would take the writes: refused, naming the input, the strides and why.
    column_major = np.asfortranarray(start)
    with pytest.raises(KilnError) as info:
        module.execute("accumulate", [column_major, x])
    assert info.value.status == "InvalidArgument"
    message = info.value.message
    assert "('cache')" in message and "strides [1, 4]" in message and "[6, 1]" in message, message
    assert "in place" in message and "lost" in message, message
    np.testing.assert_array_equal(column_major, start)  # nothing ran
    # Arrays the wrapper itself must copy (read-only, negative strides, lists) would lose the
    # writes the same way: refused by name before anything runs.
    read_only = start.copy()
    read_only.flags.writeable = False
    reversed_rows = start[::-1].copy()[::-1]
    for what, cache in (("read-only", read_only), ("negative strides", reversed_rows),
                        ("a list", start.tolist())):
        with pytest.raises(KilnError) as info:
            module.execute("accumulate", [cache, x])
        assert info.value.status == "InvalidArgument", what
        assert "('cache') is written in place" in info.value.message and "lost" in info.value.message, what
    np.testing.assert_array_equal(read_only, start)
    np.testing.assert_array_equal(reversed_rows, start)


def test_stride_zero_view_of_64_bytes_through_the_c_api(program):
    """(1024, 16) float32 with strides (0, 1) over one 16-float row: valid (it reaches 64 bytes),
    but read densely it spans 64 KiB."""
    _, module, _ = program
    lib = runtime._library()
    create = lib.kiln_tensor_create_from_data
    create.restype = ctypes.c_int32
    create.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64),
                       ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32,
                       ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    row = random_tensor((1, COLS), "float32", 60).numpy().copy()
    b = random_tensor((COLS, OUT), "float32", 61).numpy().copy()
    assert row.nbytes == 64

    def tensor(array, sizes, strides):
        handle = ctypes.c_void_p()
        n = len(sizes)
        status = create(array.ctypes.data, 6, (ctypes.c_int64 * n)(*sizes), (ctypes.c_int64 * n)(*strides), n,
                        0, 0, None, None, ctypes.byref(handle))
        assert status == 0, lib.kiln_last_error_message().decode()
        return handle

    inputs = [tensor(row, (MAX_ROWS, COLS), (0, 1)), tensor(b, (COLS, OUT), (OUT, 1))]
    outputs = ctypes.POINTER(ctypes.c_void_p)()
    count = ctypes.c_size_t()
    try:
        status = lib.kiln_module_execute(module._h(), b"float32", (ctypes.c_void_p * 2)(*inputs), 2,
                                         ctypes.byref(outputs), ctypes.byref(count))
        assert status == 0, lib.kiln_last_error_message().decode()
    finally:
        for h in inputs:
            lib.kiln_tensor_free(h)
    try:
        got = [runtime._from_kiln_tensor(lib, ctypes.c_void_p(outputs[i]), "torch") for i in range(count.value)]
    finally:
        lib.kiln_tensor_array_free(outputs, count.value)
    want = eager(Mixed(), torch.from_numpy(row).expand(MAX_ROWS, COLS), torch.from_numpy(b))
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, 1e-5, f"stride-0 output {i}")


def test_dim_order_round_trips_and_c_reads_what_python_writes(tmp_path):
    from kiln.program import DimSpec, MethodSpec, Program, TensorSpec

    def program(order):
        p = Program()
        p.add_named_data("lib", b"\x7fELF" + bytes(60))
        spec = TensorSpec("image", "float32", [DimSpec(2), DimSpec(3), DimSpec(4), DimSpec(5)], order)
        p.add_method(MethodSpec("forward", inputs=[spec, TensorSpec("rows", "float32", [DimSpec(8)])],
                                outputs=[TensorSpec("y", "float32", [DimSpec(2)])], library_key="lib"))
        return p

    path = tmp_path / "orders.kiln"
    program([0, 2, 3, 1]).save(path)
    inputs = load_program(path).methods[0].inputs
    assert inputs[0].dim_order == (0, 2, 3, 1) and inputs[1].dim_order == ()
    meta = Module(path).method_meta("forward")  # the C++ reader, through the C API
    assert meta.inputs[0].dim_order == (0, 2, 3, 1) and meta.inputs[1].dim_order == ()
    for bad in ([0, 1, 2], [0, 1, 1, 2], [0, 1, 2, 4]):
        with pytest.raises(ValueError, match="dim_order"):
            program(bad)
    # Written anyway (past add_method's check), both readers refuse it, naming the input.
    p = program([0, 2, 3, 1])
    p.methods[0].inputs[0] = dataclasses.replace(p.methods[0].inputs[0], dim_order=[0, 2, 2, 1])
    p.save(tmp_path / "bad.kiln")
    with pytest.raises(ValueError, match=r"inputs\[0\] 'image': dim_order \[0, 2, 2, 1\] is not a permutation"):
        load_program(tmp_path / "bad.kiln")
    with pytest.raises(KilnError) as info:
        Module(tmp_path / "bad.kiln").method_meta("forward")
    assert info.value.status == "InvalidProgram"
    assert "inputs[0] 'image': dim_order [0, 2, 2, 1] is not a permutation of [0, 4)" in info.value.message


def test_a_non_dense_example_is_refused_at_export():
    a = torch.randn(8, 2 * COLS)[:, ::2]
    ep = torch.export.export(Mixed(), (a, torch.randn(COLS, OUT)))
    with pytest.raises(ValueError, match=r"input 'a'.*strides \(32, 2\).*x\.contiguous\(\)"):
        kiln.export(ep, backend="cpu", verbose=False)


# ---- a stock .pt2 package compiled for channels_last ----------------------------------------------


def test_pt2_package_compiled_for_channels_last(tmp_path):
    conv = Conv().eval()
    image = torch.randn(2, 3, 8, 8).contiguous(memory_format=torch.channels_last)
    ep = torch.export.export(conv, (image,))
    path = tmp_path / "conv.pt2"
    torch._inductor.aoti_compile_and_package(
        ep, package_path=str(path),
        inductor_configs={"aot_inductor.link_libtorch": False, "aot_inductor.package_constants_in_so": False,
                          "aot_inductor.package_constants_on_disk_format": "binary_blob"})
    module = Module(path)
    assert module.method_meta("forward").inputs[0].dim_order == (0, 2, 3, 1)
    # `kiln import` writes it with the C++ writer; the Python reader reads it back.
    imported = tmp_path / "conv.kiln"
    done = subprocess.run([CLI, "import", str(path), "-o", str(imported)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert load_program(imported).methods[0].inputs[0].dim_order == (0, 2, 3, 1)
    x = random_tensor((2, 3, 8, 8), "float32", 70)
    want = eager(conv, x)
    for value in (x.contiguous(), x.contiguous(memory_format=torch.channels_last), x.numpy()):
        got = module.forward(value, output="torch")
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, 1e-5, f"pt2 conv output {i}")
