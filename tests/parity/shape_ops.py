import torch
from harness import checkpoint

# cat and stack copy; split, chunk and expand are views; repeat copies; their backwards.
a = torch.randn(512, 256, device="cuda", requires_grad=True)
b = torch.randn(512, 256, device="cuda", requires_grad=True)
checkpoint("inputs")
c = torch.cat([a, b], 0)
d = torch.cat([a, b], dim=-1)
s = torch.stack([a, b])
checkpoint("cat and stack")
p, q = torch.split(c, 512)
parts = torch.chunk(d, 4, dim=1)
e = a[0:1].expand(512, 256)
r = a.repeat(2, 3)
checkpoint("views and repeat")
(c.sum() + d.sum() + s.sum() + p.sum() + parts[3].sum() + e.sum() + r.sum()).backward()
checkpoint("backward")
del c, d, s, p, q, parts, e, r
checkpoint("end")
