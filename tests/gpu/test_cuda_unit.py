"""The CUDA unit test binaries of the build (tests/devices/cuda), on the GPU: each must exit 0.

cuda_device_test runs in three parts, so that each of its tests runs once: the GEMM/GEMV tests
(GEMV and cuBLASLt cases against a double reference, the path each product took, the algorithm
cache under concurrent callers) and the attention tests (tensor-core kernel against a
double-precision reference, the planner's choices, the SDPA shims), where a skipped test counts
as a failure (none has a reason to skip on a working GPU), and everything else. Then
cuda_execute_test (the execute path with stand-in model libraries) and lt_algo_cache_test (the
cuBLASLt algorithm cache's host side). Each binary's output goes to $OUT/<name>.log when OUT is
set; a failing test shows its tail.
"""

from __future__ import annotations

import re
import subprocess

import pytest

import gpu_support

pytestmark = gpu_support.cuda_only

GEMM_FILTER = "*CudaGemm*:*CudaGemv*"
# A leading * because parametrised tests are named <instantiation>/<suite>.<test>/<param>
# (Dtypes/CudaAttention..., HalfTypes/CudaAttentionTensorCores...).
ATTENTION_FILTER = "*CudaAttention*"


def run_gtest(name: str, log_name: str, tmp_path, *args: str, timeout: int = 600) -> str:
    """Runs the gtest binary `name` with args, writes its output to the log, asserts exit 0
    and returns the output."""
    binary = gpu_support.gtest_binary(name)
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    (gpu_support.log_dir(tmp_path) / f"{log_name}.log").write_text(output)
    if proc.returncode != 0:
        failed = [ln for ln in output.splitlines() if re.match(r"\[  FAILED  \] \S", ln)]
        pytest.fail(f"{binary.name} {' '.join(args)} exited with {proc.returncode}; failed:\n"
                    + "\n".join(failed[:40]) + "\n--- tail of the output ---\n" + output[-3000:], pytrace=False)
    return output


def skipped_tests(output: str) -> list[str]:
    return sorted({re.sub(r" \(\d+ ms\)$", "", ln) for ln in output.splitlines() if re.match(r"\[  SKIPPED \] \S", ln)})


def test_cuda_device_test(tmp_path):
    run_gtest("cuda_device_test", "cuda_device_test", tmp_path, f"--gtest_filter=-{GEMM_FILTER}:{ATTENTION_FILTER}",
              "--gtest_brief=1")


def test_cuda_device_test_gemm_and_gemv(tmp_path):
    output = run_gtest("cuda_device_test", "gemm_tests", tmp_path, f"--gtest_filter={GEMM_FILTER}")
    assert not skipped_tests(output), f"skipped GEMM tests (a skip is not a pass): {skipped_tests(output)}"


def test_cuda_device_test_attention(tmp_path):
    binary = gpu_support.gtest_binary("cuda_device_test")
    listed = subprocess.run([str(binary), f"--gtest_filter={ATTENTION_FILTER}", "--gtest_list_tests"],
                            capture_output=True, text=True, timeout=120, check=True).stdout
    want = sum(1 for ln in listed.splitlines() if ln.startswith("  "))
    output = run_gtest("cuda_device_test", "attention_tests", tmp_path, f"--gtest_filter={ATTENTION_FILTER}")
    assert not skipped_tests(output), f"skipped attention tests (a skip is not a pass): {skipped_tests(output)}"
    assert re.search(rf"^\[  PASSED  \] {want} tests?\.$", output, re.M), f"not all {want} attention tests passed"


def test_cuda_execute_test(tmp_path):
    run_gtest("cuda_execute_test", "cuda_execute_test", tmp_path, "--gtest_brief=1", timeout=300)


def test_lt_algo_cache_test(tmp_path):
    run_gtest("lt_algo_cache_test", "lt_algo_cache_test", tmp_path)
