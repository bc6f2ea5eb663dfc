import torch
from harness import checkpoint

# The article's third method: compute under no_grad (scripts/03_no_grad.rhai).
x = torch.randn(1000, 1000).cuda()
with torch.no_grad():
    y = x + 1
checkpoint("after no_grad y = x + 1")
del x, y
torch.cuda.empty_cache()
checkpoint("after del x, y; empty_cache()")
w = torch.randn(1000, 1000, device="cuda", requires_grad=True)
checkpoint("after w")
h = (w * 2).exp().relu().sum()
checkpoint("after h with grad")
del h
checkpoint("after del h")
with torch.no_grad():
    h = (w * 2).exp().relu().sum()
checkpoint("after h under no_grad")
