"""Faults on the GPU with a real AOTInductor CUDA library:

  * 1000 load / execute / unload cycles (KILN_GPU_FAULT_CYCLES): open descriptors, resident
    host memory and GPU memory in use (the driver's count, cudaMemGetInfo) stay flat; 200
    more with weights placed by the library and with one shared stream;
  * out of memory at load, for real: with almost all GPU memory taken by another
    allocation, a load whose weights do not fit fails with OutOfMemory, a model
    loaded before keeps working, and once the memory is back the load succeeds;
  * out of memory at execute, for real: an input too large for the GPU fails that
    call with OutOfMemory, and the next normal call is right;
  * aoti.max_memory_bytes at load and at execute on CUDA;
  * 8 threads executing one module (num_models 8, one stream per thread) agree
    with eager.

Table: gpu_faults (each check's measurements).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
import time

import pytest
import torch

import gpu_support
import kiln
from kiln.runtime import KilnError, Module

pytestmark = gpu_support.cuda_only

CYCLES = int(os.environ.get("KILN_GPU_FAULT_CYCLES", "1000"))

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
    kiln.export({"forward": ep}, backend="cuda", verbose=False).save(path)


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
    """Kiln's CUDA allocator statistics (bench/models/gpu_bench.py's reader)."""
    sys.path.insert(0, str(gpu_support.REPO / "bench" / "models"))
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


def _render(sec) -> str:
    lines = [f"{'check':<32} {'result':<6} detail"]
    lines += [f"{r['check']:<32} {'pass' if r['ok'] else 'FAIL':<6} {r['detail']}" for r in sec.rows]
    return "\n".join(lines)


SECTION = gpu_support.section("gpu_faults", _render)


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """(the small MLP, its program, a program whose 1 GiB of fp32 weights do not fit in what
    real_oom_at_load leaves free, though they fit on the GPU)."""
    torch.manual_seed(0)
    work = tmp_path_factory.mktemp("faults")
    small = Mlp().cuda().eval()
    small_path = str(work / "mlp.kiln")
    big = Mlp(d_in=256, hidden=512 * 1024, d_out=256).cuda().eval()
    big_path = str(work / "big.kiln")
    export(small, small_path)
    export(big, big_path)
    del big
    torch.cuda.empty_cache()
    return small, small_path, big_path


def _check(name: str, fn) -> None:
    row = SECTION.add({"check": name, "ok": False, "detail": ""})
    try:
        with torch.no_grad():
            row["detail"] = fn()
    except Exception as e:
        row["detail"] = str(e)
        raise
    row["ok"] = True


@pytest.mark.parametrize("variant", ["default", "weights=library", "stream=shared"])
def test_load_execute_unload_cycles(programs, variant):
    small, small_path, _ = programs
    if variant == "default":
        _check("load/execute/unload cycles", lambda: cycles(small, small_path, CYCLES))
    else:
        key, value = variant.split("=")
        _check(f"cycles, aoti.{variant}", lambda: cycles(small, small_path, 200, {"aoti": {key: value}}))


def test_real_oom_at_load(programs):
    small, small_path, big_path = programs
    _check("real GPU OOM at load", lambda: real_oom_at_load(small, small_path, big_path))


def test_real_oom_at_execute(programs):
    small, small_path, _ = programs
    _check("real GPU OOM at execute", lambda: real_oom_at_execute(small, small_path))


def test_max_memory_bytes(programs):
    small, small_path, _ = programs
    _check("aoti.max_memory_bytes on CUDA", lambda: memory_limit(small, small_path))


def test_threads_share_one_module(programs):
    small, small_path, _ = programs
    _check("8 threads, one module", lambda: threads(small, small_path))
