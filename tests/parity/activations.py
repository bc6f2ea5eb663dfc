import torch
import torch.nn.functional as F
from harness import checkpoint

# GELU (exact and tanh) and SiLU: forward, the input each backward saves, and the gradients.
x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
xh = torch.randn(1024, 1024, device="cuda").half()
checkpoint("inputs")
a = F.gelu(x)
b = F.gelu(x, approximate="tanh")
c = F.silu(x)
checkpoint("forward with graphs")
(a.sum() + b.sum() + c.sum()).backward()
checkpoint("backward")
del a, b, c
x.grad = None
checkpoint("graphs gone")
with torch.no_grad():
    d = F.gelu(x)
    e = F.silu(xh)
    f = F.gelu(xh, approximate="tanh")
checkpoint("no_grad and half")
del d, e, f
checkpoint("end")
