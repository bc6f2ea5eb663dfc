import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint


# A small DDPM-style UNet as diffusion code writes it: GroupNorm + SiLU + Conv2d residual blocks
# with a sinusoidal time embedding, a downsample that pads (0, 1, 0, 1) before a stride-2 conv,
# a nearest Upsample, a skip connection by cat, and a low-resolution condition resized bilinearly.
# Two AdamW steps on the noise-prediction loss, then sampling-style evaluation under no_grad.
def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb_proj = nn.Linear(temb, cout)
        self.norm2 = nn.GroupNorm(8, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class Downsample(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, stride=2, padding=0)

    def forward(self, x):
        return self.conv(F.pad(x, (0, 1, 0, 1), mode="constant", value=0))


class UNet(nn.Module):
    def __init__(self, ch=32, temb=64):
        super().__init__()
        self.ch = ch
        self.temb = nn.Sequential(nn.Linear(ch, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(6, ch, 3, padding=1)
        self.down = ResBlock(ch, ch, temb)
        self.downsample = Downsample(ch)
        self.mid = ResBlock(ch, ch, temb)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.up_conv = nn.Conv2d(ch, ch, 3, padding=1)
        self.up = ResBlock(2 * ch, ch, temb)
        self.norm_out = nn.GroupNorm(8, ch)
        self.conv_out = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x, t, low_res):
        temb = self.temb(timestep_embedding(t, self.ch))
        cond = F.interpolate(low_res, size=x.shape[-2:], mode="bilinear", align_corners=False)
        h = self.conv_in(torch.cat([x, cond], dim=1))
        skip = self.down(h, temb)
        h = self.mid(self.downsample(skip), temb)
        h = self.up_conv(self.upsample(h))
        h = self.up(torch.cat([h, skip], dim=1), temb)
        return self.conv_out(F.silu(self.norm_out(h)))


torch.manual_seed(0)
model = UNet().cuda()
checkpoint("model.cuda()")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
images = torch.randn(4, 3, 32, 32, device="cuda")
low_res = torch.randn(4, 3, 8, 8, device="cuda")
for step in range(2):
    t = torch.randint(0, 1000, (4,), device="cuda")
    noise = torch.randn_like(images)
    loss = F.mse_loss(model(images + noise, t, low_res), noise)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    checkpoint(f"step {step} optimizer")
model.eval()
with torch.no_grad():
    sample = model(images, torch.full((4,), 999, device="cuda"), low_res)
checkpoint("evaluation")
