import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# 3-d convolutions as volume and video models use them: a small 3-d UNet level (a padded 3x3x3
# convolution, a strided down-sampling one, a transposed one back up, a 1x1x1 head over the
# skip connection), a video stem with a (3, 7, 7) kernel under bfloat16 autocast, and a grouped,
# dilated F.conv3d without bias; cuDNN's workspaces come and go inside each, forward and backward.
torch.manual_seed(0)
enc = nn.Conv3d(1, 16, 3, padding=1).cuda()
down = nn.Conv3d(16, 32, 2, stride=2).cuda()
up = nn.ConvTranspose3d(32, 16, 2, stride=2).cuda()
head = nn.Conv3d(32, 2, 1).cuda()
x = torch.randn(2, 1, 32, 32, 32, device="cuda")
checkpoint("made")
h = F.relu(enc(x))
d = F.relu(down(h))
u = up(d)
y = head(torch.cat([h, u], 1))
checkpoint("forward")
loss = y.pow(2).mean()
loss.backward()
checkpoint("backward")
del h, d, u, y, loss
stem = nn.Conv3d(3, 64, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False).cuda()
v = torch.randn(2, 3, 8, 56, 56, device="cuda")
with torch.autocast("cuda", dtype=torch.bfloat16):
    z = stem(v)
checkpoint("stem under autocast")
z.float().sum().backward()
checkpoint("stem backward")
del z, v
w = torch.randn(8, 4, 3, 3, 3, device="cuda", requires_grad=True)
a = torch.randn(1, 8, 12, 12, 12, device="cuda", requires_grad=True)
b = F.conv3d(a, w, padding=2, dilation=2, groups=2)
checkpoint("grouped dilated")
b.sum().backward()
checkpoint("grouped dilated backward")
del a, b, w
checkpoint("end")
