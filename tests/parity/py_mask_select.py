import torch
from harness import checkpoint

# Boolean-mask selection as loss and data code writes it: the elements where a mask holds
# (nonzero's count, its CUB scratch and the output sized by the count), on 1-D and 2-D masks,
# forward and backward, masked_select, nonzero itself and where with one argument. The masks
# come from positions, not random values, so that both sides select the same elements.
torch.manual_seed(0)
x = torch.randn(64, 256, device="cuda", requires_grad=True)
position = torch.arange(64 * 256, device="cuda").view(64, 256)
checkpoint("input")
mask = position % 3 == 1
del position
picked = x[mask]
checkpoint("2-D mask")
picked.sum().backward()
checkpoint("2-D mask backward")
del picked
x.grad = None
rows = x[torch.arange(64, device="cuda") % 5 < 2]
checkpoint("1-D mask on rows")
(rows * rows).sum().backward()
checkpoint("1-D mask backward")
x.grad = None
nz = mask.nonzero()
sel = torch.masked_select(x.detach(), mask)
r, c = torch.where(mask[:8])
checkpoint("nonzero, masked_select and where")
tiny = x.detach()[:2, :32]
few = tiny[tiny.abs() > 100]
checkpoint("nothing selected")
