import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# Transposed convolutions, forward and backward, as decoders and UNets' up-sampling paths use
# them: nn.ConvTranspose2d (stride 2), F.conv_transpose2d without bias and with output_padding,
# nn.ConvTranspose1d, and ConvTranspose2d given the output size it must reach; cuDNN's
# workspaces come and go inside each.
torch.manual_seed(0)
up = nn.ConvTranspose2d(64, 32, kernel_size=4, stride=2, padding=1).cuda()
x = torch.randn(8, 64, 32, 32, device="cuda", requires_grad=True)
checkpoint("conv_transpose2d made")
y = up(x)
checkpoint("conv_transpose2d")
y.sum().backward()
checkpoint("conv_transpose2d backward")
del y
w = torch.randn(64, 16, 3, 3, device="cuda", requires_grad=True)
y = F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)
checkpoint("conv_transpose2d output_padding")
(y * y).sum().backward()
checkpoint("conv_transpose2d output_padding backward")
del y, x, w
up.zero_grad(set_to_none=True)
seq = nn.ConvTranspose1d(32, 16, kernel_size=4, stride=2, padding=1).cuda()
s = torch.randn(8, 32, 256, device="cuda", requires_grad=True)
y = seq(s)
checkpoint("conv_transpose1d")
y.sum().backward()
checkpoint("conv_transpose1d backward")
del y, s
up2 = nn.ConvTranspose2d(16, 8, kernel_size=3, stride=2, padding=1).cuda()
z = torch.randn(4, 16, 31, 31, device="cuda", requires_grad=True)
y = up2(z, output_size=(62, 62))
checkpoint("conv_transpose2d output_size")
y.mean().backward()
checkpoint("conv_transpose2d output_size backward")
del y, z
checkpoint("end")
