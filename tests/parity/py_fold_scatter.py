import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# Patches as columns and back: F.unfold (im2col, as patch embeddings and hand-written
# convolutions take them) and F.fold (col2im, overlapping patches summed back), forward and
# backward, and through nn.Unfold/nn.Fold; then masked_scatter (a mask's places filled from a
# source in order, as token-replacement and multimodal code does), out of place with its
# gradients to both sides, and in place. The masks are fixed (every third element, every other
# row): what masked_select sends back is sized by them.
torch.manual_seed(0)
img = torch.randn(8, 32, 64, 64, device="cuda", requires_grad=True)
checkpoint("image")
cols = F.unfold(img, kernel_size=3, padding=1, stride=1)
checkpoint("unfold")
cols.sum().backward()
checkpoint("unfold backward")
del cols
img.grad = None
patches = nn.Unfold(kernel_size=(4, 4), stride=4)(img)
checkpoint("unfold patches")
(patches * 2).sum().backward()
checkpoint("unfold patches backward")
back = F.fold(patches, output_size=(64, 64), kernel_size=4, stride=4)
checkpoint("fold")
del patches
img.grad = None
c = torch.randn(8, 32 * 9, 31 * 31, device="cuda", requires_grad=True)
summed = nn.Fold(output_size=(64, 64), kernel_size=3, dilation=2, padding=1, stride=2)(c)
checkpoint("fold overlapping")
summed.sum().backward()
checkpoint("fold overlapping backward")
del summed, back, c
x = torch.randn(4096, 1024, device="cuda", requires_grad=True)
mask = (torch.arange(4096 * 1024, device="cuda").view(4096, 1024) % 3) == 0
src = torch.randn(4096, 1024, device="cuda", requires_grad=True)
checkpoint("masked inputs")
y = x.masked_scatter(mask, src)
checkpoint("masked_scatter")
y.sum().backward()
checkpoint("masked_scatter backward")
del y
row_mask = (torch.arange(4096, device="cuda") % 2 == 0).view(4096, 1)
y = torch.masked_scatter(x, row_mask, src * 3)
checkpoint("masked_scatter broadcast mask")
(y * y).sum().backward()
checkpoint("masked_scatter broadcast mask backward")
del y
with torch.no_grad():
    z = torch.zeros(4096, 1024, device="cuda")
    z.masked_scatter_(mask, src)
checkpoint("masked_scatter_")
del z, x, src, mask, row_mask
checkpoint("end")
