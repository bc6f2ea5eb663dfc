import torch
import torch.nn.functional as F
from harness import checkpoint

# A 1024-4096-4096-10 MLP, cross_entropy, two plain SGD steps; the grads are set to None after each update.
x = torch.randn(4096, 1024, device="cuda")
targets = torch.zeros(4096, dtype=torch.int64, device="cuda")
w1 = torch.randn(1024, 4096, device="cuda", requires_grad=True)
w2 = torch.randn(4096, 4096, device="cuda", requires_grad=True)
w3 = torch.randn(4096, 10, device="cuda", requires_grad=True)
lr = 0.01
checkpoint("setup")

out = x.matmul(w1).relu().matmul(w2).relu().matmul(w3)
loss = F.cross_entropy(out, targets)
checkpoint("forward step 0")
loss.backward()
checkpoint("backward step 0")
with torch.no_grad():
    w1.sub_(w1.grad * lr)
    w2.sub_(w2.grad * lr)
    w3.sub_(w3.grad * lr)
w1.grad = None
w2.grad = None
w3.grad = None
checkpoint("update step 0")

out = x.matmul(w1).relu().matmul(w2).relu().matmul(w3)
loss = F.cross_entropy(out, targets)
checkpoint("forward step 1")
loss.backward()
checkpoint("backward step 1")
with torch.no_grad():
    w1.sub_(w1.grad * lr)
    w2.sub_(w2.grad * lr)
    w3.sub_(w3.grad * lr)
w1.grad = None
w2.grad = None
w3.grad = None
checkpoint("update step 1")
