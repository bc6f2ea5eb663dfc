import torch
from harness import checkpoint

# zero_grad(set_to_none=False) keeps the gradients as zeros (the next backward adds into them),
# zero_grad() (set_to_none=True, the default) frees them.
x = torch.randn(512, 1024, device="cuda")
w1 = torch.randn(1024, 2048, device="cuda", requires_grad=True)
w2 = torch.randn(2048, 16, device="cuda", requires_grad=True)
opt = torch.optim.SGD([w1, w2], lr=0.01)
checkpoint("setup")
loss = x.matmul(w1).relu().matmul(w2).pow(2).mean()
loss.backward()
opt.step()
opt.zero_grad(set_to_none=False)
checkpoint("zeroed")
loss = x.matmul(w1).relu().matmul(w2).pow(2).mean()
loss.backward()
checkpoint("accumulated into the zeros")
opt.step()
opt.zero_grad()
checkpoint("set to none")
