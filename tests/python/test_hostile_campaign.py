"""The hostile-user campaign (fuzz/campaign.py) in its quick form, and reproducers of the bugs
it found that are not fixed yet.

The quick campaign exports one real CPU program (five methods) and makes a few hundred
attempts against it, plus the exhaustive single-byte flips and truncations of a small signed
program (about 17,000 loads): every input layout, hostile tensors through the C API and
DLPack, written inputs, signatures, files changed under a loaded Module, paths that are not
regular files, hostile program headers and FlatBuffers, hostile .pt2 packages, load options,
key files and .npy inputs, and threads.
Each attempt must be a correct result or a named error; a wrong result, crash, hang or
signature bypass fails the test unless it is one of the campaign's KNOWN_BUGS, each of which
has an xfail(strict=True) reproducer below (so fixing one turns its test red until the entry
is removed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CAMPAIGN = REPO / "fuzz" / "campaign.py"

# Every category of the campaign that the quick form runs, each of which must make attempts.
QUICK_CATEGORIES = {
    "input layouts", "input contract", "embedding indices", "inputs written in place",
    "signed flips, small (load)", "signed truncations, small (load)", "signed flips, small (kiln verify)",
    "signed truncations, small (kiln verify)", "signed flips, real (load+run)", "signed flips, real (kiln verify)",
    "signed truncations, real (load)", "signed external data (verify, run)", "unsigned corruption",
    "unsigned truncations (load+run)", "rewritten after load", "sticky policy (Python)", "sticky policy (C API)",
    "sticky policy (C++)", "files changed under a Module", "non-regular paths (CLI)", "non-regular paths (Python)",
    "program structure", "program structure (Python reader)", "program structure (kiln inspect)",
    ".pt2 packages (CLI)", ".pt2 packages (Module)", "load options", "key files and forged signatures",
    ".npy inputs (kiln run)", "threads", "tmp-residue",
}
FAILURES = ("wrong", "crash", "hang", "bypass")


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "python")] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def test_quick_campaign_finds_no_new_failure(tmp_path):
    report = tmp_path / "campaign.json"
    proc = subprocess.run([sys.executable, str(CAMPAIGN), "--quick", "--json", str(report)], capture_output=True,
                          text=True, timeout=600, env=_env())
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(report.read_text())
    categories = result["categories"]
    missing = QUICK_CATEGORIES - set(categories)
    assert not missing, f"categories that made no attempt: {sorted(missing)}"
    for name, c in categories.items():
        assert c["attempts"] > 0, name
        assert c["attempts"] == sum(c[o] for o in ("correct", "error", "ran", *FAILURES)), name
    # Every failure that is not a known bug, with the campaign's own words for it.
    new = {name: [f for f in c["failures"] if not f["known"]] for name, c in categories.items()
           if c["unexplained"] and name not in result["informational"]}
    assert result["unexplained_failures"] == 0 and not new, json.dumps(new, indent=1)[:4000]
    assert proc.returncode == 0, proc.stdout[-3000:]


# ---- reproducers of the known bugs (fuzz/campaign.py KNOWN_BUGS) ----------------------------------


@pytest.fixture(scope="module")
def embed_program(tmp_path_factory):
    import torch

    import kiln

    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Embedding(10, 4)

        def forward(self, ids):
            return self.table(ids) * 2

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("embed") / "embed.kiln"
    length = torch.export.Dim("length", min=1, max=256)
    ep = torch.export.export(Embed().eval(), (torch.tensor([1, 2, 3]),), dynamic_shapes=({0: length},))
    kiln.export(ep, backend="cpu", verbose=False).save(str(path))
    return path


@pytest.mark.xfail(strict=True, reason=(
    "known bug check-then-read: Kiln's aoti_torch_check (src/shims/common/misc_shims.cpp) records the failed "
    "index check and returns, so the compiled kernel reads table[2**31] and the process dies of SIGSEGV"))
@pytest.mark.parametrize("threads", [1, 2])
def test_an_embedding_index_far_out_of_range_is_an_error_not_a_crash(embed_program, threads):
    child = textwrap.dedent("""
        import sys
        import numpy as np
        from kiln.runtime import KilnError, Module
        m = Module(sys.argv[1])
        m.load({"aoti": {"num_threads": int(sys.argv[2])}})
        try:
            m.forward(np.array([2**31], dtype=np.int64))
        except KilnError as e:
            print("ERROR", e.status)
            sys.exit(0)
        print("RAN")
        sys.exit(1)
    """)
    proc = subprocess.run([sys.executable, "-c", child, str(embed_program), str(threads)], capture_output=True,
                          text=True, timeout=120, env=_env())
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stdout}{proc.stderr[-500:]}"
    assert "ERROR BackendFailed" in proc.stdout


def test_the_python_reader_refuses_a_fifo_by_name(tmp_path):
    fifo = tmp_path / "program.kiln"
    os.mkfifo(fifo)
    child = "import sys\nfrom kiln import program\ntry:\n    program.load(sys.argv[1])\nexcept (ValueError, OSError) " \
            "as e:\n    print('ERROR', e)\n"
    try:
        # Python starts and reads a header in well under a second; a FIFO with no writer never answers.
        proc = subprocess.run([sys.executable, "-c", child, str(fifo)], capture_output=True, text=True, timeout=8,
                              env=_env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"kiln.program.load({str(fifo)!r}) did not return in 8 s")
    assert proc.returncode == 0 and str(fifo) in proc.stdout and "FIFO" in proc.stdout, proc.stdout + proc.stderr
