"""PyTorch's side of benches/ncu/l2_sized.rhai, for Nsight Compute (benches/ncu/profile.sh)."""
import torch
s = torch.randn(1 << 24, device="cuda")
for i in range(2): y = s.sum()
h = s.half().view(4096, 4096)
for i in range(2): y = h.t().contiguous()
b = s.bfloat16().view(4096, 4096)
for i in range(2): y = b.t().contiguous()
torch.cuda.synchronize()
print("done")
