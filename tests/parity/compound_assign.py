import torch
from harness import checkpoint

# `w -= w.grad * lr` under no_grad is an in-place SGD step (Python's __isub__): w keeps its storage
# and stays a leaf, the only new memory is the temporary `w.grad * lr`, freed right after the update,
# and the next backward accumulates into the same w.
w = torch.randn(1000, 1000, device="cuda", requires_grad=True)
x = torch.randn(1000, 1000, device="cuda")
lr = 0.1
checkpoint("setup")
(w * x).sum().backward()
checkpoint("first backward")
with torch.no_grad():
    w -= w.grad * lr
    checkpoint("w -= w.grad * lr")
(w * x).sum().backward()
checkpoint("second backward")
with torch.no_grad():
    w -= w.grad * lr
    w *= 0.5
    w += x
    w /= 2
    checkpoint("-= *= += /= under no_grad")
w.grad = None
checkpoint("grad freed")
y = x.clone()
y += 1
y -= x
y *= x
y /= x
y += x * 2
checkpoint("plain tensor in place")
h = (w * 2).sum()
h.backward()
checkpoint("third backward")
