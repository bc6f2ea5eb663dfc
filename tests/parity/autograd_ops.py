import torch
from harness import checkpoint

# Backward through broadcasting (the bias gradient is a reduction), through elementwise ops that save
# their inputs or outputs, retain_graph, and gradients accumulated into existing .grad tensors.
x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
bias = torch.randn(1024, device="cuda", requires_grad=True)
checkpoint("setup")
(x + bias).pow(2).mean().backward()
checkpoint("(x + bias).pow(2).mean().backward()")
(x.exp() * x.sigmoid()).sum().backward()
checkpoint("(x.exp() * x.sigmoid()).sum().backward()")
(x / (x.abs() + 1)).tanh().sum().backward()
checkpoint("(x / (x.abs() + 1)).tanh().sum().backward()")
s = (x * x).sum()
checkpoint("s = (x * x).sum()")
s.backward(retain_graph=True)
checkpoint("s.backward(retain_graph)")
s.backward()
checkpoint("s.backward()")
x.grad = None
bias.grad = None
checkpoint("grads cleared")
y = x.detach()
u = torch.randn(1024, 1024, device="cuda").requires_grad_()
(u * y).sum().backward()
checkpoint("(u * y).sum().backward()")
z = (x.log().clamp(0, 1) - x.sqrt()).mean(0)
checkpoint("z graph")
z.sum().backward()
checkpoint("z.sum().backward()")
