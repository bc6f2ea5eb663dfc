import torch
import torch.nn.functional as F
from harness import checkpoint

# In-place activations: relu_ writes into its input (no new block; backward uses the output), and
# dropout in training keeps a bool mask beside its output.
x = torch.randn(1024, 1024, device="cuda")
w = torch.randn(1024, 1024, device="cuda", requires_grad=True)
checkpoint("setup")
h = x.matmul(w)
a = h.relu_()
checkpoint("relu_")
d = F.dropout(a, p=0.1, training=True)
checkpoint("dropout")
e = F.dropout(a, 0.1, False)
checkpoint("dropout off")
d.sum().backward()
checkpoint("backward")
