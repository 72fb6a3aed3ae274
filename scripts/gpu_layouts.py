"""Inputs of any layout on a GPU: the CUDA side of tests/python/test_input_layouts.py.

Exports, with kiln.export(..., backend="cuda") on this machine's torch, the models of
tests/python/layout_cases.py: the two-input model (a matmul, elementwise ops, a reduction;
dynamic rows) in float32, float32 compiled for a column-major ``b`` (a transposed example),
bfloat16, float16 and int64, a convolution exported with a channels_last example, and a method
that adds into its first input in place. Then runs each in Kiln on fresh random inputs in every
layout of layout_cases.LAYOUTS (transposed, Fortran order, every other column or row,
broadcast with stride 0, offset views, a view one element past an aligned allocation,
contiguous) as host tensors (torch and numpy) and as device tensors, with and without
aoti.cuda_graphs, and compares with eager PyTorch on the GPU on the same logical values. The
method that writes its input in place must update a device cache in the compiled layout and
refuse, by name, a transposed or misaligned one.

Prints one table (check, max relative error, pass/fail), writes it and JSON under --out, and
exits 1 if any row fails. Run through scripts/gpu-suite (after the model suite) or alone:

    python3 scripts/gpu_layouts.py --out /tmp/gpu-layouts       (KILN_LIBRARY: the CUDA build)
    python3 scripts/gpu_layouts.py --device cpu --out /tmp/x     dry run of the same steps on the CPU
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "tests" / "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import kiln  # noqa: E402
from kiln.runtime import KilnError, Module  # noqa: E402
from layout_cases import (COLS, LAYOUTS, OUT, TOLERANCE, Accumulate, Conv, eager, export_mixed,  # noqa: E402
                          model_for, numpy_layout, random_tensor, relative_error, torch_layout)

ROWS = 7
DTYPES = ("float32", "bfloat16", "float16", "int64")


def log(message: str) -> None:
    print(f"[gpu-layouts] {message}", flush=True)


class Report:
    def __init__(self):
        self.rows: list[dict] = []

    def add(self, check: str, err: float | None, ok: bool, note: str = "") -> None:
        self.rows.append({"check": check, "max_rel_err": err, "ok": bool(ok), "note": note})
        if not ok:
            log(f"FAIL {check}: {err} {note}")

    def guarded(self, check: str, fn) -> None:
        """fn() -> (err, ok, note); an exception is a failed row with its message."""
        try:
            err, ok, note = fn()
        except Exception as e:  # noqa: BLE001 - every failure becomes a row, the script goes on
            traceback.print_exc()
            err, ok, note = None, False, f"{type(e).__name__}: {str(e)[:300]}"
        self.add(check, err, ok, note)

    def table(self) -> str:
        lines = [f"{'check':<58} {'max rel err':>11}  result  note", "-" * 100]
        for r in self.rows:
            err = "-" if r["max_rel_err"] is None else f"{r['max_rel_err']:.2e}"
            lines.append(f"{r['check']:<58} {err:>11}  {'pass' if r['ok'] else 'FAIL':<6}  {r['note'][:100]}")
        return "\n".join(lines)


def compare(got, want, rtol: float):
    errs = [relative_error(torch.as_tensor(g) if not isinstance(g, torch.Tensor) else g, w)
            for g, w in zip(got, want)]
    err = max(errs) if errs else float("inf")
    ok = len(got) == len(want) and err <= rtol
    return err, ok, "" if ok else f"{len(got)} outputs for {len(want)}; errors {errs}"


class Runner:
    def __init__(self, device: str, work: Path, report: Report):
        self.device = device
        self.work = work
        self.report = report
        self.on_gpu = device == "cuda"

    def export(self) -> Path:
        torch.manual_seed(0)
        methods = {}
        for dtype in DTYPES:
            methods[dtype] = export_mixed(dtype, self.device)
        methods["float32_colmajor_b"] = export_mixed("float32", self.device, transposed_b=True)
        self.conv = Conv().eval().to(self.device)
        image = torch.randn(2, 3, 8, 8, device=self.device).contiguous(memory_format=torch.channels_last)
        methods["conv"] = torch.export.export(self.conv, (image,))
        zeros = torch.zeros(4, 6, device=self.device)
        methods["accumulate"] = torch.export.export(Accumulate(), (zeros, zeros.clone()))
        path = self.work / "layouts.kiln"
        start = time.perf_counter()
        kiln.export(methods, backend=self.device, verbose=True).save(path)
        log(f"exported {len(methods)} methods in {time.perf_counter() - start:.0f} s")
        return path

    def origins(self, dtype: str):
        """(name, make(x, layout) -> (view, logical on the compute device))."""
        dev = self.device

        def host_torch(x, layout):
            view, logical = torch_layout(x, layout)
            return view, logical.to(dev)

        def host_numpy(x, layout):
            view, logical = numpy_layout(x.numpy(), layout)
            return view, torch.from_numpy(np.ascontiguousarray(logical)).to(dev)

        def device_torch(x, layout):
            return torch_layout(x, layout, dev)

        out = [("host torch", host_torch)]
        if dtype not in ("bfloat16",):
            out.append(("host numpy", host_numpy))
        if self.on_gpu:
            out.append(("device torch", device_torch))
        return out

    def run_mixed(self, module: Module, method: str, dtype: str, label: str, repeats: int = 1) -> None:
        model = model_for(dtype)
        for origin, make in self.origins(dtype):
            for li, layout in enumerate(LAYOUTS):
                def check(origin=origin, make=make, layout=layout, li=li):
                    worst, note = 0.0, ""
                    for r in range(repeats):
                        seed = 1000 * li + 10 * r
                        a = random_tensor((ROWS, COLS), dtype, seed)
                        b = random_tensor((COLS, OUT), dtype, seed + 1)
                        (va, la), (vb, lb) = make(a, layout), make(b, layout)
                        got = module.execute(method, [va, vb], output="torch")
                        err, ok, note = compare(got, eager(model, la, lb), TOLERANCE[dtype])
                        worst = max(worst, err)
                        if not ok:
                            return worst, False, f"call {r}: {note}"
                    return worst, True, ""

                self.report.guarded(f"{label} {origin} {layout}", check)

    def run_conv(self, module: Module) -> None:
        order = module.method_meta("conv").inputs[0].dim_order
        self.report.add("conv records channels_last", None, order == (0, 2, 3, 1), f"dim_order {order}")
        x = random_tensor((2, 3, 8, 8), "float32", 7)
        want = eager(self.conv, x.to(self.device))
        inputs = {"host contiguous": x, "host channels_last": x.contiguous(memory_format=torch.channels_last),
                  "host numpy": x.numpy()}
        if self.on_gpu:
            d = x.to(self.device)
            sliced = torch.full((2, 3, 8, 16), float("nan"), device=self.device)
            sliced[..., ::2] = d
            inputs.update({"device contiguous": d,
                           "device channels_last": d.contiguous(memory_format=torch.channels_last),
                           "device sliced": sliced[..., ::2]})
        for what, value in inputs.items():
            self.report.guarded(f"conv {what}",
                                lambda value=value: compare(module.execute("conv", [value], output="torch"), want,
                                                            1e-4))

    def run_accumulate(self, module: Module) -> None:
        dev = self.device
        start = random_tensor((4, 6), "float32", 90).to(dev)
        x = random_tensor((4, 6), "float32", 91).to(dev)

        def in_layout():
            # A view two rows into its storage: 48 bytes, so still 16-byte aligned
            # (one row, 24 bytes, would be refused as misaligned on a GPU).
            base = torch.full((6, 6), -7.0, device=dev)
            base[2:] = start
            cache = base[2:]
            (got,) = module.execute("accumulate", [cache, x], output="torch")
            err_cache = relative_error(cache, start + x)
            err_out = relative_error(got.to(dev), ((start + x) * 2).sum(dim=1))
            ok = err_cache <= 1e-6 and err_out <= 1e-5 and bool((base[:2] == -7.0).all())
            return max(err_cache, err_out), ok, "" if ok else "the in-place update did not reach the caller's cache"

        self.report.guarded("accumulate: cache in its layout, updated in place", in_layout)

        def refused(view, expected):
            def check():
                try:
                    module.execute("accumulate", [view, x])
                except KilnError as e:
                    ok = e.status == "InvalidArgument" and "'cache'" in e.message and expected in e.message
                    return None, ok, e.message[:200]
                return None, False, "not refused"
            return check

        if self.on_gpu:
            transposed = torch.empty(6, 4, device=dev).t()
            transposed.copy_(start)
            self.report.guarded("accumulate: transposed device cache refused",
                                refused(transposed, "in place"))
            flat = torch.zeros(25, device=dev)
            misaligned = flat[1:].view(4, 6)
            self.report.guarded("accumulate: misaligned device cache refused",
                                refused(misaligned, "16-byte boundary"))
        else:
            self.report.guarded("accumulate: transposed cache refused",
                                refused(start.t().contiguous().t(), "in place"))

    def run_all(self, path: Path) -> None:
        module = Module(path)
        module.load()
        colmajor = module.method_meta("float32_colmajor_b").inputs[1].dim_order
        self.report.add("transposed example records dim order (1, 0)", None, colmajor == (1, 0),
                        f"dim_order {colmajor}")
        for dtype in DTYPES:
            self.run_mixed(module, dtype, dtype, dtype)
        self.run_mixed(module, "float32_colmajor_b", "float32", "float32 column-major b")
        self.run_conv(module)
        self.run_accumulate(module)
        if self.on_gpu:
            # Graphs are keyed by the inputs after they are laid out: every layout of a shape
            # shares a recording, and replays read the views they are given.
            graphs = Module(path)
            graphs.load({"aoti": {"cuda_graphs": True}})
            self.run_mixed(graphs, "float32", "float32", "float32 cuda_graphs", repeats=3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--out", default=os.environ.get("OUT") or "/tmp/gpu-layouts-out")
    parser.add_argument("--work", default=None,
                        help="where the exported program is kept (default: a temporary directory, removed at the end)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        log("torch.cuda is not available: run on the GPU machine, or pass --device cpu for the dry run")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # eager fp32 in full precision, as Kiln's cuBLASLt calls
    torch.backends.cudnn.allow_tf32 = False
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work or tempfile.mkdtemp(prefix="kiln_gpu_layouts_"))
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    report = Report()
    runner = Runner(args.device, work, report)
    try:
        runner.run_all(runner.export())
    except Exception as e:  # noqa: BLE001 - the export itself failed: one failed row
        traceback.print_exc()
        report.add("export and load", None, False, f"{type(e).__name__}: {str(e)[:300]}")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    ok = bool(report.rows) and all(r["ok"] for r in report.rows)
    table = report.table()
    print(table, flush=True)
    (out / "gpu_layouts_table.txt").write_text(table + "\n")
    (out / "gpu_layouts.json").write_text(json.dumps(
        {"device": args.device, "torch": torch.__version__, "rows": report.rows, "ok": ok,
         "wall_s": round(time.perf_counter() - start, 1)}, indent=1))
    log(f"{'PASS' if ok else 'FAIL'}: {sum(r['ok'] for r in report.rows)}/{len(report.rows)} rows pass")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
