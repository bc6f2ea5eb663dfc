import torch
from harness import checkpoint

# Bare expression statements: the value is dropped as soon as the statement ends.
x = torch.randn(2048, 2048, device="cuda")
checkpoint("x")
x.exp()
checkpoint("x.exp()")
x.exp().sum()
checkpoint("x.exp().sum()")
x + 1
checkpoint("x + 1")
x.exp()
x.exp()
checkpoint("x.exp() twice")
y = x.exp()
checkpoint("y = x.exp()")
y.exp()
checkpoint("y.exp()")
x.sum(0)
checkpoint("x.sum(0)")
w = torch.randn(2048, 2048, device="cuda", requires_grad=True)
checkpoint("w")
w.exp()
checkpoint("w.exp()")
w.exp().sin().sum()
checkpoint("w.exp().sin().sum()")
(w * 2).sum().backward()
checkpoint("(w * 2).sum().backward()")
