import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore
from harness import checkpoint

# FSDP2 on 8 ranks, recorded as the last rank with PyTorch's fake process group: 250 rows over 8
# ranks are chunks of 32, so rank 7 holds 26 rows padded to 32, and its gradients' views are of
# the unpadded rows. The blocks keep their parameters unsharded after forward
# (reshard_after_forward=False) and the model runs three steps of Adam.
dist.init_process_group("fake", rank=7, world_size=8, store=FakeStore())
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 3 * d)
        self.fc2 = nn.Linear(3 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


model = nn.Sequential(Block(250), Block(250), nn.Linear(250, 10)).cuda()
for block in model[:2]:
    fully_shard(block, reshard_after_forward=False)
fully_shard(model)
checkpoint("sharded")
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(48, 250, device="cuda")
target = torch.randint(0, 10, (48,), device="cuda")
for step in range(3):
    loss = nn.functional.cross_entropy(model(x), target)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")
