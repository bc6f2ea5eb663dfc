import torch
from torch.utils.checkpoint import checkpoint as recompute
from harness import checkpoint

# record-context: alloc
# Activation checkpointing (use_reentrant=False): only the block's input is saved; its forward runs
# again inside backward.
def block(x, w1, w2):
    return x.matmul(w1).relu().matmul(w2).relu()

x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
w1 = torch.randn(1024, 4096, device="cuda", requires_grad=True)
w2 = torch.randn(4096, 1024, device="cuda", requires_grad=True)
checkpoint("setup")
y = block(x, w1, w2)
checkpoint("plain forward")
y.sum().backward()
checkpoint("plain backward")
del y
x.grad = None
w1.grad = None
w2.grad = None
checkpoint("cleared")
y = recompute(block, x, w1, w2, use_reentrant=False, preserve_rng_state=False, determinism_check="none")
checkpoint("checkpointed forward")
y.sum().backward()
checkpoint("checkpointed backward")
