"""PyTorch's side of micro/gemm_bench.cpp: bfloat16 F.linear(x[1, K], W[N, K]) on the
shapes kiln-gemm-bench times, what cuBLAS gives PyTorch for a decode-step product.

    python3 bench/micro/gemm_bench_torch.py

Milliseconds per call (median of 50, L2 flushed before each, CUDA events) and GB/s
counted as kiln-gemm-bench counts them. Prints why and exits 0 where torch has no GPU.
"""

import torch
import torch.nn.functional as F

# (K, N): kiln-gemm-bench's problems, in order.
SHAPES = [(2048, 2048), (2048, 256), (2048, 8192), (8192, 2048), (2048, 32768), (4096, 4096)]


def main() -> None:
    if not torch.cuda.is_available():
        print("torch has no CUDA device; skipped")
        return
    props = torch.cuda.get_device_properties(0)
    flush = torch.empty(max(4 * props.L2_cache_size, 64 << 20), dtype=torch.uint8, device="cuda")
    print(f"torch {torch.__version__} on {props.name}; bfloat16 F.linear(x[1, K], W[N, K]), "
          "ms median of 50, L2 flushed before each")
    for K, N in SHAPES:
        x = torch.rand(1, K, device="cuda", dtype=torch.bfloat16) * 2 - 1
        w = torch.rand(N, K, device="cuda", dtype=torch.bfloat16) * 2 - 1
        for _ in range(5):
            F.linear(x, w)
        runs = []
        for _ in range(50):
            flush.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            F.linear(x, w)
            e.record()
            torch.cuda.synchronize()
            runs.append(s.elapsed_time(e))
        runs.sort()
        ms = runs[len(runs) // 2]
        print(f"K={K:5} N={N:6} {ms:.4f} ms {2 * (K * N + K + N) / (ms * 1e6):7.0f} GB/s")


if __name__ == "__main__":
    main()
