"""PyTorch's side of micro/attention_bench.cpp: F.scaled_dot_product_attention on the
problems kiln-attention-bench times, the number Kiln's attention kernels have to beat.

    python3 bench/micro/attention_bench_torch.py

Milliseconds per call (median of 5 runs of 20 back-to-back calls, CUDA events). Prints
why and exits 0 where torch has no GPU.
"""

import torch
import torch.nn.functional as F

bf16, f16 = torch.bfloat16, torch.float16
# dtype, B, H, Hkv, L, S, E, causal: kiln-attention-bench's problems, in order.
PROBLEMS = [
    (bf16, 1, 16, 16, 512, 512, 64, True), (bf16, 1, 16, 16, 1024, 1024, 64, True),
    (bf16, 1, 16, 16, 2048, 2048, 64, True), (bf16, 1, 16, 16, 1024, 1024, 64, False),
    (f16, 1, 16, 16, 1024, 1024, 64, True), (bf16, 1, 16, 16, 1024, 1024, 128, True),
    (bf16, 4, 16, 16, 2048, 2048, 64, True),
    (bf16, 1, 8, 1, 512, 512, 256, True), (bf16, 1, 8, 1, 2048, 2048, 256, True),
    (f16, 1, 8, 1, 512, 512, 256, True), (bf16, 1, 8, 1, 1, 1024, 256, False),
    (bf16, 1, 8, 1, 1, 4096, 256, False), (f16, 1, 8, 1, 1, 1024, 256, False),
    (bf16, 1, 32, 8, 1, 4096, 128, False), (bf16, 8, 8, 1, 1, 1024, 256, False),
]


def main() -> None:
    if not torch.cuda.is_available():
        print("torch has no CUDA device; skipped")
        return
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}; ms per call (median of 5 x 20)")
    for dtype, B, H, Hkv, L, S, E, causal in PROBLEMS:
        q = torch.rand(B, H, L, E, device="cuda", dtype=dtype) * 2 - 1
        k, v = (torch.rand(B, Hkv, S, E, device="cuda", dtype=dtype) * 2 - 1 for _ in range(2))
        gqa = H != Hkv

        def sdpa():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

        for _ in range(3):
            sdpa()
        runs = []
        for _ in range(5):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(20):
                sdpa()
            e.record()
            torch.cuda.synchronize()
            runs.append(s.elapsed_time(e) / 20)
        runs.sort()
        print(f"{str(dtype).replace('torch.', ''):9} B={B} H={H:2} Hkv={Hkv:2} L={L:5} S={S:5} E={E:4} "
              f"causal={causal!s:5} {runs[2]:.4f} ms")


if __name__ == "__main__":
    main()
