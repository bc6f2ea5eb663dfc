import torch
from harness import checkpoint

# SGD with momentum and weight decay, as PyTorch runs it on CUDA by default (foreach): the momentum
# buffers appear at the first step and stay; zero_grad() sets the gradients to None.
x = torch.randn(512, 1024, device="cuda")
w1 = torch.randn(1024, 2048, device="cuda", requires_grad=True)
w2 = torch.randn(2048, 16, device="cuda", requires_grad=True)
opt = torch.optim.SGD([w1, w2], lr=0.01, momentum=0.9, weight_decay=1e-4)
checkpoint("setup")
for step in range(3):
    loss = x.matmul(w1).relu().matmul(w2).pow(2).mean()
    loss.backward()
    checkpoint(f"backward {step}")
    opt.step()
    checkpoint(f"step {step}")
    opt.zero_grad()
    checkpoint(f"zero_grad {step}")
