"""Kiln under compute-sanitizer, when it is installed (skipped otherwise):

  * the GEMV kernel's tests of cuda_device_test under memcheck and racecheck (small cases only:
    the sanitizers slow kernels down a lot; every block shape of the kernel, and batched
    products with permuted outputs);
  * Kiln programs under memcheck with leak checking, through the CLI (`kiln run` with random
    inputs), so only Kiln and the model library are checked, not torch: a memory-access error
    or a failed run fails the test; device allocations still live at exit are reported in the
    gpu_memcheck table with the function that made each (cuDNN/cuBLASLt handles are cached
    for the life of the process by design). The programs: KILN_GPU_MEMCHECK_PROGRAMS (paths
    separated by ':'), else a small MLP exported here.

Full logs go to $OUT when it is set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import torch

import gpu_support
import kiln

pytestmark = gpu_support.cuda_only

GIVEN = [p for p in os.environ.get("KILN_GPU_MEMCHECK_PROGRAMS", "").split(":") if p]
GEMV_SMALL = "CudaGemvKernel.*:Dtypes/CudaGemv.BmmAgainstTransposedBatchesMatchesReference/*"


@pytest.fixture(scope="module")
def sanitizer() -> str:
    found = shutil.which("compute-sanitizer")
    for candidate in ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if not found and os.access(candidate, os.X_OK):
            found = candidate
    if not found:
        pytest.skip("compute-sanitizer is not installed")
    return found


@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_gemv_kernel_under_sanitizer(sanitizer, tool, tmp_path):
    binary = gpu_support.gtest_binary("cuda_device_test")
    proc = subprocess.run([sanitizer, "--tool", tool, "--error-exitcode", "3", str(binary), f"--gtest_filter={GEMV_SMALL}"],
                          capture_output=True, text=True, timeout=150)
    output = proc.stdout + proc.stderr
    (gpu_support.log_dir(tmp_path) / f"sanitizer_{tool}.log").write_text(output)
    findings = [ln for ln in output.splitlines()
                if re.search(r"^\[  (FAILED|PASSED) |ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|hazard", ln)]
    assert proc.returncode == 0, f"{tool} exited with {proc.returncode}:\n" + "\n".join(findings[:30])


def _render(sec) -> str:
    lines = [f"{'program':<48} {'rc':>3} {'access errors':>13} {'live at exit':>12}  made by"]
    lines += [f"{r['program']:<48} {r['rc']:>3} {r['access_errors']:>13} {r['live_at_exit']:>12}  {r['origins']}"
              for r in sec.rows]
    return "\n".join(lines)


SECTION = gpu_support.section("gpu_memcheck", _render)


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(64, 256), torch.nn.Linear(256, 16)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def _program(which: str, tmp_path_factory) -> Path:
    if which != "mlp":
        return Path(which)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("memcheck") / "mlp.kiln"
    with torch.no_grad():
        ep = torch.export.export(_Mlp().cuda().eval(), (torch.randn(8, 64, device="cuda"),))
    kiln.export({"forward": ep}, backend="cuda", verbose=False).save(path)
    return path


@pytest.mark.parametrize("which", GIVEN or ["mlp"], ids=[Path(p).stem for p in GIVEN] or ["mlp"])
def test_program_under_memcheck(sanitizer, which, tmp_path, tmp_path_factory):
    cli = gpu_support.build_file("kiln", "the kiln CLI")
    program = _program(which, tmp_path_factory)
    proc = subprocess.run([sanitizer, "--tool", "memcheck", "--leak-check", "full", str(cli), "run", str(program),
                           "--repeat", "2"], capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    (gpu_support.log_dir(tmp_path) / f"memcheck_{program.stem}.log").write_text(log)
    summary = re.search(r"ERROR SUMMARY: (\d+)", log)
    assert summary, f"{program.stem} did not run under memcheck (rc={proc.returncode}):\n{log[-2000:]}"
    leaks = len(re.findall(r"^========= Leaked", log, re.M))
    access = int(summary.group(1)) - leaks
    # Who made what is still live: the allocating Kiln function, or the library handle's *Create.
    frames = []
    for block in re.findall(r"^========= Leaked.*(?:\n.*){0,12}", log, re.M):
        frames += re.findall(r"Host Frame: ([A-Za-z_:]*[a-z_]*Create|kiln::[A-Za-z_:]*)", block)
    origins = ", ".join(f"{n} {name}" for name, n in sorted(Counter(frames).items()))
    SECTION.add({"program": program.stem, "rc": proc.returncode, "access_errors": access, "live_at_exit": leaks,
                 "origins": origins})
    errors = re.findall(r"^========= (?:Invalid|Program hit).*(?:\n.*){0,8}", log, re.M)
    assert access == 0 and proc.returncode == 0, (
        f"{program.stem}: rc={proc.returncode}, {access} memory-access error(s):\n" + "\n".join(errors[:3]))
