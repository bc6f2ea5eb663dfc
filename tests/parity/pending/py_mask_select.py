import torch
from harness import checkpoint

# Boolean-mask selection as loss and data code writes it: the elements where a mask holds
# (nonzero's count, its CUB scratch and the output sized by the count), on 1-D and 2-D masks,
# forward and backward, masked_select, and nonzero itself.
torch.manual_seed(0)
x = torch.randn(64, 256, device="cuda", requires_grad=True)
checkpoint("input")
mask = x.detach() > 0.5
picked = x[mask]
checkpoint("2-D mask")
picked.sum().backward()
checkpoint("2-D mask backward")
del picked
x.grad = None
rows = x[x.detach()[:, 0] > 0]
checkpoint("1-D mask on rows")
nz = mask.nonzero()
sel = torch.masked_select(x.detach(), mask)
checkpoint("nonzero and masked_select")
