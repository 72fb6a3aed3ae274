"""Load test of Kiln served by Triton Inference Server, bounded in time and requests.

Exports two CPU programs, serves them with tritonserver on 127.0.0.1 and drives them with
CLIENTS concurrent gRPC requests (asyncio, one process), each phase stopping after SECONDS or
MAX_REQUESTS, whichever comes first. Prints per phase: requests, errors (wrong answers
included: every answer is checked against kiln.runtime), throughput, p50/p99 latency and the
server's resident memory before and after. Then two ratios:

  saturation  Triton + Kiln calls/s over in-process kiln.runtime calls/s on the wide program
              (16 rows a call), Triton without dynamic batching so both run the same calls;
              in-process uses as many threads as Triton has instances.
  batching    dynamic batching over no batching at CLIENTS clients, 1 row a request, on each
              program.

The clients run on the same machine as the server and take CPU from it.

Exits non-zero if any request failed or the server's memory grew by more than --max-rss-growth
over the measured phases. Run from the repository root after building:

  python3 bench/serving/triton_load.py [--seconds 10] [--clients 16] [--max-requests 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "serving"))
sys.path.insert(0, str(REPO / "python"))

import models  # noqa: E402
from triton_harness import TritonServer, write_model  # noqa: E402

# small: the tests' MLP (1 k parameters), where a call costs next to nothing and a request's
# cost is the server's and the client's handling. wide: 25 M parameters (100 MB of float32),
# where a call of one row reads every weight from memory and rows batched together share that
# read.
PROGRAMS = {
    "small": dict(width_in=models.IN_FEATURES, hidden=models.HIDDEN, width_out=models.OUT_FEATURES, layers=1),
    "wide": dict(width_in=1024, hidden=4096, width_out=1024, layers=2),
}
SATURATION_ROWS = 16


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


async def drive(url, model, inp, out, samples, expected, clients, seconds, max_requests):
    import tritonclient.grpc.aio as grpcaio
    from tritonclient.grpc import InferInput

    client = grpcaio.InferenceServerClient(url)
    latencies, errors = [], []
    sent = 0
    deadline = time.monotonic() + seconds

    async def worker(k):
        nonlocal sent
        n = 0
        while time.monotonic() < deadline and sent < max_requests:
            sent += 1
            s = (k + n) % len(samples)
            n += 1
            x = samples[s]
            i = InferInput(inp, list(x.shape), "FP32")
            i.set_data_from_numpy(x)
            start = time.perf_counter()
            try:
                result = await client.infer(model, [i])
            except Exception as e:  # every failure is counted and reported
                errors.append(str(e))
                continue
            latencies.append(time.perf_counter() - start)
            got = result.as_numpy(out)
            if got is None or not np.allclose(got, expected[s], rtol=1e-4, atol=1e-5):
                errors.append(f"wrong answer for sample {s}")

    start = time.monotonic()
    await asyncio.gather(*(worker(k) for k in range(clients)))
    elapsed = time.monotonic() - start
    await client.close()
    return latencies, errors, elapsed


def phase(server, name, model, rows, inp, out, samples, expected, args):
    rss_before = server.rss()
    latencies, errors, elapsed = asyncio.run(
        drive(server.grpc_url, model, inp, out, samples, expected, args.clients, args.seconds, args.max_requests))
    rss_after = server.rss()
    row = {
        "phase": name, "model": model, "rows": rows, "requests": len(latencies) + len(errors), "errors": len(errors),
        "seconds": round(elapsed, 2), "req_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50) * 1e3, 3), "p99_ms": round(percentile(latencies, 99) * 1e3, 3),
        "rss_before_mb": round(rss_before / 2**20, 1), "rss_after_mb": round(rss_after / 2**20, 1),
    }
    if errors:
        row["first_error"] = errors[0][:300]
    print(json.dumps(row), flush=True)
    return row


def in_process(path, samples, threads, seconds, max_calls):
    """kiln.runtime calls/s on `threads` threads sharing one module (num_models = threads)."""
    from kiln.runtime import Module

    module = Module(str(path))
    module.load({"aoti": {"num_models": threads, "num_threads": 1}})
    module.execute("forward", [samples[0]])
    counts = [0] * threads
    deadline = time.monotonic() + seconds
    total = [0]
    lock = threading.Lock()

    def loop(k):
        n = 0
        while time.monotonic() < deadline:
            with lock:
                if total[0] >= max_calls:
                    break
                total[0] += 1
            module.execute("forward", [samples[(k + n) % len(samples)]])
            n += 1
        counts[k] = n

    start = time.monotonic()
    ts = [threading.Thread(target=loop, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.monotonic() - start
    module.close()
    return sum(counts) / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="time limit of each phase")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--max-requests", type=int, default=5000, help="request limit of each phase")
    parser.add_argument("--instances", type=int, default=os.cpu_count() or 1,
                        help="Triton instances per model (and in-process threads)")
    parser.add_argument("--max-rss-growth", type=float, default=32.0, help="MB the server may grow by")
    parser.add_argument("--queue-delay-us", type=int, default=0,
                        help="the dynamic batcher's max_queue_delay_microseconds (0: batch what has queued)")
    args = parser.parse_args()

    from kiln.runtime import Module

    work = Path(tempfile.mkdtemp(prefix="kiln-triton-load-"))
    try:
        rng = np.random.default_rng(0)
        programs = {}
        for name, shape in PROGRAMS.items():
            path = work / f"{name}.kiln"
            models.export_mlp(path, models.mlp(**shape), width_in=shape["width_in"])
            samples = {rows: [rng.standard_normal((rows, shape["width_in"]), dtype=np.float32) for _ in range(16)]
                       for rows in (1, SATURATION_ROWS)}
            with Module(str(path)) as m:
                meta = m.method_meta("forward")
                expected = {rows: [m.execute("forward", [x])[0] for x in xs] for rows, xs in samples.items()}
            programs[name] = (path, shape, samples, expected)
        inp, out = meta.inputs[0].name, meta.outputs[0].name

        repo = work / "repository"
        common = (f'instance_group [{{ kind: KIND_CPU, count: {args.instances} }}]\n'
                  'parameters { key: "num_threads" value { string_value: "1" } }\n')
        for name, (path, shape, _, _) in programs.items():
            io = (f'input [{{ name: "{inp}", data_type: TYPE_FP32, dims: [{shape["width_in"]}] }}]\n'
                  f'output [{{ name: "{out}", data_type: TYPE_FP32, dims: [{shape["width_out"]}] }}]\n')
            # The same program three ways: the whole shape per request and no batching (the
            # calls in-process Kiln makes); batch dim without and with the dynamic batcher.
            write_model(repo, f"{name}_plain", path,
                        'backend: "kiln"\nmax_batch_size: 0\n'
                        f'input [{{ name: "{inp}", data_type: TYPE_FP32, dims: [-1, {shape["width_in"]}] }}]\n'
                        f'output [{{ name: "{out}", data_type: TYPE_FP32, dims: [-1, {shape["width_out"]}] }}]\n'
                        + common)
            write_model(repo, f"{name}_unbatched", path, 'backend: "kiln"\nmax_batch_size: 64\n' + io + common)
            write_model(repo, f"{name}_batched", path,
                        'backend: "kiln"\nmax_batch_size: 64\n'
                        f'dynamic_batching {{ max_queue_delay_microseconds: {args.queue_delay_us} }}\n' + io + common)

        sizes = {name: sum(p.numel() for p in models.mlp(**shape).parameters()) for name, shape in PROGRAMS.items()}
        print(f"machine: {os.cpu_count()} CPUs, shared by the server and the clients; programs (parameters): {sizes}; "
              f"{args.clients} clients; {args.instances} instances per model; phases of at most {args.seconds} s "
              f"and {args.max_requests} requests", flush=True)

        def measure_in_process(program, rows, when):
            path, _, samples, _ = programs[program]
            rate = in_process(path, samples[rows], args.instances, args.seconds, args.max_requests)
            print(json.dumps({"phase": f"in-process kiln.runtime ({when})", "model": program, "rows": rows,
                              "threads": args.instances, "calls_per_s": round(rate, 1)}), flush=True)
            return rate

        # Measured before and after the server's phases, and averaged: on a machine shared
        # with other work, one measurement alone may catch a busier moment. The small
        # program's one-row calls show what a request costs Triton next to a call.
        inproc = {key: [measure_in_process(*key, "before")] for key in (("wide", SATURATION_ROWS), ("small", 1))}

        plan = [("saturation", "wide_plain", "wide", SATURATION_ROWS)]
        for name in PROGRAMS:
            plan += [("no batching", f"{name}_unbatched", name, 1), ("dynamic batching", f"{name}_batched", name, 1)]
        results = {}
        with TritonServer(repo, work / "tritonserver.log") as server:
            # Warm-up: first calls, the server's pools and the clients' channels.
            saved = (args.seconds, args.max_requests)
            args.seconds, args.max_requests = min(2.0, args.seconds), 100
            for label, model, program, rows in plan:
                _, _, samples, expected = programs[program]
                phase(server, "warm-up", model, rows, inp, out, samples[rows], expected[rows], args)
            args.seconds, args.max_requests = saved
            rss_start = server.rss()
            for label, model, program, rows in plan:
                _, _, samples, expected = programs[program]
                results[model] = phase(server, label, model, rows, inp, out, samples[rows], expected[rows], args)
            rss_end = server.rss()

        for key, rates in inproc.items():
            rates.append(measure_in_process(*key, "after"))
        mean = {key: sum(rates) / len(rates) for key, rates in inproc.items()}
        errors = sum(r["errors"] for r in results.values())
        growth = (rss_end - rss_start) / 2**20
        summary = {"saturation_ratio": round(results["wide_plain"]["req_per_s"] / mean[("wide", SATURATION_ROWS)], 3),
                   "small_unbatched_over_in_process": round(
                       results["small_unbatched"]["req_per_s"] / mean[("small", 1)], 3)}
        for name in PROGRAMS:
            summary[f"batching_speedup_{name}"] = round(
                results[f"{name}_batched"]["req_per_s"] / results[f"{name}_unbatched"]["req_per_s"], 2)
        summary.update({"errors": errors, "rss_start_mb": round(rss_start / 2**20, 1),
                        "rss_end_mb": round(rss_end / 2**20, 1), "rss_growth_mb": round(growth, 1)})
        print(json.dumps(summary), flush=True)
        if errors or growth > args.max_rss_growth:
            sys.exit(1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
