import torch
import torch.nn.functional as F
from harness import checkpoint

# `total = total + loss` keeps every iteration's graph alive; `total + loss.item()` does not.
x = torch.randn(4096, 1024, device="cuda")
y = torch.randn(4096, 1024, device="cuda")
w = torch.randn(1024, 1024, device="cuda", requires_grad=True)
total = 0.0
loss = None
checkpoint("setup")
for i in range(3):
    loss = F.mse_loss(x.matmul(w).tanh(), y)
    total = total + loss
    checkpoint(f"pitfall iteration {i}")
total = 0.0
checkpoint("after total = 0.0")
for i in range(3):
    loss = F.mse_loss(x.matmul(w).tanh(), y)
    total = total + loss.item()
    checkpoint(f"fix iteration {i}")
loss = None
checkpoint("after loss = None")
