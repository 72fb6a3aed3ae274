import sys
from pathlib import Path

# The Triton harness lives beside the tests; the kiln package lives in python/.
# (tests/conftest.py keeps pytest's temporary files in one directory removed at the end.)
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
