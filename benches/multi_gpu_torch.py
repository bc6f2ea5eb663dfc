"""PyTorch's side of benches/multi_gpu.rs on the same two GPUs: cuda:0 -> cuda:1 copy of 1 GiB,
and torch.distributed all_reduce (NCCL backend, one process per GPU) of 1 GiB of float32.

Run in the same call as the Rust bench, e.g.
    python3 benches/multi_gpu_torch.py && cargo bench --bench multi_gpu
Prints one JSON object per measurement (GB/s = 1e9 bytes per second, as criterion's GB/s).
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

BYTES = 1 << 30
ITERS = 20


def copy_bandwidth():
    src = torch.empty(BYTES, dtype=torch.uint8, device="cuda:0")
    dst = torch.empty(BYTES, dtype=torch.uint8, device="cuda:1")
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    t = time.perf_counter()
    for _ in range(ITERS):
        dst.copy_(src)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    seconds = (time.perf_counter() - t) / ITERS
    return {
        "what": "copy_cuda0_to_cuda1_1GiB",
        "peer_access": torch.cuda.can_device_access_peer(0, 1),
        "seconds": seconds,
        "GB/s": BYTES / seconds / 1e9,
    }


def all_reduce_worker(rank, world, queue):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    x = torch.ones(BYTES // 4, dtype=torch.float32, device=f"cuda:{rank}")
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    t = time.perf_counter()
    for _ in range(ITERS):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - t) / ITERS
    if rank == 0:
        algbw = BYTES / seconds / 1e9
        queue.put({
            "what": f"all_reduce_sum_1GiB_f32_{world}gpus",
            "nccl": ".".join(map(str, torch.cuda.nccl.version())),
            "seconds": seconds,
            "GB/s": algbw,
            "busbw GB/s": algbw * 2 * (world - 1) / world,
        })
    dist.destroy_process_group()


def main():
    if torch.cuda.device_count() < 2:
        print(f"multi_gpu_torch: needs two CUDA devices, found {torch.cuda.device_count()}")
        return 0
    print(json.dumps(copy_bandwidth()))
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(all_reduce_worker, args=(2, queue), nprocs=2, join=True)
    print(json.dumps(queue.get()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
