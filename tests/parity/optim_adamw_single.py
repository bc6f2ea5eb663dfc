import torch
from harness import checkpoint

# AdamW one parameter at a time (foreach=False): exp_avg and exp_avg_sq appear at the
# first step; the temporaries of one parameter are freed before the next.
x = torch.randn(512, 1024, device="cuda")
w1 = torch.randn(1024, 2048, device="cuda", requires_grad=True)
w2 = torch.randn(2048, 16, device="cuda", requires_grad=True)
opt = torch.optim.AdamW([w1, w2], lr=1e-3, weight_decay=0.01, foreach=False)
checkpoint("setup")
for step in range(3):
    loss = x.matmul(w1).relu().matmul(w2).pow(2).mean()
    loss.backward()
    checkpoint(f"backward {step}")
    opt.step()
    checkpoint(f"step {step}")
    opt.zero_grad()
    checkpoint(f"zero_grad {step}")
