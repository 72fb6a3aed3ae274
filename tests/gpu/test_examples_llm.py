"""examples/llm on a GPU: the random-weight Llama-style model's prefill + decode exported for CUDA
(configs tiny and 100m, fp32 and bf16), run by the C++ runner kiln-llm against eager PyTorch on
the GPU: greedy tokens and teacher-forced logits within each case's tolerance, and tokens/s of
both (llm_check.py has the details and the pass criteria). One test per config-dtype (select
with -k, e.g. -k "tiny and fp32"); the selected programs are exported first, in worker processes.
Then tests/python/test_llm_example.py runs with its program exported for CUDA.

Table gpu_llm; logs of each step under $OUT/logs. Options (environment):
  KILN_GPU_LLM_AUTOTUNE=1   export with GEMM autotuning (slower exports)
KILN_GPU_DEVICE=cpu runs the same checks with a CPU build.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import gpu_support
import llm_check

DEVICE = gpu_support.DEVICE
AUTOTUNE = os.environ.get("KILN_GPU_LLM_AUTOTUNE") == "1"
CASES = [(config, dtype) for config in llm_check.RUNS for dtype in llm_check.DTYPES]


def render(sec) -> str:
    header = (f"{'config':6} {'dtype':5} {'params':>7} {'tokens=':>7} {'1st diff':>8} {'logits err':>10} {'top1':>5} "
              f"{'result':6} | {'prefill tok/s':>13} {'(eager)':>9} | {'decode tok/s':>12} {'(eager)':>9} {'step ms':>8}")
    lines = [header, "-" * len(header)]
    for r in sec.rows:
        if "error" in r:
            lines.append(f"{r['config']:6} {r['dtype']:5} ERROR: {r['error']}")
            continue
        diff = "-" if r["first_token_difference"] is None else str(r["first_token_difference"])
        lines.append(
            f"{r['config']:6} {r['dtype']:5} {r['parameters_m']:>6}M {str(r['greedy_tokens_equal']):>7} {diff:>8} "
            f"{r['logits_rel_err']:>10.2e} {r['top1_agreement']:>5.2f} {'PASS' if r['pass'] else 'FAIL':6} | "
            f"{r['kiln_prefill_tok_s']:>13.0f} {r['eager_prefill_tok_s']:>9.0f} | {r['kiln_decode_tok_s']:>12.1f} "
            f"{r['eager_decode_tok_s']:>9.1f} {r['kiln_decode_step_ms']:>8.3f}")
    runs = llm_check.RUNS
    lines.append(f"\nprefill/decode tokens: tiny {runs['tiny']['prompt']}/{runs['tiny']['new'] - 1}, "
                 f"100m {runs['100m']['prompt']}/{runs['100m']['new'] - 1} (batch 1, one warm-up generation first)")
    return "\n".join(lines)


SECTION = gpu_support.section("gpu_llm", render)


@pytest.fixture(scope="module")
def llm(request, tmp_path_factory):
    """(kiln-llm, the logs directory, the work directory, (config, dtype) -> (program, export s) or
    the exception that ended its export)."""
    runner = gpu_support.build_file("kiln-llm", "examples are built by default")
    work = tmp_path_factory.mktemp("llm")
    out = gpu_support.out_dir()
    logs = (out or work) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    cases = gpu_support.selected_params(request, "test_llm", "case")
    jobs = {(c, d): (c, d, str(work / f"{c}_{d}"), AUTOTUNE, str(logs / f"export_{c}_{d}.log"), DEVICE)
            for c, d in cases}
    programs = gpu_support.export_in_workers(jobs, llm_check.export_worker, " ".join)
    return str(runner), logs, work, programs


@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_llm(llm, case):
    runner, logs, work, programs = llm
    config, dtype = case
    row = SECTION.add({"config": config, "dtype": dtype, "pass": False})
    exported = programs[case]
    if isinstance(exported, Exception):
        row["error"] = f"export failed: {exported}"
        pytest.fail(f"{row['error']} (log: {logs}/export_{config}_{dtype}.log)", pytrace=False)
    program, export_s = exported
    row["program"], row["export_s"] = program, round(export_s, 1)
    try:
        llm_check.check(config, dtype, program, runner, logs, work, row, DEVICE)
    except Exception as e:
        row["error"] = str(e)
        raise
    assert row["pass"], (f"{config} {dtype} on {row['device']}: logits relative error {row['logits_rel_err']:.2e} "
                         f"(tolerance {row['tolerance']}), greedy tokens equal {row['greedy_tokens_equal']}")


@gpu_support.cuda_only
def test_cpu_suite_llm_example_on_cuda(tmp_path):
    """tests/python/test_llm_example.py with its program exported for CUDA (one more export)."""
    cli = gpu_support.build_file("kiln", "the kiln CLI")
    runner = gpu_support.build_file("kiln-llm", "examples are built by default")
    env = dict(os.environ, KILN_LLM_DEVICE="cuda", KILN_CLI=str(cli), KILN_LLM=str(runner))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(gpu_support.REPO / "tests" / "python" / "test_llm_example.py")],
                          cwd=gpu_support.REPO, env=env, capture_output=True, text=True, timeout=1800)
    (gpu_support.log_dir(tmp_path) / "pytest_llm.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
