import torch
import torch.nn.functional as F
from harness import checkpoint

# Elementwise ops of model code beyond the basics, forward and backward: activations (leaky_relu,
# elu, softplus, mish, hardswish), rounding and tests (floor, ceil, round, trunc, isnan, isinf,
# isfinite), bool logic (&, |, ~), any(), and slices with a step (rotary embeddings as many write
# them: even and odd features, interleaved back).
torch.manual_seed(0)
x = torch.randn(256, 512, device="cuda", requires_grad=True)
checkpoint("input")
for name, act in (("leaky_relu", F.leaky_relu), ("elu", F.elu), ("softplus", F.softplus),
                  ("mish", F.mish), ("hardswish", F.hardswish)):
    y = act(x)
    y.sum().backward()
    del y
    checkpoint(name)
x.grad = None
with torch.no_grad():
    r = [x.floor(), x.ceil(), x.round(), x.trunc()]
    checkpoint("rounding")
    del r
    bad = x.isnan() | x.isinf()
    ok = ~bad & x.isfinite()
    print(bool(bad.any()), bool(ok.all()))
    del bad, ok
    checkpoint("tests")
h = torch.randn(8, 64, 128, device="cuda", requires_grad=True)
cos, sin = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
x1, x2 = h[..., ::2], h[..., 1::2]
out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
checkpoint("rope forward")
out.sum().backward()
checkpoint("rope backward")
del out, x1, x2
g = torch.zeros(8, 64, 128, device="cuda")
g[:, ::2] = 1.0
g[..., 1::4] += h.detach()[..., ::4]
checkpoint("strided assign")
