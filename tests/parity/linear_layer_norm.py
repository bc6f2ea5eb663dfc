import torch
import torch.nn.functional as F
from harness import checkpoint

# F.linear with a bias is one fused addmm (no separate sum), without one a plain matmul; layer_norm
# saves its mean and rstd for backward.
x = torch.randn(256, 512, device="cuda", requires_grad=True)
w = torch.randn(1024, 512, device="cuda", requires_grad=True)
b = torch.randn(1024, device="cuda", requires_grad=True)
g = torch.randn(1024, device="cuda", requires_grad=True)
beta = torch.randn(1024, device="cuda", requires_grad=True)
checkpoint("inputs")
h = F.linear(x, w, b)
checkpoint("linear with bias")
h2 = F.linear(x, w)
checkpoint("linear without bias")
n = F.layer_norm(h, (1024,), g, beta)
checkpoint("layer_norm")
n2 = F.layer_norm(h2, (1024,))
checkpoint("layer_norm without affine")
(n.sum() + n2.sum()).backward()
checkpoint("backward")
del h, h2, n, n2
checkpoint("graphs gone")
x3 = torch.randn(8, 64, 512, device="cuda")
with torch.no_grad():
    h3 = F.linear(x3, w, b)
    n3 = F.layer_norm(h3, (1024,), g, beta, 1e-5)
checkpoint("3-D under no_grad")
