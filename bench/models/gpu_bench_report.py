"""Turns bench/models/gpu_bench.py's results dict into target ratios and a Markdown report.

Pure functions over the JSON-able results (no torch), so they are unit-tested on any
machine and can re-render a report from a saved gpu_bench.json:

    python3 bench/models/gpu_bench_report.py a/gpu_bench.json b/gpu_bench.json --json-out all.json > all.md
"""

from __future__ import annotations

import json
import sys

# The performance targets: (name, goal text, comparison, threshold).
PER_CALL_GOAL = 1.00  # Kiln p50 / AOTI loader p50, every model
GRAPHS_VS_LOADER_GOAL = 0.80  # Gemma3 decode, Kiln with CUDA graphs / loader
GRAPHS_SPEEDUP_GOAL = 1.30  # Kiln without graphs / Kiln with graphs
ROOFLINE_GOAL = 0.80  # decode bytes per token / p50, over measured copy bandwidth
COLD_START_GOAL = 0.10  # kiln run / python + aoti_load_package
WEIGHTS_GOAL = 0.70  # Module.load GB/s over pinned host-to-device GB/s, blobs >= 1 GB
WEIGHTS_MIN_BYTES = 1e9


def _p50(model: dict, engine: str, point: str) -> float | None:
    row = (model.get("engines") or {}).get(engine) or {}
    if row.get("error"):
        return None
    return ((row.get("points") or {}).get(point) or {}).get("p50_ms")


def _p50_paired(model: dict, engine: str, point: str) -> tuple[float | None, str]:
    """The engine's p50 for a ratio target: from the interleaved head-to-head timing
    when the run made one (gpu_bench.head_to_head: the engines called in turn, so a
    drift of the machine's speed falls on all of them), else from its own run."""
    h2h = model.get("interleaved") or {}
    if not h2h.get("error"):
        p50 = (((h2h.get("points") or {}).get(point) or {}).get(engine) or {}).get("p50_ms")
        if p50 is not None:
            return p50, "interleaved"
    return _p50(model, engine, point), "sequential"


def _target(name, model, measured, goal, lower_is_better, detail="") -> dict:
    met = None if measured is None else (measured <= goal if lower_is_better else measured >= goal)
    return {"target": name, "model": model, "measured": measured,
            "goal": ("<= " if lower_is_better else ">= ") + f"{goal:g}", "met": met, "detail": detail}


def targets(results: dict) -> list[dict]:
    out = []
    bw = results.get("bandwidth") or {}
    for name, m in (results.get("models") or {}).items():
        if m.get("error"):
            continue
        for point in m.get("headline") or []:
            aoti, how_aoti = _p50_paired(m, "aoti", point)
            for engine in ("kiln", "kiln_graphs"):
                kiln, how = _p50_paired(m, engine, point)
                if engine == "kiln_graphs" and kiln is None:
                    continue
                ratio = kiln / aoti if kiln and aoti else None
                out.append(_target(f"per call {engine} / AOTI loader", f"{name} {point}", ratio, PER_CALL_GOAL, True,
                                   how if how == how_aoti else f"{how} / {how_aoti}"))
        if name.endswith(("decode", "decode_inplace")):  # LLM decode steps (not Whisper's)
            point = (m.get("headline") or [None])[0]
            (kiln, how), (graphs, _), (aoti, _) = (_p50_paired(m, e, point) for e in ("kiln", "kiln_graphs", "aoti"))
            out.append(_target("decode with CUDA graphs / AOTI loader", name,
                               graphs / aoti if graphs and aoti else None, GRAPHS_VS_LOADER_GOAL, True,
                               how if graphs else _engine_error(m, "kiln_graphs")))
            out.append(_target("decode speed-up of CUDA graphs (kiln / kiln_graphs)", name,
                               kiln / graphs if kiln and graphs else None, GRAPHS_SPEEDUP_GOAL, False,
                               how if graphs else _engine_error(m, "kiln_graphs")))
            bytes_per_token = (m.get("weight_bytes") or 0) + (m.get("kv_bytes") or 0)
            peak = bw.get("d2d_GBps")
            for engine in ("kiln_graphs", "kiln", "aoti"):
                t, how = _p50_paired(m, engine, point)
                frac = bytes_per_token / (t * 1e-3) / 1e9 / peak if t and peak else None
                out.append(_target(f"decode HBM roofline fraction ({engine})", name, frac, ROOFLINE_GOAL, False,
                                   f"{bytes_per_token / 1e9:.3f} GB/token over {peak or 0:.0f} GB/s copy bandwidth"
                                   f" ({how})"))
        cold = m.get("cold_start") or {}
        if cold:
            out.append(_target("cold start kiln run / python + aoti_load_package", name, cold.get("ratio"),
                               COLD_START_GOAL, True))
        kiln_load = ((m.get("engines") or {}).get("kiln") or {}).get("load_s")
        weights = m.get("weight_bytes") or 0
        if weights >= WEIGHTS_MIN_BYTES and kiln_load and bw.get("h2d_pinned_GBps"):
            gbps = weights / kiln_load / 1e9
            out.append(_target("weight load GB/s / pinned H2D GB/s", name, gbps / bw["h2d_pinned_GBps"], WEIGHTS_GOAL,
                               False, f"{weights / 1e9:.2f} GB in {kiln_load:.3f} s = {gbps:.1f} GB/s"))
    return out


def _engine_error(model: dict, engine: str) -> str:
    row = (model.get("engines") or {}).get(engine) or {}
    return (row.get("error") or "").splitlines()[0][:200] if row.get("error") else ""


def _f(v, fmt="{:.3f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def markdown(results: dict) -> str:
    parts = ["# Kiln GPU benchmark results", ""]
    mach = results.get("machine") or {}
    parts.append("Machine: " + ", ".join(f"{k} {v}" for k, v in mach.items()))
    if results.get("command"):
        parts.append(f"\nCommand: `{results['command']}`")
    cfg = results.get("config") or {}
    parts.append(f"\nConfig: device {cfg.get('device')}, dtype {cfg.get('dtype')}, Kiln mode {cfg.get('mode')}, "
                 f"iters {cfg.get('iters')} after {cfg.get('warmup')} warm-up, torch.compile mode "
                 f"{cfg.get('compile_mode')}, Kiln stream {cfg.get('kiln_stream')}"
                 + (", TINY configs (smoke test, numbers meaningless)" if cfg.get("tiny") else ""))
    bw = results.get("bandwidth") or {}
    if "d2d_GBps" in bw:
        parts.append(f"\nBandwidth: device-to-device copy {bw['d2d_GBps']:.0f} GB/s (read + write), pinned "
                     f"host-to-device {bw['h2d_pinned_GBps']:.1f} GB/s")
    parts += ["", "## Latency per call (headline inputs)", ""]
    rows = []
    for name, m in (results.get("models") or {}).items():
        if m.get("error"):
            rows.append([name, "", "ERROR", m["error"].splitlines()[0][:160], "", "", "", "", "", "", ""])
            continue
        for point in m.get("headline") or []:
            aoti = _p50(m, "aoti", point)
            for engine, row in (m.get("engines") or {}).items():
                if row.get("error"):
                    rows.append([name, point, engine, "error: " + row["error"].splitlines()[0][:120],
                                 "", "", "", "", "", "", ""])
                    continue
                r = (row.get("points") or {}).get(point) or {}
                ratio = r.get("p50_ms") / aoti if r.get("p50_ms") and aoti else None
                rows.append([name, point, engine, _f(r.get("p50_ms")), _f(r.get("p90_ms")),
                             _f(r.get("throughput"), "{:.1f}") + f" {m.get('item_unit', '')}/s",
                             _f(row.get("device_used_mb"), "{:.0f}"), _f(row.get("allocator_peak_mb"), "{:.0f}"),
                             _f(row.get("load_s")), _f(ratio, "{:.2f}x"),
                             _f(r.get("max_rel_err_vs_eager"), "{:.1e}")])
    for name, m in (results.get("models") or {}).items():
        if m.get("incomplete"):
            rows.append([name, "", "INCOMPLETE", m["incomplete"][:160], "", "", "", "", "", "", ""])
    parts.append(_table(["model", "input", "engine", "p50 ms", "p90 ms", "throughput", "GPU MB (device)",
                         "GPU MB (allocator)", "load s", "p50 / AOTI loader", "max rel err vs eager"], rows))
    h2h_rows = []
    for name, m in (results.get("models") or {}).items():
        h2h = m.get("interleaved") or {}
        if h2h.get("error"):
            h2h_rows.append([name, "", "ERROR", h2h["error"].splitlines()[0][:160], "", "", ""])
        for point, by_engine in (h2h.get("points") or {}).items():
            aoti = (by_engine.get("aoti") or {}).get("p50_ms")
            for engine, r in by_engine.items():
                ratio = r["p50_ms"] / aoti if aoti else None
                h2h_rows.append([name, point, engine, _f(r.get("p50_ms")), _f(r.get("p90_ms")), r.get("calls"),
                                 _f(ratio, "{:.2f}x")])
    if h2h_rows:
        parts += ["", "## Head to head (headline inputs, calls interleaved)", "",
                  "kiln, kiln_graphs and the AOTI loader loaded together and called in turn, one timed call each "
                  "per round, the order rotated every round: a drift of the machine's speed falls on every "
                  "engine alike. The ratio targets below use these medians where they exist.", ""]
        parts.append(_table(["model", "input", "engine", "p50 ms", "p90 ms", "calls", "p50 / AOTI loader"], h2h_rows))
    tg = results.get("targets") or []
    if tg:
        parts += ["", "## Targets", ""]
        parts.append(_table(["target", "model", "measured", "goal", "met", "detail"],
                            [[t["target"], t["model"], _f(t["measured"]), t["goal"],
                              {True: "yes", False: "NO", None: "n/a"}[t["met"]], t["detail"]] for t in tg]))
    sweeps = []
    for name, m in (results.get("models") or {}).items():
        if m.get("error") or not m.get("sweep"):
            continue
        for engine, row in (m.get("engines") or {}).items():
            for point, r in (row.get("points") or {}).items():
                sweeps.append([name, engine, point, _f(r.get("p50_ms")), _f(r.get("p90_ms"))])
    if sweeps:
        parts += ["", "## Sweeps (batch / sequence length)", ""]
        parts.append(_table(["model", "engine", "input", "p50 ms", "p90 ms"], sweeps))
    cold, cli, conc = [], [], []
    for name, m in (results.get("models") or {}).items():
        c = m.get("cold_start")
        if c:
            cold.append([name, _f(c.get("kiln_cli_ms"), "{:.0f}"), _f(c.get("python_aoti_ms"), "{:.0f}"),
                         _f(c.get("ratio")), c.get("runs")])
        k = m.get("kiln_cli")
        if k:
            cli.append([name, _f(k.get("median_ms")), _f(k.get("load_ms"), "{:.0f}"),
                        (k.get("error") or "").splitlines()[0][:120] if k.get("error") else ""])
        for r in m.get("concurrency") or []:
            conc.append([name, r["threads"], _f(r.get("calls_per_s"), "{:.1f}"), _f(r.get("items_per_s"), "{:.1f}"),
                         r.get("stream") or "", (r.get("error") or "")[:120]])
    if cold:
        parts += ["", "## Cold start (process start to first output, median)", ""]
        parts.append(_table(["model", "kiln run ms", "python + aoti_load_package ms", "ratio", "runs"], cold))
    loads = []
    for name, m in (results.get("models") or {}).items():
        w = m.get("weight_bytes")
        for engine in ("kiln", "aoti"):
            row = (m.get("engines") or {}).get(engine) or {}
            if row.get("load_s") and w:
                loads.append([name, engine, f"{w / 1e9:.3f}", _f(row["load_s"]), _f(w / row["load_s"] / 1e9, "{:.2f}"),
                              _f(row.get("first_call_s"))])
    if loads:
        parts += ["", "## Weight loading (Module(path) + load() / aoti_load_package)", ""]
        parts.append(_table(["model", "engine", "weights GB", "load s", "GB/s", "first call s"], loads))
    if cli:
        parts += ["", "## kiln run CLI (C++; host inputs copied in, outputs out, every call)", ""]
        parts.append(_table(["model", "median ms", "load ms", "error"], cli))
    if conc:
        parts += ["", "## Concurrency: Kiln, one Module, N host threads", ""]
        parts.append(_table(["model", "threads", "calls/s", "items/s", "stream", "error"], conc))
    ex = results.get("exports") or {}
    if ex:
        parts += ["", "## Exports", ""]
        parts.append(_table(["model", "params", "torch.export s", "kiln export s", "aoti package s", "cached", "error"],
                            [[n, e.get("params", ""), _f(e.get("torch_export_s"), "{:.0f}"),
                              _f(e.get("kiln_export_s"), "{:.0f}"), _f(e.get("aoti_export_s"), "{:.0f}"),
                              "yes" if e.get("cached") else "", (e.get("error") or "").splitlines()[0][:160]
                              if e.get("error") else ""] for n, e in ex.items()]))
    et = results.get("executorch")
    if et:
        parts += ["", f"ExecuTorch CUDA backend: {'available' if et.get('available') else 'not measured'}: "
                      f"{et.get('reason', '')}"]
    return "\n".join(parts) + "\n"


# Config keys that must agree for two result files to be merged.
SAME_RUN_KEYS = ("device", "tiny", "dtype", "mode")


def load_compatible(path, config: dict) -> dict | None:
    """The results saved at `path` if they were measured with the same device, size,
    dtype and mode as `config`; None otherwise (or if there are none)."""
    try:
        data = json.loads(open(path).read())
    except (OSError, ValueError):
        return None
    old = data.get("config") or {}
    return data if all(old.get(k) == config.get(k) for k in SAME_RUN_KEYS) else None


def merge(files: list[dict]) -> dict:
    """Later files' models, exports and bandwidth override earlier ones'."""
    out: dict = {}
    for data in files:
        for key, value in data.items():
            if key in ("models", "exports"):
                out.setdefault(key, {}).update(value or {})
            elif key == "commands":
                out[key] = out.get(key, []) + [c for c in value or [] if c not in out.get(key, [])]
            elif value is not None:
                out[key] = value
    return out


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+", help="gpu_bench.json files, merged left to right")
    ap.add_argument("--json-out", help="write the merged results here")
    args = ap.parse_args(argv)
    data = merge([json.loads(open(p).read()) for p in args.json])
    data["targets"] = targets(data)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(data, f, indent=1)
    sys.stdout.write(markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
