import os

import torch
import torch.distributed as dist
import torch.nn as nn
from harness import checkpoint

# DDP with find_unused_parameters=True at world size 1: the Reducer's buckets are made in parameter
# order with the 1 MiB first bucket and never rebuilt, and it keeps a map of which parameters were
# used on the device; one head of the model is never used.
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29519")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.manual_seed(0)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU())
        self.used = nn.Linear(512, 10)
        self.unused = nn.Linear(512, 10)

    def forward(self, x):
        return self.used(self.body(x))


model = TwoHeads().cuda()
ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
checkpoint("wrapped")
opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(64, 512, device="cuda")
target = torch.randint(0, 10, (64,), device="cuda")
for step in range(3):
    loss = nn.functional.cross_entropy(ddp(x), target)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")
