import torch
from harness import checkpoint

# matmul of 3-D and 4-D tensors with broadcasting, and bmm, forward and backward.
a = torch.randn(8, 128, 64, device="cuda", requires_grad=True)
b = torch.randn(8, 64, 128, device="cuda", requires_grad=True)
w = torch.randn(64, 32, device="cuda", requires_grad=True)
q = torch.randn(2, 4, 128, 64, device="cuda", requires_grad=True)
k = torch.randn(2, 4, 64, 128, device="cuda", requires_grad=True)
kb = torch.randn(4, 64, 128, device="cuda", requires_grad=True)
checkpoint("inputs")
c = torch.bmm(a, b)
d = a.matmul(b)
e = a.matmul(w)
f = q.matmul(k)
g = q.matmul(kb)
checkpoint("forward")
(c.sum() + d.sum() + e.sum() + f.sum() + g.sum()).backward()
checkpoint("backward")
del c, d, e, f, g
checkpoint("end")
