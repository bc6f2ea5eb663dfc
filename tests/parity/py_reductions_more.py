import torch
from harness import checkpoint

# Reductions of model and statistics code beyond sum/mean/max over one dim: over several dims at
# once (global pooling, per-sample losses), std and var (with and without Bessel's correction,
# std_mean/var_mean), amax/amin, logsumexp and prod, forward and backward, at sizes whose kernels
# need the reduction's global staging.
torch.manual_seed(0)
x = torch.randn(32, 64, 28, 28, device="cuda", requires_grad=True)
checkpoint("input")
pooled = x.mean(dim=(2, 3))
per_sample = x.sum(dim=(1, 2, 3))
checkpoint("several dims")
(pooled.sum() + per_sample.sum()).backward()
checkpoint("several dims backward")
del pooled, per_sample
x.grad = None
s = x.std()
v = x.var(dim=1, unbiased=False)
sm = torch.std_mean(x, dim=(2, 3))
vm = torch.var_mean(x, dim=-1, keepdim=True)
checkpoint("std and var")
(s + v.sum() + sm[0].sum() + vm[0].sum()).backward()
checkpoint("std and var backward")
del s, v, sm, vm
x.grad = None
a, b = x.amax(dim=(2, 3)), x.amin(dim=1)
lse = torch.logsumexp(x.flatten(1), dim=1)
p = x[:4, :4, :4, :4].prod(dim=-1)
checkpoint("amax, logsumexp, prod")
(a.sum() + b.sum() + lse.sum() + p.sum()).backward()
checkpoint("amax, logsumexp, prod backward")
