import torch
import torch.nn.functional as F
from harness import checkpoint

# A 512-1024-1024-10 MLP with biases, batch 256, cross_entropy, three AdamW steps; the third zero_grad
# keeps the gradients as zeros. Equal free blocks in the small pool: which one a request takes is
# decided by the segments' addresses.
x = torch.randn(256, 512, device="cuda")
targets = torch.randint(0, 10, (256,), device="cuda")
w1 = torch.randn(1024, 512, device="cuda", requires_grad=True)
b1 = torch.zeros(1024, device="cuda", requires_grad=True)
w2 = torch.randn(1024, 1024, device="cuda", requires_grad=True)
b2 = torch.zeros(1024, device="cuda", requires_grad=True)
w3 = torch.randn(10, 1024, device="cuda", requires_grad=True)
b3 = torch.zeros(10, device="cuda", requires_grad=True)
opt = torch.optim.AdamW([w1, b1, w2, b2, w3, b3], lr=1e-3, weight_decay=0.01)
checkpoint("setup")
for step in range(3):
    h = F.linear(x, w1, b1).relu()
    h = F.linear(h, w2, b2).relu()
    loss = F.cross_entropy(F.linear(h, w3, b3), targets)
    checkpoint(f"forward {step}")
    loss.backward()
    checkpoint(f"backward {step}")
    opt.step()
    checkpoint(f"step {step}")
    opt.zero_grad(set_to_none=step < 2)
    checkpoint(f"zero_grad {step}")
