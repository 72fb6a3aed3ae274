"""Program.save and kiln.atomic_file replace files atomically: a reader that has the old file
open or mapped keeps its bytes, the path holds the complete new file, and a save that fails
leaves the old files as they were and no temporary file behind.
Run: PYTHONPATH=python pytest tests/python/test_atomic_save.py
"""
from __future__ import annotations

import errno
import mmap
import os
import stat

import pytest

from kiln import atomic_file
from kiln.atomic_file import AtomicFile, copy_file_atomically, write_file_atomically
from kiln.program import DimSpec, MethodSpec, Program, TensorSpec, load


def pattern(n: int, mul: int, add: int) -> bytes:
    return bytes((i * mul + add) % 256 for i in range(n))


def program(n: int, mul: int) -> Program:
    """A one-method program: library pattern(n, mul, 1) in the file, weights pattern(n, mul, 2)
    in the external data file."""
    p = Program({"model": f"atomic {n}"})
    p.add_named_data("lib", pattern(n, mul, 1))
    p.add_named_data("w", pattern(n, mul, 2), external=True)
    p.add_method(MethodSpec("forward", inputs=[TensorSpec("x", "float32", [DimSpec(4)])],
                            outputs=[TensorSpec("y", "float32", [DimSpec(4)])], library_key="lib", weights_key="w"))
    return p


def names(directory) -> set[str]:
    return set(os.listdir(directory))


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_resave_leaves_open_and_mapped_readers_the_old_bytes(tmp_path):
    path = tmp_path / "m.kiln"
    data = tmp_path / "m.kiln.data"
    program(3000, 7).save(path)
    old_program, old_data = path.read_bytes(), data.read_bytes()
    loaded = load(str(path))  # maps the files; named data is read from the mappings
    with open(path, "rb") as reader, open(data, "rb") as data_reader:
        mapped = mmap.mmap(data_reader.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            program(5000, 11).save(path)
            assert reader.read() == old_program
            assert mapped[:] == old_data
        finally:
            mapped.close()
    assert loaded.named_data_bytes("w") == pattern(3000, 7, 2)
    assert path.read_bytes() != old_program
    assert load(str(path)).named_data_bytes("w") == pattern(5000, 11, 2)
    assert names(tmp_path) == {"m.kiln", "m.kiln.data"}


def test_a_loaded_program_saved_over_its_own_file(tmp_path):
    path = tmp_path / "m.kiln"
    program(2000, 3).save(path)
    loaded = load(str(path))
    loaded.metadata["model"] = "resaved"
    loaded.save(path)
    again = load(str(path))
    assert again.metadata["model"] == "resaved"
    assert again.named_data_bytes("lib") == pattern(2000, 3, 1)
    assert again.named_data_bytes("w") == pattern(2000, 3, 2)
    assert names(tmp_path) == {"m.kiln", "m.kiln.data"}


def test_failed_sync_leaves_the_old_files_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "m.kiln"
    program(1000, 7).save(path)
    before = {name: (tmp_path / name).read_bytes() for name in names(tmp_path)}

    def failing_fsync(fd):
        raise OSError(errno.EIO, "injected fsync failure")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="injected fsync failure"):
        program(2000, 11).save(path)
    monkeypatch.undo()
    assert {name: (tmp_path / name).read_bytes() for name in names(tmp_path)} == before


def test_failed_rename_of_the_data_file_leaves_the_old_program(tmp_path):
    path, data = tmp_path / "m.kiln", tmp_path / "weights.bin"
    program(1000, 7).save(path, external_data_path=data)
    old_program = path.read_bytes()
    blocked = tmp_path / "blocked"
    blocked.mkdir()  # a directory where the data file should go: the first rename fails
    with pytest.raises(OSError):
        program(2000, 11).save(path, external_data_path=blocked)
    assert path.read_bytes() == old_program
    assert load(str(path), [str(data)]).named_data_bytes("w") == pattern(1000, 7, 2)
    assert names(tmp_path) == {"m.kiln", "weights.bin", "blocked"}
    assert list(blocked.iterdir()) == []


def test_a_blob_that_fails_to_read_writes_nothing(tmp_path):
    source = tmp_path / "source.kiln"
    program(1000, 7).save(source)
    raw = bytearray((tmp_path / "source.kiln.data").read_bytes())
    raw[-10] ^= 0xFF  # the weights no longer match their digest
    (tmp_path / "source.kiln.data").write_bytes(bytes(raw))
    target = tmp_path / "target.kiln"
    program(500, 3).save(target)
    before = {name: (tmp_path / name).read_bytes() for name in names(tmp_path)}
    with pytest.raises(ValueError, match="SHA-256"):
        load(str(source)).save(target)
    assert {name: (tmp_path / name).read_bytes() for name in names(tmp_path)} == before


def test_no_temporary_file_fails_naming_the_file(tmp_path):
    """No descriptor left for the temporary file (this holds for root too, unlike a read-only
    directory): the save fails naming the file, and the old files stay."""
    import resource

    path = tmp_path / "m.kiln"
    program(1000, 7).save(path)
    old_program = path.read_bytes()
    next_program = program(2000, 11)
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest_free = os.dup(0)
    os.close(lowest_free)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, saved[1]))
    try:
        with pytest.raises(OSError) as err:
            next_program.save(path)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, saved)
    assert "m.kiln" in str(err.value)
    assert path.read_bytes() == old_program
    assert names(tmp_path) == {"m.kiln", "m.kiln.data"}


def test_mode_is_the_old_files_or_what_creating_the_file_gives(tmp_path):
    fresh, kept = tmp_path / "fresh.kiln", tmp_path / "kept.kiln"
    program(100, 1).save(fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~current_umask()
    program(100, 1).save(kept)
    kept.chmod(0o640)
    (tmp_path / "kept.kiln.data").chmod(0o600)
    program(200, 3).save(kept)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "kept.kiln.data").stat().st_mode) == 0o600
    write_file_atomically(kept, b"x", mode=0o600)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_helpers_follow_links_and_leave_no_temporary(tmp_path):
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_bytes(b"old")
    link.symlink_to("target.txt")
    write_file_atomically(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"
    source = tmp_path / "source.bin"
    source.write_bytes(pattern(70000, 13, 1))
    copy_file_atomically(source, tmp_path / "copy.bin")
    assert (tmp_path / "copy.bin").read_bytes() == source.read_bytes()
    with AtomicFile(tmp_path / "dropped.bin") as f:
        f.write(b"never committed")
        temp = f.temp_path
        assert os.path.dirname(temp) == str(tmp_path)
    assert not os.path.exists(temp)
    assert names(tmp_path) == {"target.txt", "link.txt", "source.bin", "copy.bin"}
    with pytest.raises(FileNotFoundError, match="missing"):
        write_file_atomically(tmp_path / "missing" / "x.bin", b"")
    assert atomic_file.__all__ == ["AtomicFile", "write_file_atomically", "copy_file_atomically"]


def test_a_target_that_is_not_a_regular_file_is_refused_and_left_as_it_is(tmp_path):
    """A rename replaces whatever the name holds: a FIFO (or a link to one) given as the
    output used to become a regular file."""
    fifo = tmp_path / "out.kiln"
    os.mkfifo(fifo)
    link = tmp_path / "link.kiln"
    link.symlink_to(fifo)
    for target in (fifo, link):
        with pytest.raises(OSError, match="which Kiln does not replace"):
            program(100, 1).save(target)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert names(tmp_path) == {"out.kiln", "link.kiln"}
