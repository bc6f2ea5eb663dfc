import torch
from harness import checkpoint

# Adam, as PyTorch runs it on CUDA by default (foreach): exp_avg and exp_avg_sq appear at the
# first step, with the step counts; the update makes its temporaries as lists.
x = torch.randn(512, 1024, device="cuda")
w1 = torch.randn(1024, 2048, device="cuda", requires_grad=True)
w2 = torch.randn(2048, 16, device="cuda", requires_grad=True)
opt = torch.optim.Adam([w1, w2], lr=1e-3)
checkpoint("setup")
for step in range(3):
    loss = x.matmul(w1).relu().matmul(w2).pow(2).mean()
    loss.backward()
    checkpoint(f"backward {step}")
    opt.step()
    checkpoint(f"step {step}")
    opt.zero_grad()
    checkpoint(f"zero_grad {step}")
