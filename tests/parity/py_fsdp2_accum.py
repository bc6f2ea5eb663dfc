import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore
from harness import checkpoint

# Gradient accumulation under FSDP2 (rank 0 of 4 on the fake group): the first two micro-batches
# run with set_requires_gradient_sync(False), so their unsharded gradients are kept and summed and
# no reduce-scatter runs; the third syncs and reduce-scatters the sum into the sharded gradients.
dist.init_process_group("fake", rank=0, world_size=4, store=FakeStore())
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


model = nn.Sequential(Block(256), Block(256), Block(256)).cuda()
for block in model:
    fully_shard(block)
fully_shard(model)
checkpoint("sharded")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
batches = [torch.randn(64, 256, device="cuda") for _ in range(3)]
for step in range(2):
    for i, x in enumerate(batches):
        model.set_requires_gradient_sync(i == len(batches) - 1)
        model(x).sum().backward()
        checkpoint(f"step {step} micro-batch {i}")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")
