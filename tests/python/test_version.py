"""One version for the whole project: the top-level VERSION file. CMake reads it into the
library (kiln_version_string), the CLI (`kiln --version`) and the generated kiln/version.h;
Python reads it as kiln.__version__, and pyproject.toml reads it for the wheel's version.

The library is $KILN_LIBRARY (default <repo>/build/libkiln.so), the CLI $KILN_CLI (default
<repo>/build/kiln), both opened directly so a stale build shows up here.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from pathlib import Path

import pytest

import kiln

REPO = Path(__file__).resolve().parents[2]
LIBRARY = Path(os.environ.get("KILN_LIBRARY", REPO / "build" / "libkiln.so"))
CLI = Path(os.environ.get("KILN_CLI", REPO / "build" / "kiln"))


def version_file() -> str:
    return (REPO / "VERSION").read_text(encoding="utf-8").strip()


def test_version_file_is_one_semantic_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", version_file())


def test_python_package_version_is_the_version_file():
    assert kiln.__version__ == version_file()


def test_library_version_is_the_version_file():
    if not LIBRARY.is_file():
        pytest.fail(f"libkiln.so not found at {LIBRARY} (build it or set KILN_LIBRARY)")
    lib = ctypes.CDLL(str(LIBRARY))
    lib.kiln_version_string.restype = ctypes.c_char_p
    lib.kiln_version_string.argtypes = []
    assert lib.kiln_version_string().decode() == version_file()


def test_cli_version_is_the_version_file():
    if not CLI.is_file():
        pytest.fail(f"kiln CLI not found at {CLI} (build it or set KILN_CLI)")
    proc = subprocess.run([str(CLI), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    match = re.fullmatch(r"kiln (\S+) \(program format \d+\)", proc.stdout.strip())
    assert match, proc.stdout
    assert match.group(1) == version_file()


def test_header_version_is_the_version_file():
    # kiln/version.h sits in the build tree beside libkiln.so, or in the install tree's include/.
    candidates = [LIBRARY.parent / "generated" / "public" / "kiln" / "version.h",
                  LIBRARY.parent.parent / "include" / "kiln" / "version.h"]
    header = next((p for p in candidates if p.is_file()), None)
    if header is None:
        pytest.skip(f"kiln/version.h not found beside {LIBRARY} (looked in {', '.join(map(str, candidates))})")
    text = header.read_text(encoding="utf-8")
    macros = dict(re.findall(r"^#define (KILN_VERSION_\w+) (\S+)$", text, re.MULTILINE))
    major, minor, patch = version_file().split(".")
    assert macros["KILN_VERSION_STRING"] == f'"{version_file()}"'
    assert (macros["KILN_VERSION_MAJOR"], macros["KILN_VERSION_MINOR"], macros["KILN_VERSION_PATCH"]) == (
        major, minor, patch)
