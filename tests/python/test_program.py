"""Tests of the pure-Python program file writer/reader (python/kiln/program.py).

Independent references: the header is parsed here with struct from the layout in
docs/program-format.md, digests with hashlib, dtype codes from include/kiln/dtype.h,
and the C++-written golden file is checked against literal values.
Run: PYTHONPATH=python pytest tests/python/test_program.py
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys

import pytest

from kiln import program as kp
from kiln.program import DTYPE_CODES, DimSpec, MethodSpec, Program, TensorSpec, load

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden"
HEADER = struct.Struct("<8sIIQQQQ32s")  # docs/program-format.md, program header
DATA_HEADER = struct.Struct("<8sIIQQ")


def pattern(n: int, mul: int, add: int) -> bytes:
    return bytes((i * mul + add) % 256 for i in range(n))


def small_program(external_weights: bool = False) -> Program:
    p = Program({"model": "small"})
    p.add_named_data("lib", pattern(500, 3, 1))
    p.add_named_data("w", pattern(3000, 5, 2), external=external_weights)
    p.add_method(MethodSpec("forward", inputs=[TensorSpec("x", "float32", [DimSpec(2, True, 1, 8, "b"), DimSpec(3)])],
                            outputs=[TensorSpec("y", "float32", [DimSpec(2, True, 1, 8, "b")])],
                            library_key="lib", weights_key="w"))
    return p


def header_of(path) -> tuple:
    with open(path, "rb") as f:
        return HEADER.unpack(f.read(HEADER.size))


# ---- constants ----------------------------------------------------------------


def test_dtype_codes_match_cpp_header():
    enum = (ROOT / "include" / "kiln" / "dtype.h").read_text()
    codes = {name: int(code) for name, code in re.findall(r"^\s*(\w+)\s*=\s*(\d+),", enum, re.M)}
    table = (ROOT / "src" / "core" / "dtype.cpp").read_text()
    names = dict(re.findall(r"\{DType::(\w+),\s*\"(\w+)\"", table))
    expected = {names[enum_name]: code for enum_name, code in codes.items()}
    assert len(expected) == 17
    assert DTYPE_CODES == expected


def test_format_version_matches_cpp_header():
    text = (ROOT / "include" / "kiln" / "program_file.h").read_text()
    assert int(re.search(r"kProgramVersion = (\d+);", text).group(1)) == kp.FORMAT_VERSION
    assert int(re.search(r"kMinProgramVersion = (\d+);", text).group(1)) == kp.MIN_FORMAT_VERSION


def test_generated_flatbuffers_python_is_up_to_date():
    assert shutil.which("flatc"), "flatc (flatbuffers-compiler) is needed to check python/kiln/_fb"
    r = subprocess.run([sys.executable, str(ROOT / "schema" / "generate_python.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# ---- golden files --------------------------------------------------------------


def test_reads_cpp_written_golden_field_by_field():
    p = load(GOLDEN / "cpp_written.kiln")
    assert p.metadata == {"model": "golden", "writer": "cpp"}
    assert [m.name for m in p.methods] == ["forward", "encode"]
    f, e = p.methods
    batch = DimSpec(2, True, 1, 16, "batch")
    assert f == MethodSpec(
        "forward", backend="aoti", device="cpu",
        inputs=[TensorSpec("x", "float32", [batch, DimSpec(8)]), TensorSpec("y", "int64", [DimSpec(3)])],
        outputs=[TensorSpec("out", "bfloat16", [batch, DimSpec(8)])],
        compile_specs={"num_threads": "1"}, metadata={"cpu_isa": "avx2", "torch_version": "2.11.0"},
        library_key="forward.so", weights_key="forward.weights")
    s0 = DimSpec(5, True, 1, -1, "s0")
    assert e == MethodSpec("encode", backend="aoti", device="cuda", inputs=[TensorSpec("tokens", "int32", [s0])],
                           outputs=[TensorSpec("h", "float16", [s0, DimSpec(4)])], library_key="encode.so")
    expected = {
        "forward.so": (pattern(300, 7, 1), 64, False),
        "forward.weights": (pattern(1000, 13, 5), 4096, True),
        "encode.so": (pattern(64, 3, 9), 64, False),
        "extra": (pattern(10, 1, 0), 16, False),
        "alias.so": (pattern(300, 7, 1), 64, False),
    }
    info = p.named_data_info()
    assert [i["key"] for i in info] == list(expected)
    for i in info:
        data, alignment, external = expected[i["key"]]
        assert i == {"key": i["key"], "size": len(data), "alignment": alignment,
                     "sha256": hashlib.sha256(data).hexdigest(), "external": external}
        assert p.named_data_bytes(i["key"]) == data


def test_python_golden_is_reproducible(tmp_path):
    spec = importlib.util.spec_from_file_location("make_python_golden", GOLDEN / "make_python_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.build("python").save(tmp_path / "python_written.kiln")
    for name in ("python_written.kiln", "python_written.kiln.data"):
        assert (tmp_path / name).read_bytes() == (GOLDEN / name).read_bytes(), (
            f"{name} is stale: rerun tests/data/golden/make_python_golden.py")


def test_python_and_cpp_goldens_describe_the_same_program():
    py, cpp = load(GOLDEN / "python_written.kiln"), load(GOLDEN / "cpp_written.kiln")
    assert py.methods == cpp.methods
    assert {k: v for k, v in py.metadata.items() if k != "writer"} == {
        k: v for k, v in cpp.metadata.items() if k != "writer"}
    assert [i for i in py.named_data_info()] == [i for i in cpp.named_data_info()]


# ---- writer layout (checked with an independent struct parse) -------------------


def test_layout_alignment_and_digests(tmp_path):
    path = tmp_path / "m.kiln"
    small_program().save(path)
    raw = path.read_bytes()
    magic, version, header_size, fb_off, fb_size, base, seg_size, digest = HEADER.unpack_from(raw)
    assert magic == b"KILNPROG" and version == 1 and header_size == 80
    assert fb_off == 80 and fb_off % 8 == 0
    assert hashlib.sha256(raw[fb_off:fb_off + fb_size]).digest() == digest
    assert raw[fb_off + 4:fb_off + 8] == b"KLNP"  # FlatBuffers file identifier
    assert base >= fb_off + fb_size and base + seg_size == len(raw)
    # The weights blob is page aligned in the file: find it and check where it is.
    w = pattern(3000, 5, 2)
    pos = raw.find(w, base)
    assert pos >= 0 and pos % 4096 == 0
    lib_pos = raw.find(pattern(500, 3, 1), base)
    assert lib_pos >= 0 and lib_pos % 64 == 0
    assert not (tmp_path / "m.kiln.data").exists()  # nothing external


def test_external_data_file_layout_and_default_name(tmp_path):
    path = tmp_path / "m.kiln"
    small_program(external_weights=True).save(path)
    data = (tmp_path / "m.kiln.data").read_bytes()
    magic, version, header_size, dbase, dsize = DATA_HEADER.unpack_from(data)
    assert (magic, version, header_size, dbase) == (b"KILNDATA", 1, 32, 4096)
    assert dbase + dsize == len(data)
    assert data[dbase:dbase + 3000] == pattern(3000, 5, 2)
    p = load(path)
    assert [i["external"] for i in p.named_data_info()] == [False, True]
    assert p.named_data_bytes("w") == pattern(3000, 5, 2)
    assert pattern(3000, 5, 2) not in path.read_bytes()


def test_external_data_custom_path_records_basename(tmp_path):
    path = tmp_path / "m.kiln"
    other = tmp_path / "sub"
    other.mkdir()
    small_program(external_weights=True).save(path, external_data_path=str(other / "weights.bin"))
    assert b"weights.bin" in path.read_bytes() and str(other).encode() not in path.read_bytes()
    with pytest.raises(FileNotFoundError, match="weights.bin"):
        load(path)  # looked for next to the program
    p = load(path, data_files=[str(other / "weights.bin")])
    assert p.named_data_bytes("w") == pattern(3000, 5, 2)
    with pytest.raises(ValueError, match="2 data files were given"):
        load(path, data_files=[str(other / "weights.bin")] * 2)


def test_round_trip_python_to_python(tmp_path):
    p = small_program()
    p.add_method(MethodSpec("other", backend="aoti", device="cuda", compile_specs={"a": "1", "b": "2"},
                            metadata={"torch_version": "2.11"}, library_key="lib"))
    p.save(tmp_path / "a.kiln")
    q = load(tmp_path / "a.kiln")
    assert q.methods == p.methods
    assert q.metadata == p.metadata
    assert {i["key"]: i["sha256"] for i in q.named_data_info()} == {
        "lib": hashlib.sha256(pattern(500, 3, 1)).hexdigest(), "w": hashlib.sha256(pattern(3000, 5, 2)).hexdigest()}
    # A loaded program can be saved again unchanged.
    q.save(tmp_path / "b.kiln")
    assert (tmp_path / "b.kiln").read_bytes() == (tmp_path / "a.kiln").read_bytes()


def test_identical_bytes_share_one_segment(tmp_path):
    p = Program()
    blob = pattern(2000, 9, 4)
    p.add_named_data("a", blob)
    p.add_named_data("b", blob)
    p.save(tmp_path / "m.kiln")
    raw = (tmp_path / "m.kiln").read_bytes()
    assert raw.count(blob) == 1
    q = load(tmp_path / "m.kiln")
    assert q.named_data_bytes("a") == q.named_data_bytes("b") == blob


# ---- API contract ---------------------------------------------------------------


def test_add_named_data_dedup_and_errors():
    p = Program()
    assert p.add_named_data("k", b"abc") == "k"
    assert p.add_named_data("k", memoryview(b"abc"), alignment=128) == "k"  # identical: no-op
    assert p.named_data_info()[0]["alignment"] == 128
    with pytest.raises(ValueError, match="different bytes"):
        p.add_named_data("k", b"abd")
    with pytest.raises(ValueError, match="alignment"):
        p.add_named_data("x", b"1", alignment=48)
    with pytest.raises(ValueError, match="alignment"):
        p.add_named_data("x", b"1", alignment=8192)
    with pytest.raises(ValueError):
        p.add_named_data("", b"1")
    with pytest.raises(KeyError):
        p.named_data_bytes("missing")


def test_add_method_errors(tmp_path):
    p = Program()
    p.add_method(MethodSpec("f", library_key="nope"))
    with pytest.raises(ValueError, match="already added"):
        p.add_method(MethodSpec("f"))
    with pytest.raises(ValueError, match="unknown dtype"):
        p.add_method(MethodSpec("g", inputs=[TensorSpec("x", "complex32", [])]))
    with pytest.raises(ValueError, match="names no named data"):
        p.save(tmp_path / "m.kiln")


def test_defaults_of_specs():
    m = MethodSpec("f")
    assert (m.backend, m.device, m.inputs, m.compile_specs, m.library_key, m.weights_key) == ("aoti", "cpu", [], {}, "", "")
    assert MethodSpec("g").inputs is not m.inputs
    assert DimSpec(3) == DimSpec(3, False, 0, -1, "")


def test_one_spec_type_for_writer_reader_and_runtime():
    # kiln.runtime (ctypes, numpy) and kiln.program (file writer/reader) share kiln.spec's types,
    # which import without torch or numpy.
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "sys.modules['numpy'] = None\n"
        "import kiln.spec\n"
        "assert kiln.spec.TensorSpec('x', 'float32', [kiln.spec.DimSpec(2)]).shape == (2,)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    from kiln import runtime

    assert runtime.TensorSpec is TensorSpec and runtime.DimSpec is DimSpec
    # Lists are kept as tuples, so specs from the file, the C API and the exporter compare equal.
    spec = TensorSpec("x", "float32", [DimSpec(2, True, 1, 8, "b"), DimSpec(3)], [1, 0])
    assert spec == TensorSpec("x", "float32", (DimSpec(2, True, 1, 8, "b"), DimSpec(3)), (1, 0))
    assert spec.shape == (None, 3) and hash(spec) == hash(TensorSpec(**spec.__dict__))


# ---- malformed files ---------------------------------------------------------------


@pytest.fixture
def valid(tmp_path):
    path = tmp_path / "m.kiln"
    small_program().save(path)
    return path


def write_variant(path, raw: bytes) -> pathlib.Path:
    out = path.with_name("bad.kiln")
    out.write_bytes(raw)
    return out


def patch_header(raw: bytes, **fields) -> bytes:
    names = ["magic", "version", "header_size", "fb_offset", "fb_size", "base", "seg_size", "digest"]
    values = dict(zip(names, HEADER.unpack_from(raw)))
    values.update(fields)
    return HEADER.pack(*[values[n] for n in names]) + raw[HEADER.size:]


def refresh_digest(raw: bytes) -> bytes:
    _, _, _, off, size, _, _, _ = HEADER.unpack_from(raw)
    return patch_header(raw, digest=hashlib.sha256(raw[off:off + size]).digest())


@pytest.mark.parametrize("cut", [0, 5, 40, 100, -1])
def test_truncated(valid, cut):
    raw = valid.read_bytes()
    with pytest.raises(ValueError, match="truncated|do not lie inside|does not match the header"):
        load(write_variant(valid, raw[:cut] if cut >= 0 else raw[:-1]))


def test_bad_magic_future_version_and_bounds(valid):
    raw = valid.read_bytes()
    with pytest.raises(ValueError, match="bad magic"):
        load(write_variant(valid, b"X" + raw[1:]))
    with pytest.raises(ValueError, match=r"format_version \(offset 8\) is 2"):
        load(write_variant(valid, patch_header(raw, version=2)))
    with pytest.raises(ValueError, match="flatbuffer_offset"):
        load(write_variant(valid, patch_header(raw, fb_offset=len(raw) + 8)))
    with pytest.raises(ValueError, match="segment_base_offset"):
        load(write_variant(valid, patch_header(raw, seg_size=2**63)))
    with pytest.raises(ValueError, match="does not match the header"):
        load(write_variant(valid, raw + b"\0"))


def test_flatbuffer_digest_and_corruption(valid):
    raw = bytearray(valid.read_bytes())
    raw[100] ^= 0x40
    with pytest.raises(ValueError, match="SHA-256 of the FlatBuffer"):
        load(write_variant(valid, bytes(raw)))
    raw = bytearray(valid.read_bytes())
    raw[80:84] = struct.pack("<I", 0x7FFFFFF0)  # root offset out of the buffer, digest fixed up
    with pytest.raises(ValueError, match="corrupt"):
        load(write_variant(valid, refresh_digest(bytes(raw))))


def test_corrupted_named_data_fails_at_access(valid):
    raw = bytearray(valid.read_bytes())
    _, _, _, _, _, base, _, _ = HEADER.unpack_from(raw)
    pos = raw.find(pattern(500, 3, 1), base)
    raw[pos + 7] ^= 1
    p = load(write_variant(valid, bytes(raw)))  # open does not hash named data
    with pytest.raises(ValueError, match="SHA-256 does not match"):
        p.named_data_bytes("lib")
    assert p.named_data_bytes("w") == pattern(3000, 5, 2)


def test_missing_and_corrupt_external_file(tmp_path):
    path = tmp_path / "m.kiln"
    small_program(external_weights=True).save(path)
    data = (tmp_path / "m.kiln.data").read_bytes()
    (tmp_path / "m.kiln.data").write_bytes(b"KILNPROG" + data[8:])
    with pytest.raises(ValueError, match="bad magic"):
        load(path)
    (tmp_path / "m.kiln.data").write_bytes(data[:-1])
    with pytest.raises(ValueError, match="do not describe the file"):
        load(path)
    os.remove(tmp_path / "m.kiln.data")
    with pytest.raises(FileNotFoundError, match="m.kiln.data"):
        load(path)
