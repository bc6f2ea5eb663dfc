import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# torch.autograd.grad: gradients with respect to chosen tensors, returned instead of accumulated.
# PyTorch's engine runs only the nodes that lead to the inputs and computes only the gradients of
# edges that go somewhere, so asking for an input's gradient never makes the weights' (saliency
# maps, adversarial examples), and asking for a weight's never makes the earlier layers'.
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024), nn.GELU(), nn.Linear(1024, 10)).cuda()
x = torch.randn(2048, 1024, device="cuda", requires_grad=True)
target = torch.randint(0, 10, (2048,), device="cuda")
checkpoint("model and inputs")

# The input's gradient only: no weight gradient is made, no .grad is set.
loss = F.cross_entropy(model(x), target)
(gx,) = torch.autograd.grad(loss, x)
checkpoint("gradient of the input")
del loss

# The last layer's weight only: the pass stops there.
loss = F.cross_entropy(model(x), target)
gw, gb = torch.autograd.grad(loss, [model[4].weight, model[4].bias])
checkpoint("gradient of the last layer")
del loss, gw, gb

# A hidden activation (not a leaf), kept graph, then backward through the same graph.
h = model[1](model[0](x))
out = model[4](model[3](model[2](h)))
loss = F.cross_entropy(out, target)
(gh,) = torch.autograd.grad(loss, h, retain_graph=True)
checkpoint("gradient of a hidden activation")
loss.backward()
checkpoint("backward after grad")
del h, out, loss, gh
model.zero_grad(set_to_none=True)
x.grad = None

# Several roots with their gradients, an unused input, and materialized zeros.
y = x * 3
z = x.exp()
unused = torch.randn(512, 512, device="cuda", requires_grad=True)
g1, g2 = torch.autograd.grad([y, z], [x, unused], [torch.ones_like(y), torch.full_like(z, 0.5)],
                             allow_unused=True, materialize_grads=True)
checkpoint("two roots, an unused input")
del y, z, g1, g2, gx

# parity: shapes only
