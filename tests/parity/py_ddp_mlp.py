import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from harness import checkpoint

# DDP's Reducer at world size 1 (its buckets do not depend on the world size): a first bucket of
# 1 MiB, then buckets of up to 25 MiB in reverse parameter order, rebuilt after the first iteration.
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1024)
).cuda()
checkpoint("model on the GPU")
ddp = DDP(model)
checkpoint("wrapped")
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
x = torch.randn(64, 1024, device="cuda")
for step in range(3):
    if step == 1:
        # A real step's time: ProcessGroupNCCL's watchdog lets go of the last all-reduce, so the
        # rebuild frees the first buckets (Note [DDP's buckets] in torchlet's torch/nn/parallel).
        time.sleep(0.3)
    loss = ddp(x).sum()
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")
del loss
checkpoint("end")
dist.destroy_process_group()
