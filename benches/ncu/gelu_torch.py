"""PyTorch's side of benches/ncu/gelu.rhai, for Nsight Compute (benches/ncu/profile.sh)."""
import torch
x = torch.randn(4096, 4096, device="cuda")
for t in (x, x.half(), x.bfloat16()):
    for i in range(2): y = torch.nn.functional.gelu(t)
torch.cuda.synchronize()
print("done")
