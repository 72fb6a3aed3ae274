"""The model zoo (tests/zoo/zoo_models.py) on CUDA: every architecture x dtype (bf16, fp32) x
export mode (triton-only: kiln.export(ep, "cuda", compile_specs={"triton_only": True}); fallbacks:
{"triton_only": False, "max_autotune": False}) exported for CUDA, run by Kiln on fresh inputs and compared with eager
PyTorch in the same dtype, within the GPU model suite's bounds (fp32 1e-3, bf16 2e-2).

Outcomes are those of the CPU zoo (tests/zoo/zoo_report.py): torch.export or Inductor failing
on their own is an xfail; missing fallback ops, an export only Kiln fails, a failed run or a
difference from eager fail. After the run the table is printed and, with OUT set, written to
$OUT/zoo_cuda.json, which `scripts/zoo_coverage.py --cuda` reads for docs/coverage.md.
The selected cases are exported first, in KILN_GPU_JOBS worker processes spread over the
visible GPUs; KILN_GPU_KEEP=DIR
keeps the programs (and KILN_GPU_REUSE=1 runs those already there)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import gpu_support

sys.path.insert(0, str(gpu_support.REPO / "tests" / "zoo"))

import zoo_report  # noqa: E402
from zoo_models import ZOO, first_line  # noqa: E402

pytestmark = gpu_support.cuda_only

# Fallbacks mode compiles without max-autotune: every GEMM then goes to Kiln's extern ops
# (the stricter test of its fallbacks), and the suite's exports take minutes, not an hour.
# Triton-only mode needs max-autotune: it is what makes Inductor write the GEMMs in Triton.
MODES = {"triton-only": {"triton_only": True}, "fallbacks": {"triton_only": False, "max_autotune": False}}
DTYPES = {"bf16": "bfloat16", "fp32": "float32"}
TOLERANCE = {"fp32": 1e-3, "bf16": 2e-2}
# What Kiln may be farther than eager from the wider model (zoo_report.compare): the bfloat16 rule
# of the MoE suite; for float32 the tolerance itself.
SLACK = {"fp32": 1e-3, "bf16": 5e-3}
KEEP = os.environ.get("KILN_GPU_KEEP")
REUSE = os.environ.get("KILN_GPU_REUSE") == "1"
CASES = [(name, dtype, mode) for name in ZOO for dtype in DTYPES for mode in MODES]


def _render(sec: gpu_support.Section) -> str:
    lines = ["Model zoo on CUDA (Kiln vs eager, same dtype)",
             f"{'model':<18} {'dtype':<5} {'mode':<12} {'result':<19} {'max rel err':>11}  detail", "-" * 110]
    for r in sec.rows:
        err = "-" if r["max_rel_error"] is None else f"{r['max_rel_error']:.2e}"
        detail = " ".join(str(r["detail"]).split())[:60]
        lines.append(f"{r['name']:<18} {r['dtype']:<5} {r['mode']:<12} {r['status']:<19} {err:>11}  {detail}")
    passed = sum(r["status"] == "pass" for r in sec.rows)
    lines.append(f"{passed}/{len(sec.rows)} pass")
    return "\n".join(lines)


SECTION = gpu_support.section("zoo_cuda", _render)


def _export_worker(name: str, dtype: str, mode: str, path: str) -> dict:
    from zoo_models import export_model

    return export_model(name, path, "cuda", compile_specs=MODES[mode], dtype=DTYPES[dtype])


@pytest.fixture(scope="module")
def programs(request, tmp_path_factory) -> dict[tuple, dict]:
    workdir = Path(KEEP) if KEEP else tmp_path_factory.mktemp("zoo_cuda")
    workdir.mkdir(parents=True, exist_ok=True)
    cases = gpu_support.selected_params(request, "test_zoo_cuda", "case")
    paths = {c: workdir / "{}_{}_{}.kiln".format(*c) for c in cases}
    jobs = {c: (*c, str(paths[c])) for c in cases if not (REUSE and paths[c].is_file())}
    gpus = gpu_support.visible_gpus()
    results = zoo_report.export_all(jobs, _export_worker, gpu_support.JOBS, gpus=gpus)
    # Many exports autotuning on one GPU at once can exhaust its memory: those run again alone.
    retry = {c: jobs[c] for c, r in results.items() if r["status"] == "out_of_memory"}
    results.update(zoo_report.export_all(retry, _export_worker, 1, gpus=gpus))
    reused = {"status": "ok", "detail": "", "missing": [], "export_s": None}
    return {c: {**results.get(c, reused), "path": paths[c]} for c in cases}


@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_zoo_cuda(case, programs):
    import torch

    from kiln.runtime import Module

    name, dtype, mode = case
    exported = programs[case]
    row = SECTION.add({"name": name, "family": ZOO[name].family, "kind": ZOO[name].kind, "dtype": dtype,
                       "mode": mode, "status": exported["status"], "detail": exported["detail"],
                       "missing": exported["missing"], "export_s": exported["export_s"], "max_rel_error": None,
                       "tolerance": TOLERANCE[dtype]})
    if row["status"] in zoo_report.XFAIL:
        pytest.xfail(f"{zoo_report.OUTCOMES[row['status']]}: {row['detail']}")
    if row["status"] == "missing_ops":
        pytest.fail(f"{name} {dtype} {mode}: Kiln lacks CUDA fallback ops: {', '.join(row['missing'])}",
                    pytrace=False)
    if row["status"] != "ok":
        pytest.fail(f"{name} {dtype} {mode}: {row['detail']}", pytrace=False)

    built = ZOO[name].factory(getattr(torch, DTYPES[dtype]), torch.device("cuda"))
    fresh = built.fresh()
    assert len(fresh) >= 2
    try:
        module = Module(str(exported["path"]))
        module.load()

        def run(inputs):
            out = module.execute("forward", list(inputs), output="torch")
            gpu_support.sync()
            return out

        notes: list[str] = []
        inductor_notes: list[str] = []
        reference = _wider_reference(built.module, torch.float64 if dtype == "fp32" else torch.float32)
        row["max_rel_error"], problems = zoo_report.compare(
            built.module, fresh, run, TOLERANCE[dtype], reference, notes, slack=SLACK[dtype],
            inductor=_inductor_compiled(built.module), inductor_notes=inductor_notes)
    except Exception as e:
        row.update(status="run_failed", detail=first_line(e))
        raise
    row["status"] = "mismatch" if problems else "inductor_mismatch" if inductor_notes else "pass"
    row["detail"] = "; ".join(problems or inductor_notes or notes)
    assert not problems, f"{name} {dtype} {mode}: " + "; ".join(problems)
    if inductor_notes:
        pytest.xfail(f"{zoo_report.OUTCOMES['inductor_mismatch']}: {row['detail']}")


def _inductor_compiled(model):
    """torch.compile of the model (Inductor's code generation without Kiln or AOT packaging),
    built only when an output is farther from the wider model than eager's."""
    built = []

    def run(inputs):
        import torch

        if not built:
            built.append(torch.compile(model))
        return built[0](*inputs)

    return run


def _wider_reference(model, dtype):
    """The same model with its weights widened exactly to `dtype`, called with floating inputs
    widened, built only when an output is over the tolerance: how far eager's own run is from it
    is the measure Kiln's is held to."""
    import copy

    built = []

    def run(inputs):
        import torch

        if not built:
            built.append(copy.deepcopy(model).to(dtype))
        return built[0](*(x.to(dtype) if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs))

    return run
