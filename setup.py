"""Packaging hook: the exporter's lists of the runtime's shims live beside the C++ code
(src/shims/<device>/shims.txt); a built package carries copies as kiln/shims/<device>.txt,
where kiln.exporter.aoti_backend looks first. Likewise the top-level VERSION file (the
project's one version) becomes kiln/VERSION, which kiln/__init__.py reads."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithShimLists(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "kiln" / "shims"
        target.mkdir(parents=True, exist_ok=True)
        for device in ("common", "cpu", "cuda"):
            source = ROOT / "src" / "shims" / device / "shims.txt"
            (target / f"{device}.txt").write_bytes(source.read_bytes())
        (Path(self.build_lib) / "kiln" / "VERSION").write_bytes((ROOT / "VERSION").read_bytes())


setup(cmdclass={"build_py": BuildPyWithShimLists})
