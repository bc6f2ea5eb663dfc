import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from harness import checkpoint

# Gradient accumulation under DDP at world size 1: two micro-batches inside no_sync (gradients
# accumulate in .grad, no bucket copies, no rebuild), then one outside it (the Reducer's hooks copy
# into the buckets), for two optimizer steps.
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29520")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(768, 2048), nn.GELU(), nn.Linear(2048, 768)).cuda()
ddp = DDP(model)
checkpoint("wrapped")
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
batches = [torch.randn(128, 768, device="cuda") for _ in range(3)]
for step in range(2):
    if step == 1:
        # A real step's time: ProcessGroupNCCL's watchdog lets go of the last all-reduce, so the
        # rebuild frees the first buckets (Note [DDP's buckets] in torchlet's torch/nn/parallel).
        time.sleep(0.3)
    with ddp.no_sync():
        for x in batches[:2]:
            ddp(x).square().mean().backward()
    checkpoint(f"step {step} accumulated")
    ddp(batches[2]).square().mean().backward()
    checkpoint(f"step {step} synced")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")
