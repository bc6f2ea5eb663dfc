import torch
from harness import checkpoint

# Which calls share memory (views, conversions to where a tensor already is) and which copy.
x = torch.randn(1024, 2048, device="cuda")
checkpoint("x")
a = x.cuda()
b = x.to("cuda")
c = x.contiguous()
d = x.view(2048, 1024)
e = x.reshape(2048, 1024)
f = x.flatten()
g = x.t()
h = x.transpose(0, 1)
i = x.unsqueeze(0)
j = i.squeeze(0)
k = x.narrow(1, 0, 100)
l = x[0]
m = x.permute(1, 0)
n = x.detach()
checkpoint("views and no-ops")
p = x.t().contiguous()
q = x.t().reshape(1024, 2048)
r = x.t().flatten()
s = x.narrow(1, 0, 100).contiguous()
t = x.permute(1, 0).contiguous()
u = x.clone()
checkpoint("copies")
x.t().contiguous()
x.narrow(0, 0, 10).clone()
checkpoint("bare copies")
del a, b, c, d, e, f, g, h, i, j, k, l, m, n
checkpoint("del views")
del x
checkpoint("del x")
