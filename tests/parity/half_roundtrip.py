import torch
from harness import checkpoint

# half()/float() round trips, and conversions to the dtype a tensor already has (PyTorch returns the
# tensor itself: no copy).
x = torch.randn(1000, 1000, device="cuda")
checkpoint("x")
h = x.half()
checkpoint("h = x.half()")
f = h.float()
checkpoint("f = h.float()")
x = x.half().float()
checkpoint("x = x.half().float()")
x.half().float()
checkpoint("bare x.half().float()")
hh = h.half()
ff = f.float()
checkpoint("hh = h.half(); ff = f.float()")
t = h.to(torch.float32)
d = x.double()
bf = x.bfloat16()
checkpoint("to float32, double, bfloat16")
del h
checkpoint("del h")
del hh
checkpoint("del hh")
w = torch.randn(1000, 1000, device="cuda", requires_grad=True)
wh = w.half()
checkpoint("wh = w.half() with grad")
wh.float().sum().backward()
checkpoint("wh.float().sum().backward()")
