"""Per-statement cost of Python over torch, the same file under PyTorch and under torchlet:

    python3 benches/python_statements.py              # PyTorch
    torchlet python benches/python_statements.py      # torchlet

Prints one JSON line: seconds from process start to the first .cuda() (the caller passes the start
time in TORCHLET_BENCH_T0, seconds since the epoch), and microseconds per statement for a 10x10
`x * 2 + 1` and for `empty` + `del`, each the best of 5 rounds of 2000 statements.
"""

import json
import os
import time

import torch

t0 = float(os.environ.get("TORCHLET_BENCH_T0", "0"))
first = torch.zeros(1).cuda()
startup = time.time() - t0 if t0 else None
torch.cuda.synchronize()


def best_of(rounds, n, body):
    best = None
    for _ in range(rounds):
        start = time.perf_counter()
        body(n)
        torch.cuda.synchronize()
        took = (time.perf_counter() - start) / n * 1e6
        best = took if best is None else min(best, took)
    return best


x = torch.randn(10, 10, device="cuda")


def arithmetic(n):
    for _ in range(n):
        y = x * 2 + 1


def empty_del(n):
    for _ in range(n):
        t = torch.empty(10, 10, device="cuda")
        del t


arithmetic(200)
empty_del(200)
print(json.dumps({
    "runtime": "torchlet" if "torchlet" in torch.__version__ else "pytorch " + torch.__version__,
    "startup_to_first_cuda_s": startup,
    "x_mul_2_add_1_us": best_of(5, 2000, arithmetic),
    "empty_del_us": best_of(5, 2000, empty_del),
}))
