import torch
import torch.nn.functional as F
from harness import checkpoint

# 40 Adam steps of a 512-1024-10 MLP on batches whose length varies from step to step (a fixed
# pseudo-random sequence): activations of ever new sizes split the cached blocks, and which free
# block a request takes is decided by the segments' addresses.
w1 = torch.randn(1024, 512, device="cuda", requires_grad=True)
b1 = torch.zeros(1024, device="cuda", requires_grad=True)
w2 = torch.randn(10, 1024, device="cuda", requires_grad=True)
b2 = torch.zeros(10, device="cuda", requires_grad=True)
opt = torch.optim.Adam([w1, b1, w2, b2], lr=1e-3)
checkpoint("setup")
seed = 7
for step in range(40):
    seed = (seed * 1103515245 + 12345) % 2147483648
    n = 64 + seed % 960
    x = torch.randn(n, 512, device="cuda")
    targets = torch.randint(0, 10, (n,), device="cuda")
    loss = F.cross_entropy(F.linear(F.linear(x, w1, b1).relu(), w2, b2), targets)
    loss.backward()
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step}")
