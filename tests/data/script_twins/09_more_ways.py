"""PyTorch twin of scripts/09_more_ways.rhai: the same statements, printing the same figures."""
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def report(label):
    """One `after LABEL:` line, then restart the peak so each section shows its own."""
    allocated = torch.cuda.memory_allocated()
    reserved = torch.cuda.memory_reserved()
    peak = torch.cuda.max_memory_allocated()
    print(f"after {label}: allocated={allocated} reserved={reserved} peak={peak}")
    torch.cuda.reset_peak_memory_stats()


def block(x):
    return x.matmul(w1).relu().matmul(w2).relu()


torch.manual_seed(0)
x = torch.randn(4096, 1024, device="cuda")
w1 = (torch.randn(1024, 4096, device="cuda") * 0.03).requires_grad_()
w2 = (torch.randn(4096, 4096, device="cuda") * 0.015).requires_grad_()
w3 = (torch.randn(4096, 16, device="cuda") * 0.015).requires_grad_()
opt = torch.optim.AdamW([w1, w2, w3], lr=1e-3)
with torch.no_grad():
    warm_up = x.matmul(w1)
del warm_up
report("setup")

loss = x.matmul(w1).relu().matmul(w2).relu().matmul(w3).pow(2).mean()
report("forward")
loss.backward()
report("backward")
opt.step()
report("first step")
opt.zero_grad(set_to_none=False)
report("zero_grad(set_to_none=False)")

loss = x.matmul(w1).relu().matmul(w2).relu().matmul(w3).pow(2).mean()
loss.backward()
opt.step()
opt.zero_grad()
report("zero_grad()")

loss = x.matmul(w1).relu().matmul(w2).relu().matmul(w3).pow(2).mean()
report("forward again")
loss.backward()
opt.step()
opt.zero_grad()
report("full-batch step")

for micro in range(4):
    loss = x.narrow(0, micro * 1024, 1024).matmul(w1).relu().matmul(w2).relu().matmul(w3).pow(2).mean() / 4
    loss.backward()
opt.step()
opt.zero_grad()
report("4 micro-batches")

with torch.autocast("cuda", dtype=torch.bfloat16):
    loss = x.matmul(w1).relu().matmul(w2).relu().matmul(w3).pow(2).mean()
    report("autocast forward")
loss.backward()
opt.step()
opt.zero_grad()
report("autocast step")

loss = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False, determinism_check="none").matmul(w3).pow(2).mean()
report("checkpointed forward")
loss.backward()
opt.step()
opt.zero_grad()
report("checkpointed step")

loss = x.matmul(w1).relu_().matmul(w2).relu_().matmul(w3).pow(2).mean()
report("in-place forward")
loss.backward()
opt.step()
opt.zero_grad()
report("in-place step")
