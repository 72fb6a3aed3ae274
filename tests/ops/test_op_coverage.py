"""docs/ops.md says what Kiln implements, and says it truthfully."""

import subprocess
import sys
from pathlib import Path

from op_inventory import DEVICES, header_functions, kiln_functions, left_out, not_yet, suffix

ROOT = Path(__file__).resolve().parents[2]


def test_ops_doc_is_generated_from_the_lists():
    result = subprocess.run([sys.executable, str(ROOT / "scripts/op_coverage.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_ops_left_out_are_not_also_implemented():
    reasons = left_out()
    for device in DEVICES:
        both = {suffix(f, device) for f in kiln_functions(device) if f.startswith(f"aoti_torch_{device}_")} & set(reasons)
        assert not both, f"{device}: listed as left out but implemented: {sorted(both)}"


def test_every_left_out_op_has_a_reason():
    for name, reason in left_out().items():
        assert len(reason) > 20, f"{name}: give the reason it is left out"


def test_ops_not_yet_are_not_implemented_and_say_why():
    """An op implemented since must leave src/shims/ops_not_yet.txt, or docs/ops.md says both."""
    for device in DEVICES:
        own = {suffix(f, device) for f in kiln_functions(device) if f.startswith(f"aoti_torch_{device}_")}
        both = own & set(not_yet())
        assert not both, f"{device}: listed as not yet but implemented: {sorted(both)}"
    for name, reason in not_yet().items():
        assert len(reason) > 20, f"{name}: give the reason no exported program calls it yet"


def test_handwritten_cpu_header_ops_are_in_the_inventory():
    """torch's c/shim_cpu.h declares ops with no generated shim (mkldnn_rnn_layer for nn.LSTM on
    the CPU); the inventory must see them, or a model calling one is refused with no doc row."""
    assert "aoti_torch_cpu_mkldnn_rnn_layer" in header_functions("cpu")


def test_kiln_functions_named_after_header_ops_match_the_header():
    """A name that looks like a generated fallback but is not in the header would never be called."""
    for device in DEVICES:
        declared = set(header_functions(device))
        own = {f"aoti_torch_{device}_{op}" for op in ("rms_norm_linear", "grouped_mm", "int8_linear", "int4_linear")}  # Kiln's own ops
        extra = {f for f in kiln_functions(device) if f.startswith(f"aoti_torch_{device}_")} - declared - own
        assert not extra, f"{device}: {sorted(extra)} are not declared by torch's c_shim_{device}.h"
