import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore
from harness import checkpoint

# FSDP2 on 4 ranks, recorded as rank 0 with PyTorch's fake process group on one GPU: each block's
# parameters are dim-0 shards (250 rows over 4 ranks: padded to 252), all-gathered for forward and
# backward, their gradients reduce-scattered, and AdamW runs on the shards.
dist.init_process_group("fake", rank=0, world_size=4, store=FakeStore())
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


model = nn.Sequential(Block(250), Block(250), Block(250)).cuda()
checkpoint("model on the GPU")
for block in model:
    fully_shard(block)
fully_shard(model)
checkpoint("sharded")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(64, 250, device="cuda")
for step in range(2):
    loss = model(x).sum()
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")
del loss
checkpoint("end")
