import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from harness import checkpoint

# DDP with gradient_as_bucket_view=True at world size 1 (its buckets are those of any world size):
# after each gradient is accumulated the Reducer copies it into its bucket and makes `.grad` a view
# of the bucket, so the gradients' own memory goes at once. Three steps with zero_grad() (grads set
# to None each time), then two with zero_grad(set_to_none=False) (grads stay bucket views).
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29518")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
ddp = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=True)
checkpoint("wrapped")
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
x = torch.randn(64, 512, device="cuda")
target = torch.randint(0, 10, (64,), device="cuda")
for step in range(5):
    if step == 1:
        # A real step's time: ProcessGroupNCCL's watchdog lets go of the last all-reduce, so the
        # rebuild frees the first buckets (Note [DDP's buckets] in torchlet's torch/nn/parallel).
        time.sleep(0.3)
    loss = nn.functional.cross_entropy(ddp(x), target)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad(set_to_none=step < 3)
    checkpoint(f"step {step} optimizer")
