"""Shared by the Python test suites under tests/ (tests/python on every machine, tests/gpu on a
GPU machine): where pytest puts temporary files."""

import shutil
import tempfile
from pathlib import Path

import pytest

# tmp_path and tmp_path_factory directories go under one base directory in $TMPDIR that is
# removed when the test run ends, failed tests' files included (pytest would otherwise keep
# <TMPDIR>/pytest-of-<user>/ and the last runs in it). --basetemp=DIR keeps them in DIR instead.
_owned_basetemp = pytest.StashKey[Path]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if config.option.basetemp is None:
        root = Path(tempfile.mkdtemp(prefix="kiln-pytest-"))
        config.stash[_owned_basetemp] = root
        # A path that does not exist yet: pytest creates its base directory itself.
        config.option.basetemp = str(root / "base")


def pytest_unconfigure(config):
    root = config.stash.get(_owned_basetemp, None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
