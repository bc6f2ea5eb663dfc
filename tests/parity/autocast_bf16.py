import torch
import torch.nn.functional as F
from harness import checkpoint

# Mixed precision: under autocast, linear and matmul run in bfloat16 (the casted weights are cached
# until the block ends), softmax, sums and the loss in float32.
x = torch.randn(512, 1024, device="cuda")
w1 = torch.randn(2048, 1024, device="cuda", requires_grad=True)
b1 = torch.randn(2048, device="cuda", requires_grad=True)
w2 = torch.randn(2048, 16, device="cuda", requires_grad=True)
targets = torch.zeros(512, dtype=torch.int64, device="cuda")
checkpoint("setup")
with torch.autocast("cuda", dtype=torch.bfloat16):
    h = F.linear(x, w1, b1).relu()
    checkpoint("linear in bfloat16")
    out = h.matmul(w2)
    p = out.softmax(-1)
    loss = F.cross_entropy(out, targets)
    checkpoint("loss in float32")
checkpoint("block ended")
loss.backward()
checkpoint("backward")
del h, out, p, loss
w1.grad = None
b1.grad = None
w2.grad = None
checkpoint("end")
