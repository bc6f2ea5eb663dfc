import torch
import torch.nn as nn
from harness import checkpoint

# retain_grad on activations, as one inspects gradients while debugging: each retained gradient
# is a contiguous clone (the expanded gradient of sum() too), a second backward adds into a new
# tensor, and a retained activation that is deleted is freed (the hook holds it weakly).
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).cuda()
x = torch.randn(256, 512, device="cuda", requires_grad=True)
h = model[0](x)
h.retain_grad()
a = model[1](h)
a.retain_grad()
a.register_hook(lambda g: g * 2)
out = model[2](a)
out.retain_grad()
checkpoint("forward")
out.sum().backward(retain_graph=True)
checkpoint("first backward")
out.square().mean().backward()
checkpoint("second backward")
del h
checkpoint("h deleted")
del a, out
model.zero_grad()
x.grad = None
checkpoint("cleared")
