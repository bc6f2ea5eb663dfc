import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint as recompute, checkpoint_sequential
from harness import checkpoint

# Reentrant activation checkpointing (use_reentrant=True, PyTorch's CheckpointFunction): the block
# runs under no_grad and keeps only its tensor inputs; its backward runs the block again and a
# backward pass of its own inside the outer one, whose gradients of the detached inputs it returns.
# Every large tensor is 10 MiB or more (a segment of its own) and the parameters are small-pool
# blocks, so which of two equal free blocks best fit takes (the driver's placement) changes no event.
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(F.dropout(F.gelu(self.up(self.norm(x))), 0.1))


class Net(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 320)

    def forward(self, x, reentrant):
        for block in self.blocks:
            x = recompute(block, x, use_reentrant=reentrant) if reentrant is not None else block(x)
        return self.head(x)


model = Net(256, 3).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
checkpoint("model")
x = torch.randn(128, 256, 256, device="cuda", requires_grad=True)
y = torch.randint(0, 320, (128 * 256,), device="cuda")
for step, mode in enumerate([None, True, False]):
    loss = F.cross_entropy(model(x, mode).flatten(0, 1), y)
    checkpoint(f"forward {mode}")
    loss.backward()
    checkpoint(f"backward {mode}")
    opt.step()
    opt.zero_grad(set_to_none=True)
    x.grad = None
    checkpoint(f"step {mode}")
del loss

# An input that needs no gradient: the reentrant block's output needs none either, and the
# block's parameters get no gradient (PyTorch warns).
data = torch.randn(128, 256, 256, device="cuda")
out = recompute(model.blocks[0], data, use_reentrant=True)
loss = model.head(out).sum()
loss.backward()
checkpoint("input without grad")
opt.zero_grad(set_to_none=True)
del out, loss


# Two outputs that need gradients: the inner pass starts from both at once.
def split_block(h, w):
    a = torch.tanh(h @ w)
    return a, a.sum(-1, keepdim=True) * h


w = torch.randn(256, 256, device="cuda", requires_grad=True)
a, b = recompute(split_block, x, w, use_reentrant=True)
(a.sum() + b.pow(2).mean()).backward()
checkpoint("two outputs")
del a, b
x.grad = None
w.grad = None

# checkpoint_sequential: two of three segments checkpointed, reentrant.
seq = nn.Sequential(*[nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)) for _ in range(3)]).cuda()
out = checkpoint_sequential(seq, 3, x, use_reentrant=True)
checkpoint("sequential forward")
out.mean().backward()
checkpoint("sequential backward")
del out

# Under bfloat16 autocast: the recomputation casts the weights again in its own autocast block.
with torch.autocast("cuda", dtype=torch.bfloat16):
    loss = model.head(recompute(model.blocks[1], x, use_reentrant=True)).float().mean()
checkpoint("autocast forward")
loss.backward()
checkpoint("autocast backward")
del loss

# torch.autograd.backward of two roots with their gradients: one pass.
p = torch.randn(2048, 2048, device="cuda", requires_grad=True)
u = p * 2
v = p.exp()
torch.autograd.backward([u, v], [torch.ones_like(u), torch.full_like(v, 0.5)])
checkpoint("two roots")

# parity: shapes only
