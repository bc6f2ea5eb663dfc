"""Measure what a fresh PyTorch process holds on this GPU outside its caching allocator.

    python3 tests/data/record_gpu_context.py >> tests/data/gpu_context.jsonl

Prints one JSON line: the GPU's name, the total `cudaMemGetInfo` reports, and total - free less
the allocator's reserved memory after CUDA starts, after the first tensor, after the first
1000x1000 matmul (cuBLAS loads) and after the first 3x3 conv2d on 8x64x56x56 (cuDNN loads), as
src/fit/gpus.rs counts them (Note [usable memory]).
"""

import json

import torch
import torch.nn.functional as F


def outside():
    free, total = torch.cuda.mem_get_info()
    return total - free - torch.cuda.memory_reserved()


def main():
    torch.cuda.init()
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "total": torch.cuda.mem_get_info()[1], "after_init": outside()}
    a = torch.randn(1000, 1000, device="cuda")
    torch.cuda.synchronize()
    out["after_first_tensor"] = outside()
    (a @ a).sum().item()
    out["after_cublas"] = outside()
    x = torch.randn(8, 64, 56, 56, device="cuda")
    F.conv2d(x, torch.randn(64, 64, 3, 3, device="cuda"), padding=1).sum().item()
    out["after_cudnn"] = outside()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
