import torch
import torch.nn.functional as F
from harness import checkpoint

# Python's scoping in a training loop: the loop's names outlive each iteration (the previous `out`
# and `loss` are alive while the next forward runs), a function reads the weights as globals, and
# `del` removes one list item or one gradient.
x = torch.randn(2048, 1024, device="cuda")
y = torch.randn(2048, 256, device="cuda")
w1 = torch.randn(1024, 1024, device="cuda", requires_grad=True)
w2 = torch.randn(1024, 256, device="cuda", requires_grad=True)
checkpoint("setup")


def forward(inp):
    return torch.matmul(torch.relu(torch.matmul(inp, w1)), w2)


for step in range(3):
    out = forward(x)
    loss = F.mse_loss(out, y)
    checkpoint(f"forward {step}")
    loss.backward()
    with torch.no_grad():
        w1.sub_(w1.grad * 0.01)
        w2.sub_(w2.grad * 0.01)
    w1.grad = None
    w2.grad = None
    checkpoint(f"step {step}")
checkpoint("after the loop")
del out, loss
checkpoint("del out, loss")

if True:
    keep = [torch.ones(1024, 1024, device="cuda"), torch.ones(512, 1024, device="cuda")]
checkpoint("keep bound in an if")
del keep[0]
checkpoint("del keep[0]")
(w1 * 2).sum().backward()
checkpoint("backward for w1.grad")
del w1.grad
checkpoint("del w1.grad")
