import torch
import torch.nn.functional as F
from harness import checkpoint

# Ops model and data code reaches for beyond the basics, forward and backward: elementwise
# (minimum/maximum, remainder and floor division of position ids, log1p, expm1, erf, sign,
# clamp_min/clamp_max, lerp, addcmul), vector norms over a dim and F.normalize (CLIP-style
# embeddings), F.one_hot, repeat_interleave (grouped-query attention's key/value heads), outer
# (rotary frequencies), movedim, and any/all along a dim.
torch.manual_seed(0)
x = torch.randn(64, 256, device="cuda", requires_grad=True)
y = torch.randn(64, 256, device="cuda", requires_grad=True)
checkpoint("inputs")
z = torch.maximum(x, y) + torch.minimum(x, y) * 0.5
z = z + x.abs().log1p() + y.expm1() * 0.1 + torch.erf(x) + x.sign()
z = z + x.clamp_min(0.0) + y.clamp_max(0.5) + torch.lerp(x, y, 0.3) + torch.addcmul(x, x, y, value=0.5)
checkpoint("elementwise")
z.sum().backward()
checkpoint("elementwise backward")
del z
x.grad = None
y.grad = None
pos = torch.arange(1000, device="cuda")
chunk, offset = pos // 64, pos % 64
checkpoint("ids")
del pos, chunk, offset
e = F.normalize(x, dim=-1)
n = y.norm(dim=1)
total = y.norm()
checkpoint("norms")
(e.sum() + n.sum() + total).backward()
checkpoint("norms backward")
del e, n, total
labels = torch.randint(0, 10, (64,), device="cuda")
hot = F.one_hot(labels, num_classes=10)
checkpoint("one_hot")
k = torch.randn(2, 4, 128, 64, device="cuda", requires_grad=True)
kk = k.repeat_interleave(4, dim=1)
t = torch.arange(128, device="cuda", dtype=torch.float32)
inv = 1.0 / (10000 ** (torch.arange(0, 64, 2, device="cuda").float() / 64))
freqs = torch.outer(t, inv)
moved = kk.movedim(1, 2)
checkpoint("gqa and rotary")
moved.sum().backward()
checkpoint("gqa backward")
del kk, moved
mask = x.detach() > 0
rows_any, rows_all = mask.any(dim=1), mask.all(dim=-1)
checkpoint("masks")
