import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore
from harness import checkpoint

# FSDP2 as one rank of a world of any size: RANK and WORLD_SIZE as a launcher (or
# `torchlet fit --world-size N`) sets them, rank 0 of 8 when they are not set, on PyTorch's fake
# process group. Four blocks of Linear(384, 1536) and Linear(1536, 384), each sharded, AdamW.
rank, world_size = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "8"))
dist.init_process_group("fake", rank=rank, world_size=world_size, store=FakeStore())
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


model = nn.Sequential(*[Block(384) for _ in range(4)]).cuda()
for block in model:
    fully_shard(block)
fully_shard(model)
checkpoint("sharded")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 384, device="cuda")
for step in range(2):
    loss = model(x).square().mean()
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")
