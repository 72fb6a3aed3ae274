"""Reads the live-allocation stacks (recorded by bench/diagnostics/alloc_stacks.cpp) and
the mapping list that bench/diagnostics/leak_trace.sh writes, keeps the stacks with at
least one live allocation per traced cycle, and prints each frame as the object it lies in + offset (and the function name
where addr2line can tell, for objects still on disk).
    python3 bench/diagnostics/leak_trace_report.py STACKS MAPS CYCLES"""

import functools
import os
import shutil
import subprocess
import sys


def read_objects(maps_path: str):
    objects = set()
    with open(maps_path) as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6:
                start, end = (int(x, 16) for x in parts[0].split("-"))
                objects.add((start, end, int(parts[2], 16), parts[5].strip()))
    return sorted(objects)


@functools.lru_cache(maxsize=None)
def function_name(path: str, offset: int) -> str:
    if not shutil.which("addr2line") or not os.path.isfile(path):
        return ""
    # offset is a file offset; for the usual PIC objects it equals the address
    # addr2line wants (text is mapped at its file offset).
    out = subprocess.run(["addr2line", "-f", "-C", "-e", path, hex(offset)], capture_output=True, text=True)
    name = out.stdout.splitlines()[0] if out.returncode == 0 and out.stdout else ""
    return "" if name == "??" else name


def main(stacks_path: str, maps_path: str, cycles: int) -> int:
    objects = read_objects(maps_path)

    def where(address: int) -> str:
        for start, end, offset, path in objects:
            if start <= address < end:
                file_offset = address - start + offset
                name = function_name(path, file_offset - 1)  # a return address points after the call
                return f"{os.path.basename(path)} +{file_offset:#x}" + (f"  {name}" if name else "")
        return f"{address:#x} (not in a recorded mapping)"

    stacks = []
    total_bytes = total_count = 0
    with open(stacks_path) as f:
        for line in f:
            parts = line.split()
            count, nbytes, frames = int(parts[0]), int(parts[1]), [int(x, 16) for x in parts[2:]]
            total_bytes += nbytes
            total_count += count
            stacks.append((nbytes, count, frames))
    per_cycle = sorted((s for s in stacks if s[1] >= cycles), reverse=True, key=lambda s: s[0])
    print(f"{total_count} allocations ({total_bytes / 1024:.1f} KiB) live after {cycles} traced cycles "
          f"({total_bytes / 1024 / cycles:.2f} KiB/cycle); stacks with at least one a cycle: {len(per_cycle)}")
    for nbytes, count, frames in per_cycle[:25]:
        print(f"\n{nbytes / 1024:.1f} KiB in {count} allocations ({nbytes / 1024 / cycles:.2f} KiB/cycle):")
        for frame in frames:
            print(f"    {where(frame)}")
    if not per_cycle:
        print("  (none)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
