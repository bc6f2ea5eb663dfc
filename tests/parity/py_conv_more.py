import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# Transposed and 3-d convolutions, forward and backward, as decoders, UNets' up-sampling paths
# and video/volume models use them: nn.ConvTranspose2d (stride 2, output_padding), F.conv_transpose2d
# without bias, nn.Conv3d and nn.ConvTranspose1d; cuDNN's workspaces come and go inside each.
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
vol = nn.Conv3d(4, 16, kernel_size=3, padding=1).cuda()
v = torch.randn(2, 4, 16, 32, 32, device="cuda", requires_grad=True)
checkpoint("conv3d made")
y = vol(v)
checkpoint("conv3d")
y.sum().backward()
checkpoint("conv3d backward")
del y, v
seq = nn.ConvTranspose1d(32, 16, kernel_size=4, stride=2, padding=1).cuda()
s = torch.randn(8, 32, 256, device="cuda", requires_grad=True)
y = seq(s)
checkpoint("conv_transpose1d")
y.sum().backward()
checkpoint("conv_transpose1d backward")
del y, s
checkpoint("end")
