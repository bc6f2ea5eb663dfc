"""PyTorch's side of benches/gpu.rs's `gpu_sweep` group, on the same GPU in the same run.

    python3 benches/sweep_torch.py OUT.json

x * 2, a transposed copy, softmax(1) over rows of 1024 (GB/s of bytes read and written) and sum()
(GB/s read), for float32, float16 and bfloat16 from 2^10 to 2^28 elements. Names match the bench's.
"""
import json
import sys
import time

import torch


def seconds(fn, budget=0.5):
    """Mean time of one call, the device waited for, over about `budget` seconds."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    k, total = 1, 0.0
    while total < budget:
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        torch.cuda.synchronize()
        total = time.perf_counter() - t0
        if total < budget:
            k *= 2
    return total / k


def main():
    res = {}
    for dtype, tag in [(torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")]:
        for k in (10, 16, 20, 24, 28):
            n = 1 << k
            x = torch.randn(n, device="cuda").to(dtype)
            nbytes = n * x.element_size()
            square = x.view(1 << (k // 2), 1 << (k - k // 2))
            rows = x.view(n // 1024, 1024)
            res[f"scale_{tag}_2p{k}"] = 2 * nbytes / seconds(lambda: x * 2) / 1e9
            res[f"transpose_copy_{tag}_2p{k}"] = 2 * nbytes / seconds(lambda: square.t().contiguous()) / 1e9
            res[f"softmax_{tag}_2p{k}"] = 2 * nbytes / seconds(lambda: rows.softmax(1)) / 1e9
            res[f"sum_{tag}_2p{k}"] = nbytes / seconds(lambda: x.sum()) / 1e9
            del x, square, rows
    json.dump(res, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
