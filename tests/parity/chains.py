import torch
from harness import checkpoint

# Method chains and nested calls: each intermediate is freed as soon as the next call has used it,
# unless the graph keeps it for backward.
x = torch.randn(2048, 2048, device="cuda")
checkpoint("x")
a = x.exp().sin().relu().sum(1).softmax(0)
checkpoint("a = x.exp().sin().relu().sum(1).softmax(0)")
b = ((x * 2) + (x * 3)).sqrt().mean(0)
checkpoint("b = ((x * 2) + (x * 3)).sqrt().mean(0)")
c = torch.softmax(torch.relu(torch.exp(x)).sum(0), 0)
checkpoint("c = softmax(relu(exp(x)).sum(0), 0)")
d = (x - x.mean(0)) / x.abs().sum(1, keepdim=True)
checkpoint("d = (x - x.mean(0)) / x.abs().sum(1, true)")
w = torch.randn(2048, 2048, device="cuda", requires_grad=True)
checkpoint("w")
e = w.exp().sin().relu().sum(1).softmax(0)
checkpoint("e = w.exp().sin().relu().sum(1).softmax(0)")
f = ((w * 2) + (w * 3)).sqrt().mean(0)
checkpoint("f = ((w * 2) + (w * 3)).sqrt().mean(0)")
e.sum().backward()
checkpoint("e.sum().backward()")
f.sum().backward()
checkpoint("f.sum().backward()")
del a, b, c, d, e, f
checkpoint("del a, b, c, d, e, f")
