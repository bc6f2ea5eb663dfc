import torch
import torch.nn.functional as F
from harness import checkpoint

# cross_entropy forward and backward twice on the same leaf logits: the second backward accumulates
# into logits.grad in place. Then the same through a matmul, and on a tiny batch (small pool only).
logits = torch.randn(4096, 1000, device="cuda", requires_grad=True)
targets = torch.zeros(4096, dtype=torch.int64, device="cuda")
checkpoint("setup")
loss = F.cross_entropy(logits, targets)
checkpoint("forward 0")
loss.backward()
checkpoint("backward 0")
loss = F.cross_entropy(logits, targets)
checkpoint("forward 1")
loss.backward()
checkpoint("backward 1")
logits.grad = None
checkpoint("logits.grad = None")
x = torch.randn(4096, 512, device="cuda")
w = torch.randn(512, 1000, device="cuda", requires_grad=True)
loss = F.cross_entropy(x.matmul(w), targets)
checkpoint("matmul forward 0")
loss.backward()
checkpoint("matmul backward 0")
loss = F.cross_entropy(x.matmul(w), targets)
loss.backward()
checkpoint("matmul backward 1")
small = torch.randn(8, 10, device="cuda", requires_grad=True)
small_targets = torch.zeros(8, dtype=torch.int64, device="cuda")
loss = F.cross_entropy(small, small_targets)
checkpoint("small forward")
loss.backward()
loss = F.cross_entropy(small, small_targets)
loss.backward()
checkpoint("small backward twice")
