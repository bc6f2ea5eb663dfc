import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore
from harness import checkpoint

# FSDP2 on 8 ranks (rank 0 of the fake group) whose blocks reshard to 2 ranks after forward
# (reshard_after_forward=2): each keeps a quarter of the parameters between forward and backward,
# and backward all-gathers over 2 ranks from it.
dist.init_process_group("fake", rank=0, world_size=8, store=FakeStore())
mesh = init_device_mesh("cuda", (8,))
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
    fully_shard(block, mesh=mesh, reshard_after_forward=2)
fully_shard(model, mesh=mesh)
checkpoint("sharded")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(64, 256, device="cuda")
for step in range(2):
    loss = model(x).sum()
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")
