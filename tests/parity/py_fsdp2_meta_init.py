import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore
from harness import checkpoint

# FSDP2 as large models are built for it: on the meta device (no memory at all), sharded there,
# then each rank's shards made on the GPU with to_empty and initialised in place. The last rank of
# 4 on PyTorch's fake process group: 250 rows over 4 ranks pad to 252, so this rank's shards of
# 61 rows are padded to 63 again as to_empty makes them.
dist.init_process_group("fake", rank=3, world_size=4, store=FakeStore())
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))

    def init_weights(self):
        self.norm.reset_parameters()
        for linear in (self.fc1, self.fc2):
            nn.init.trunc_normal_(linear.weight, std=0.02)
            nn.init.zeros_(linear.bias)


with torch.device("meta"):
    model = nn.Sequential(Block(250), Block(250), Block(250))
print(model[0].fc1.weight.device, torch.cuda.memory_allocated())
checkpoint("built on meta")
for block in model:
    fully_shard(block)
fully_shard(model)
checkpoint("sharded on meta")
model.to_empty(device="cuda")
checkpoint("to_empty")
for block in model:
    block.init_weights()
checkpoint("initialised")
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
