import torch
import torch.nn.functional as F
from harness import checkpoint

# The classic fragmentation workload, long: 500 Adam steps of a 128-384-384-10 MLP on batches of
# pseudo-random length (16 to 2047 rows), empty_cache every 100 steps, every statistic compared at
# every 50th step. Placement decides which split block each new size reuses, and so how far
# reserved memory grows.
w1 = torch.randn(384, 128, device="cuda", requires_grad=True)
b1 = torch.zeros(384, device="cuda", requires_grad=True)
w2 = torch.randn(384, 384, device="cuda", requires_grad=True)
b2 = torch.zeros(384, device="cuda", requires_grad=True)
w3 = torch.randn(10, 384, device="cuda", requires_grad=True)
b3 = torch.zeros(10, device="cuda", requires_grad=True)
opt = torch.optim.Adam([w1, b1, w2, b2, w3, b3], lr=1e-3)
checkpoint("setup")
seed = 12345
for step in range(500):
    seed = (seed * 1103515245 + 12345) % 2147483648
    n = 16 + seed % 2032
    x = torch.randn(n, 128, device="cuda")
    targets = torch.randint(0, 10, (n,), device="cuda")
    h = F.linear(x, w1, b1).relu()
    h = F.linear(h, w2, b2).relu()
    loss = F.cross_entropy(F.linear(h, w3, b3), targets)
    loss.backward()
    opt.step()
    opt.zero_grad()
    if step % 100 == 99:
        torch.cuda.empty_cache()
    if step % 50 == 49:
        checkpoint(f"step {step}")
