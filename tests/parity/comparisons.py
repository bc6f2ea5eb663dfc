import torch
from harness import checkpoint

# Comparisons make bool tensors of one byte an element: `x > 0.5` on 10^6 floats takes 1000448 B
# (10^6 rounded up to 512), a broadcast `a > b` takes the broadcast shape's bytes, and a mask used
# in `x * mask` is read as it is (the product is float32; no float copy of the mask is made).
x = torch.randn(1000, 1000, device="cuda")
checkpoint("setup")
m = x > 0.5
checkpoint("m = x > 0.5")
a = torch.randn(1000, 1, device="cuda")
b = torch.randn(1, 1000, device="cuda")
checkpoint("a, b")
c = a > b
checkpoint("c = a > b (broadcast)")
y = x * m
checkpoint("y = x * m")
z = x * (x < 0)
checkpoint("z = x * (x < 0)")
e = (a == a).sum()
checkpoint("(a == a).sum()")
n = 0.5 >= x
k = x.ne(b)
checkpoint("0.5 >= x, x.ne(b)")
del m, c, n, k
checkpoint("masks freed")
