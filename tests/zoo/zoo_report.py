"""What the zoo tests share: the comparison with eager, the outcome of a model in words, the
report rows, and parallel exports. Used by tests/zoo (CPU) and tests/gpu/test_zoo_cuda.py."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from typing import Any, Callable

#: One row per model (and per dtype/mode on CUDA), added by the tests as they run.
ROWS: list[dict] = []

#: Outcome -> what it means; `xfail` outcomes are failures of torch.export or Inductor
#: themselves, which PyTorch's own AOTI loader would hit too.
OUTCOMES = {
    "pass": "Kiln matches eager",
    "export_failed": "torch.export fails (xfail)",
    "inductor_failed": "AOTInductor fails, stock packaging too (xfail)",
    "missing_ops": "Kiln lacks fallback ops",
    "kiln_export_failed": "kiln.export fails where stock AOTInductor compiles",
    "run_failed": "Kiln fails to load or run the program",
    "mismatch": "Kiln differs from eager",
    "out_of_memory": "the export ran out of GPU memory (too many exports at once)",
    "inductor_mismatch": "Inductor's own compile (torch.compile) is as far from the model (xfail)",
}
XFAIL = ("export_failed", "inductor_failed", "inductor_mismatch")


def relative_error(actual, expected) -> float:
    """max |actual - expected| / max |expected| (floored at 1e-6), in float64."""
    actual, expected = actual.double(), expected.double()
    scale = max(expected.abs().max().item(), 1e-6)
    return (actual - expected).abs().max().item() / scale


def compare(model, fresh_inputs: list[tuple], run_kiln: Callable[[tuple], list], tolerance: float,
            reference: Callable[[tuple], list] | None = None,
            notes: list[str] | None = None, slack: float = 5e-3,
            inductor: Callable[[tuple], list] | None = None,
            inductor_notes: list[str] | None = None) -> tuple[float, list[str]]:
    """Runs eager and Kiln on every input tuple; returns (max relative error, problems) where a
    problem is a wrong output count, shape, dtype, a non-finite Kiln output where eager's is
    finite, or an error over `tolerance`.

    `reference` gives the same model's outputs in a wider dtype (float32 for a bfloat16 run,
    float64 for a float32 one). An output over `tolerance` is then accepted when Kiln is about
    as close to that wider model as eager is (within 1.5x eager's distance + `slack`; 5e-3 is
    the MoE suite's rule for bfloat16): a bfloat16 model whose routing or masks tie within
    rounding, or an ill-conditioned float32 one whose reductions run in another order than
    eager's, differs from eager by more than the bound while being no less accurate. Each output
    accepted that way adds a line to `notes`.

    `inductor` gives the outputs of Inductor's own compile of the model (torch.compile). An
    output still over both bounds is no problem of Kiln's when Inductor's is as far from the
    wider model (Kiln within 1.5x its distance + `slack`): PyTorch's own loader runs the same
    generated code. Each such output adds a line to `inductor_notes` instead of `problems`."""
    import torch

    problems, worst = [], 0.0
    for inputs in fresh_inputs:
        with torch.no_grad():
            expected = model(*inputs)
        expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        actual = run_kiln(inputs)
        exact = compiled = None
        sizes = "x".join(str(tuple(x.shape)) for x in inputs)
        if len(actual) != len(expected):
            problems.append(f"inputs {sizes}: {len(actual)} outputs, eager has {len(expected)}")
            continue
        for i, (a, e) in enumerate(zip(actual, expected)):
            a = a.to(e.device)
            if a.shape != e.shape or a.dtype != e.dtype:
                problems.append(f"inputs {sizes} output {i}: {a.dtype}{tuple(a.shape)}, eager {e.dtype}{tuple(e.shape)}")
                continue
            if bool(torch.isfinite(e).all()) and not bool(torch.isfinite(a).all()):
                problems.append(f"inputs {sizes} output {i}: non-finite values where eager's are finite")
                worst = float("inf")
                continue
            err = relative_error(a, e)
            worst = max(worst, err)
            if err <= tolerance:
                continue
            if reference is not None:
                if exact is None:
                    with torch.no_grad():
                        exact = reference(inputs)
                    exact = list(exact) if isinstance(exact, (tuple, list)) else [exact]
                kiln_err, eager_err = relative_error(a, exact[i]), relative_error(e, exact[i])
                wider = str(exact[i].dtype).removeprefix("torch.")
                if kiln_err <= 1.5 * eager_err + slack:
                    if notes is not None:
                        notes.append(f"inputs {sizes} output {i}: {err:.3g} from eager, but as close to the "
                                     f"{wider} model ({kiln_err:.3g}) as eager ({eager_err:.3g})")
                    continue
                if inductor is not None:
                    if compiled is None:
                        with torch.no_grad():
                            compiled = inductor(inputs)
                        compiled = list(compiled) if isinstance(compiled, (tuple, list)) else [compiled]
                    inductor_err = relative_error(compiled[i].to(exact[i].device), exact[i])
                    if kiln_err <= 1.5 * inductor_err + slack:
                        if inductor_notes is not None:
                            inductor_notes.append(
                                f"inputs {sizes} output {i}: {kiln_err:.3g} from the {wider} model, eager "
                                f"{eager_err:.3g}, Inductor's torch.compile {inductor_err:.3g}")
                        continue
                problems.append(f"inputs {sizes} output {i}: relative error {err:.3g} > {tolerance:g}, "
                                f"{kiln_err:.3g} from the {wider} model (eager {eager_err:.3g})")
                continue
            problems.append(f"inputs {sizes} output {i}: relative error {err:.3g} > {tolerance:g}")
    return worst, problems


def export_all(jobs: dict[Any, tuple], worker: Callable, workers: int, log: Callable[[str], None] = print,
               gpus: list[str] | None = None) -> dict:
    """worker(*args) for every key -> args of `jobs` in `workers` spawned processes (each export
    gets a fresh Inductor; a crash takes down one worker, not the test run). With `gpus` (CUDA
    device ids), the workers take them in turn, so that many exports autotuning at once share
    the memory of every GPU instead of exhausting the first. Returns key -> the worker's result
    dict, or {status: kiln_export_failed, detail} where the worker died."""
    results: dict[Any, Any] = {}
    if not jobs:
        return results
    ctx = multiprocessing.get_context("spawn")
    turn = ctx.Value("i", 0)
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, min(workers, len(jobs))), mp_context=ctx,
                                                initializer=_worker_init, initargs=(gpus or [], turn)) as pool:
        futures = {pool.submit(worker, *args): key for key, args in jobs.items()}
        for fut in concurrent.futures.as_completed(futures):
            key = futures[fut]
            try:
                results[key] = fut.result()
            except Exception as e:  # noqa: BLE001 - the worker died (segfault, out of memory)
                results[key] = {"status": "kiln_export_failed", "detail": f"export worker died: {e}",
                                "missing": [], "export_s": None}
            r = results[key]
            log(f"[kiln zoo] exported {key}: {r['status']} {r.get('export_s') or ''} {r['detail'][:120]}".rstrip())
    return results


def _worker_init(gpus: list[str], turn) -> None:
    if gpus:
        with turn.get_lock():
            index, turn.value = turn.value, turn.value + 1
        # Before torch starts CUDA in this process.
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
    # Two export processes share the machine's cores: Inductor's own pool of compile
    # subprocesses per worker would only add start-up time and contention.
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
