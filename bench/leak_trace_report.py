"""Reads bench/leak_trace's malloc trace and mapping list: the allocations still live
at the end, grouped by caller, keeping callers with at least one per traced cycle,
each located in the object its address lies in.
    python3 bench/leak_trace_report.py TRACE MAPS CYCLES"""

import collections
import os
import re
import sys

ALLOC = re.compile(r"^@ (?P<caller>\S+) [+<>] (?P<addr>0x[0-9a-f]+) (?P<size>0x[0-9a-f]+)$")
FREE = re.compile(r"^@ (?P<caller>\S+) - (?P<addr>0x[0-9a-f]+)$")
CALLER_ADDR = re.compile(r"\[(0x[0-9a-f]+)\]")


def main(trace_path: str, maps_path: str, cycles: int) -> int:
    live = {}
    with open(trace_path, errors="replace") as trace:
        for line in trace:
            line = line.rstrip("\n")
            if m := ALLOC.match(line):
                live[int(m["addr"], 16)] = (int(m["size"], 16), m["caller"])
            elif m := FREE.match(line):
                live.pop(int(m["addr"], 16), None)
    objects = []
    with open(maps_path) as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6:
                start, end = (int(x, 16) for x in parts[0].split("-"))
                objects.append((start, end, int(parts[2], 16), parts[5].strip()))

    def where(caller: str) -> str:
        m = CALLER_ADDR.search(caller)
        if not m:
            return caller
        address = int(m.group(1), 16)
        for start, end, offset, path in objects:
            if start <= address < end:
                return f"{os.path.basename(path)} +{address - start + offset:#x}  ({caller})"
        return caller

    by_caller = collections.defaultdict(list)
    for size, caller in live.values():
        by_caller[caller].append(size)
    rows = sorted(((sum(s), len(s), c) for c, s in by_caller.items() if len(s) >= cycles), reverse=True)
    total = sum(size for size, _ in live.values())
    print(f"{len(live)} allocations ({total / 1024:.1f} KiB) left unfreed over {cycles} cycles; "
          "callers with at least one a cycle:")
    print(f"{'KiB':>10} {'count':>7} {'KiB/cycle':>10}  caller")
    for nbytes, count, caller in rows[:20]:
        print(f"{nbytes / 1024:10.1f} {count:7d} {nbytes / 1024 / cycles:10.2f}  {where(caller)}")
    if not rows:
        print("  (none)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
