import torch
import torch.nn.functional as F
from harness import checkpoint

# The same MLP with tanh and mse_loss, gradients accumulated over two micro-batches, grads zeroed in place.
xa = torch.randn(2048, 1024, device="cuda")
xb = torch.randn(2048, 1024, device="cuda")
ya = torch.randn(2048, 10, device="cuda")
yb = torch.randn(2048, 10, device="cuda")
w1 = torch.randn(1024, 4096, device="cuda", requires_grad=True)
w2 = torch.randn(4096, 4096, device="cuda", requires_grad=True)
w3 = torch.randn(4096, 10, device="cuda", requires_grad=True)
lr = 0.01
checkpoint("setup")

out = xa.matmul(w1).tanh().matmul(w2).tanh().matmul(w3)
loss = F.mse_loss(out, ya)
checkpoint("forward a step 0")
loss.backward()
checkpoint("backward a step 0")
out = xb.matmul(w1).tanh().matmul(w2).tanh().matmul(w3)
loss = F.mse_loss(out, yb)
checkpoint("forward b step 0")
loss.backward()
checkpoint("backward b step 0")
with torch.no_grad():
    w1.sub_(w1.grad * lr)
    w2.sub_(w2.grad * lr)
    w3.sub_(w3.grad * lr)
w1.grad.zero_()
w2.grad.zero_()
w3.grad.zero_()
checkpoint("update step 0")

out = xa.matmul(w1).tanh().matmul(w2).tanh().matmul(w3)
loss = F.mse_loss(out, ya)
checkpoint("forward a step 1")
loss.backward()
checkpoint("backward a step 1")
out = xb.matmul(w1).tanh().matmul(w2).tanh().matmul(w3)
loss = F.mse_loss(out, yb)
checkpoint("forward b step 1")
loss.backward()
checkpoint("backward b step 1")
with torch.no_grad():
    w1.sub_(w1.grad * lr)
    w2.sub_(w2.grad * lr)
    w3.sub_(w3.grad * lr)
w1.grad.zero_()
w2.grad.zero_()
w3.grad.zero_()
checkpoint("update step 1")
