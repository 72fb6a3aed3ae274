import sys
from pathlib import Path

# The op-test helpers (shim_caller.py, op_case.py, cases_*.py) live beside the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))
