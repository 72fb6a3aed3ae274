"""The checks inside the CUDA micro-benchmarks (bench/micro): kiln-gemm-bench exits non-zero when
a product took another path (GEMV kernel or cuBLASLt) than the one it times, kiln-attention-bench
when the planner does not pick the kernel a problem expects. Their timings go to
$OUT/<name>.log; PyTorch's numbers for the same shapes come from bench/micro/*_torch.py."""

from __future__ import annotations

import subprocess

import pytest

import gpu_support

pytestmark = gpu_support.cuda_only


@pytest.mark.parametrize("name", ["kiln-gemm-bench", "kiln-attention-bench"])
def test_micro_benchmark_checks(name, tmp_path):
    binary = gpu_support.build_file(name, f"build target {name.replace('-', '_')}")
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    (gpu_support.log_dir(tmp_path) / f"{name.replace('-', '_')}.log").write_text(output)
    print(output)
    assert proc.returncode == 0, f"{name} exited with {proc.returncode}:\n{output[-3000:]}"
