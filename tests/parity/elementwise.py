import torch
from harness import checkpoint

# Elementwise ops with tensors and numbers on either side, broadcasting, and mixed dtypes (PyTorch
# casts on the fly: no temporary copy of the float16 operand).
x = torch.randn(2048, 2048, device="cuda")
y = torch.randn(2048, 2048, device="cuda")
row = torch.randn(2048, device="cuda")
col = torch.randn(2048, 1, device="cuda")
xh = x.half()
n = torch.arange(4194304, device="cuda")
checkpoint("inputs")
a = x + y
b = x + 1
c = 1 + x
d = x - row
e = x * col
f = x / y
g = 2 / x
h = -x
i = x.pow(2)
j = x.pow(y)
k = x.clamp(-1, 1)
checkpoint("float32 ops")
p = xh + x
q = x * xh
r = xh * 2
s = n * 2.5
t = n + 1
u = xh + 1.5
checkpoint("mixed dtypes")
(x + y) * (x - y)
x * 2 + y * 3 - 1
checkpoint("bare expressions")
del a, b, c, d, e, f, g, h, i, j, k, p, q, r, s, t, u
checkpoint("del results")
