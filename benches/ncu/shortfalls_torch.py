"""PyTorch's side of benches/ncu/shortfalls.rhai, for Nsight Compute (benches/ncu/profile.sh)."""
import torch
n = 1 << 28
x = torch.randn(n, device="cuda")
sq = x.view(16384, 16384)
for i in range(2): y = sq.t().contiguous()
h = x.half()
hsq = h.view(16384, 16384)
for i in range(2): y = hsq.t().contiguous()
hrows = h.view(262144, 1024)
for i in range(2): y = hrows.softmax(1)
rows = x.view(262144, 1024)
for i in range(2): y = rows.softmax(1)
for i in range(2): y = torch.nn.functional.gelu(h)
s = torch.randn(1 << 24, device="cuda")
for i in range(2): y = s.sum()
torch.cuda.synchronize()
print("done")
