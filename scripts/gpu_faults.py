"""Faults on the GPU with a real AOTInductor CUDA library (issue #5), one table:

  * 1000 load / execute / unload cycles: open descriptors, resident host memory
    and GPU memory in use (the driver's count, cudaMemGetInfo) stay flat;
  * out of memory at load, for real: with almost all GPU memory taken by another
    allocation, a load whose weights do not fit fails with OutOfMemory, a model
    loaded before keeps working, and once the memory is back the load succeeds;
  * out of memory at execute, for real: an input too large for the GPU fails that
    call with OutOfMemory, and the next normal call is right;
  * aoti.max_memory_bytes at load and at execute on CUDA;
  * 8 threads executing one module (num_models 8, one stream per thread) agree
    with eager.

Run on the GPU machine from the repository root with a CUDA build:
    KILN_BUILD_DIR=build-cuda python3 scripts/gpu_faults.py [--cycles 1000]
Exit status 1 if any check fails."""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import sys
import tempfile
import threading
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import kiln  # noqa: E402
from kiln.exporter import CudaBackend  # noqa: E402
from kiln.runtime import KilnError, Module  # noqa: E402

MiB = 1 << 20


class Mlp(torch.nn.Module):
    def __init__(self, d_in=256, hidden=1024, d_out=64):
        super().__init__()
        self.up = torch.nn.Linear(d_in, hidden)
        self.down = torch.nn.Linear(hidden, d_out)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def export(model: torch.nn.Module, path: str) -> None:
    batch = torch.export.Dim("batch", min=1, max=1 << 22)
    with torch.no_grad():
        ep = torch.export.export(model, (torch.randn(4, model.up.in_features, device="cuda"),),
                                 dynamic_shapes=({0: batch},))
    kiln.export({"forward": ep}, backend=CudaBackend(), verbose=False).save(path)


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


_LIBC = ctypes.CDLL("libc.so.6")
_LIBC.mallinfo2.restype = _Mallinfo2


def malloc_in_use_mib() -> float:
    """Bytes glibc malloc has handed out and not had back (heap + mmapped blocks):
    a leak of anything allocated with malloc/new shows here, memory glibc merely
    keeps cached in its arenas does not."""
    info = _LIBC.mallinfo2()
    return (info.uordblks + info.hblkhd) / MiB


def rss_mib() -> float:
    _LIBC.malloc_trim(0)  # return glibc's cached free pages first: only held memory counts
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def gpu_used_mib() -> float:
    free, total = torch.cuda.mem_get_info()
    return (total - free) / MiB


def check_close(got, want, what):
    got = got.float()
    want = want.float()
    err = ((got - want).abs().max() / want.abs().max().clamp_min(1e-12)).item()
    if err > 1e-3:  # TF32 GEMMs
        raise AssertionError(f"{what}: relative error {err:.2e}")
    return err


def expect_error(fn, status, what):
    try:
        fn()
    except KilnError as e:
        if e.status != status:
            raise AssertionError(f"{what}: expected {status}, got {e.status}: {e.message}") from e
        return e.message
    raise AssertionError(f"{what}: expected {status}, the call succeeded")


def model_mappings() -> int:
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if "kiln-model" in line)


@functools.cache
def _kiln_cuda():
    """The CUDA plugin's function table (bench/models/gpu_bench.py's reader), looked up once."""
    sys.path.insert(0, os.path.join(HERE, "..", "bench", "models"))
    from gpu_bench import KilnCuda

    return KilnCuda()


def kiln_pool_mib() -> tuple[float, float]:
    """Kiln's CUDA pool: bytes in use, bytes reserved (MiB)."""
    s = _kiln_cuda().stats()
    return s.bytes_in_use / MiB, s.bytes_reserved / MiB


def cycles(model, path, n, options=None):
    x = torch.randn(32, 256, device="cuda")
    want = model(x)

    def once():
        m = Module(path)
        m.load_method("forward", options)
        (y,) = m.execute("forward", [x], output="torch")
        check_close(y, want, "cycle output")
        m.close()

    for _ in range(20):  # warm-up: CUDA context, cuBLASLt handles, pool high-water mark
        once()
    torch.cuda.synchronize()
    before = (fds(), rss_mib(), gpu_used_mib(), kiln_pool_mib(), malloc_in_use_mib())
    start = time.perf_counter()
    for _ in range(n):
        once()
    torch.cuda.synchronize()
    after = (fds(), rss_mib(), gpu_used_mib(), kiln_pool_mib(), malloc_in_use_mib())
    detail = (f"{n} cycles in {time.perf_counter() - start:.1f} s: fds {before[0]}->{after[0]}, "
              f"RSS {before[1]:.1f}->{after[1]:.1f} MiB, GPU used {before[2]:.1f}->{after[2]:.1f} MiB, "
              f"Kiln pool in use/reserved {before[3][0]:.1f}/{before[3][1]:.1f}->{after[3][0]:.1f}/"
              f"{after[3][1]:.1f} MiB, malloc in use {before[4]:.1f}->{after[4]:.1f} MiB, "
              f"model libraries mapped {model_mappings()}")
    assert after[0] == before[0], "descriptors grew: " + detail
    assert after[1] - before[1] < 16, "resident memory grew: " + detail
    assert after[2] - before[2] < 4, "GPU memory grew: " + detail
    return detail


def real_oom_at_load(model, small_path, big_path):
    x = torch.randn(8, 256, device="cuda")
    keeper = Module(small_path)
    keeper.load_method("forward")
    want = model(x)
    free, _ = torch.cuda.mem_get_info()
    hog = torch.empty(max(free - 256 * MiB, 0), dtype=torch.uint8, device="cuda")  # leaves ~256 MiB
    try:
        big = Module(big_path)
        message = expect_error(lambda: big.load_method("forward"), "OutOfMemory", "load with no room")
        assert not big.is_method_loaded("forward")
        (y,) = keeper.execute("forward", [x], output="torch")
        check_close(y, want, "other module after the failed load")
    finally:
        del hog
        torch.cuda.empty_cache()
    big.load_method("forward")  # the same module loads once the memory is back
    keeper.close()
    big.close()
    return message.splitlines()[0][:150]


def real_oom_at_execute(model, path):
    m = Module(path)
    m.load_method("forward")
    x = torch.randn(8, 256, device="cuda")
    want = model(x)
    huge = torch.randn(400_000, 256, device="cuda")  # its hidden activation needs 1.6 GB
    free, _ = torch.cuda.mem_get_info()
    hog = torch.empty(max(free - 256 * MiB, 0), dtype=torch.uint8, device="cuda")
    try:
        message = expect_error(lambda: m.execute("forward", [huge], output="torch"), "OutOfMemory",
                               "execute with no room")
        (y,) = m.execute("forward", [x], output="torch")
        check_close(y, want, "the next call after OutOfMemory, memory still short")
    finally:
        del hog
        torch.cuda.empty_cache()
    (y,) = m.execute("forward", [huge], output="torch")  # fits once the memory is back
    check_close(y, model(huge), "the large call once memory is back")
    m.close()
    return message.splitlines()[0][:150]


def memory_limit(model, path):
    x = torch.randn(8, 256, device="cuda")
    m = Module(path)
    expect_error(lambda: m.load_method("forward", {"aoti": {"max_memory_bytes": 1024}}), "OutOfMemory",
                 "load under a 1 KiB limit")
    m.load_method("forward", {"aoti": {"max_memory_bytes": 64 * MiB}})
    (y,) = m.execute("forward", [x], output="torch")
    check_close(y, model(x), "call under the limit")
    big = torch.randn(200_000, 256, device="cuda")  # 200k x 1024 floats of activation > 64 MiB
    expect_error(lambda: m.execute("forward", [big]), "OutOfMemory", "call past the limit")
    (y,) = m.execute("forward", [x], output="torch")
    check_close(y, model(x), "call after OutOfMemory")
    m.close()
    return "1 KiB refused at load; 64 MiB: small call ok, 200k-row call OutOfMemory, next call ok"


def threads(model, path, n_threads=8, calls=50):
    m = Module(path)
    m.load_method("forward", {"aoti": {"num_models": n_threads, "stream": "per_thread"}})
    errors = []
    worst = [0.0]

    def work(seed):
        try:
            g = torch.Generator(device="cuda").manual_seed(seed)
            for _ in range(calls):
                x = torch.randn(16, 256, device="cuda", generator=g)
                (y,) = m.execute("forward", [x], output="torch")
                torch.cuda.synchronize()
                worst[0] = max(worst[0], check_close(y, model(x), f"thread {seed}"))
        except Exception as e:  # reported below
            errors.append(f"thread {seed}: {e}")

    ts = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    m.close()
    assert not errors, "; ".join(errors[:3])
    return f"{n_threads} threads x {calls} calls, worst rel err {worst[0]:.1e}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--variants", action="store_true",
                    help="also run the cycles with weights placed by the library and with one shared stream")
    args = ap.parse_args()
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="kiln-gpu-faults-")
    small = Mlp().cuda().eval()
    small_path = os.path.join(work, "mlp.kiln")
    # Weights bigger than what real_oom_at_load leaves free, smaller than the GPU.
    big = Mlp(d_in=256, hidden=512 * 1024, d_out=256).cuda().eval()  # 1 GiB of fp32 weights
    big_path = os.path.join(work, "big.kiln")
    export(small, small_path)
    export(big, big_path)
    del big
    torch.cuda.empty_cache()
    checks = [
        ("load/execute/unload cycles", lambda: cycles(small, small_path, args.cycles)),
        *([("cycles, aoti.weights=library", lambda: cycles(small, small_path, 200, {"aoti": {"weights": "library"}})),
           ("cycles, aoti.stream=shared", lambda: cycles(small, small_path, 200, {"aoti": {"stream": "shared"}}))]
          if args.variants else []),
        ("real GPU OOM at load", lambda: real_oom_at_load(small, small_path, big_path)),
        ("real GPU OOM at execute", lambda: real_oom_at_execute(small, small_path)),
        ("aoti.max_memory_bytes on CUDA", lambda: memory_limit(small, small_path)),
        ("8 threads, one module", lambda: threads(small, small_path)),
    ]
    failed = 0
    with torch.no_grad():
        for name, fn in checks:
            try:
                detail = fn()
                print(f"PASS  {name:32s} {detail}", flush=True)
            except Exception as e:
                failed += 1
                traceback.print_exc()
                print(f"FAIL  {name:32s} {e}", flush=True)
    print(f"{len(checks) - failed}/{len(checks)} GPU fault checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
