#!/usr/bin/env python3
"""Regenerates python/kiln/_fb/ from schema/kiln_program.fbs with flatc.

flatc names Python modules after the schema namespace (``kiln.fb``) and imports
nested tables absolutely (``from kiln.fb.Dim import Dim``); the package lives at
``kiln._fb`` so those imports are rewritten. ``--check`` compares instead of
writing and exits 1 when the checked-in files are stale.

Usage: python3 schema/generate_python.py [--check]   (needs flatc on PATH)
"""
from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "schema" / "kiln_program.fbs"
TARGET = ROOT / "python" / "kiln" / "_fb"
HEADER = "# Generated from schema/kiln_program.fbs by schema/generate_python.py; do not edit.\n"


def generate() -> dict[str, str]:
    """File name -> contents of the generated package."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["flatc", "--python", "-o", tmp, str(SCHEMA)], check=True)
        out = {}
        for path in sorted((pathlib.Path(tmp) / "kiln" / "fb").glob("*.py")):
            text = path.read_text()
            text = text.replace("from kiln.fb.", "from kiln._fb.")
            out[path.name] = HEADER + text
        return out


def main() -> int:
    files = generate()
    if "--check" in sys.argv[1:]:
        present = {p.name: p.read_text() for p in TARGET.glob("*.py")} if TARGET.exists() else {}
        if present != files:
            stale = sorted(set(present) ^ set(files) | {k for k in files if present.get(k) != files[k]})
            print("python/kiln/_fb is out of date (" + ", ".join(stale) + "); run schema/generate_python.py")
            return 1
        return 0
    TARGET.mkdir(parents=True, exist_ok=True)
    for old in TARGET.glob("*.py"):
        if old.name not in files:
            old.unlink()
    for name, text in files.items():
        (TARGET / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
