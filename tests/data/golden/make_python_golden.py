#!/usr/bin/env python3
"""Writes tests/data/golden/python_written.kiln (+ .kiln.data) with kiln.program.

The C++ test (tests/program/program_test.cpp, GoldenPython*) checks every field of
this file against values it spells out itself; tests/python/test_program.py checks
that running this script again reproduces the committed bytes.

Usage: PYTHONPATH=python python3 tests/data/golden/make_python_golden.py [out_dir]
"""
from __future__ import annotations

import os
import sys

from kiln.program import DimSpec, MethodSpec, Program, TensorSpec


def pattern(n: int, mul: int, add: int) -> bytes:
    return bytes((i * mul + add) % 256 for i in range(n))


def build(writer: str) -> Program:
    """The golden program; the C++ writer golden (cpp_written.kiln) has the same content, writer="cpp"."""
    p = Program({"model": "golden", "writer": writer})
    p.add_named_data("forward.so", pattern(300, 7, 1))
    p.add_named_data("forward.weights", pattern(1000, 13, 5), alignment=64, external=True)
    p.add_named_data("encode.so", pattern(64, 3, 9))
    p.add_named_data("extra", pattern(10, 1, 0), alignment=16)
    # Same bytes as forward.so under another key: the Python writer stores them once (shared segment).
    p.add_named_data("alias.so", pattern(300, 7, 1))
    batch = DimSpec(2, dynamic=True, min=1, max=16, name="batch")
    p.add_method(MethodSpec(
        "forward", backend="aoti", device="cpu",
        inputs=[TensorSpec("x", "float32", [batch, DimSpec(8)]), TensorSpec("y", "int64", [DimSpec(3)])],
        outputs=[TensorSpec("out", "bfloat16", [batch, DimSpec(8)])],
        compile_specs={"num_threads": "1"},
        metadata={"cpu_isa": "avx2", "torch_version": "2.11.0"},
        library_key="forward.so", weights_key="forward.weights"))
    s0 = DimSpec(5, dynamic=True, min=1, max=-1, name="s0")
    p.add_method(MethodSpec(
        "encode", backend="aoti", device="cuda",
        inputs=[TensorSpec("tokens", "int32", [s0])],
        outputs=[TensorSpec("h", "float16", [s0, DimSpec(4)])],
        library_key="encode.so"))
    return p


def main() -> None:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    build("python").save(os.path.join(out_dir, "python_written.kiln"))


if __name__ == "__main__":
    main()
