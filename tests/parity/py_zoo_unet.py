import os
import sys

import torch
import torch.nn.functional as F
from harness import checkpoint

# DDPM's UNet (models/unet.py) at a small size (16x16 images, ch 32, ch_mult (1, 2), one res block per
# level, attention at 8x8 and in the middle, dropout 0.1), trained for two AdamW steps on DDPM's loss,
# then one step of DDPM's sampling (Algorithm 2) under torch.no_grad(). No installed library defines
# this model (diffusers is not on the GPU machine), so models/unet.py is imported under PyTorch as
# under torchlet: the comparison checks torchlet's ops, module for module, against PyTorch's.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from models.unet import UNet, ddpm_schedule

# DDPM's linear schedule of 1000 steps, computed on the host as the reference computes it (float64), then
# one float32 device buffer each that the timesteps index.
T = 1000
betas_host, alphas_cumprod_host = ddpm_schedule(T)

torch.manual_seed(0)
model = UNet(ch=32, out_ch=3, ch_mult=(1, 2), num_res_blocks=1, attn_resolutions=(8,), dropout=0.1,
             in_channels=3, image_size=16).cuda()
betas = torch.tensor(betas_host, dtype=torch.float32, device="cuda")
alphas_cumprod = torch.tensor(alphas_cumprod_host, dtype=torch.float32, device="cuda")
checkpoint("model.cuda()")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    x0 = torch.randn(2, 3, 16, 16, device="cuda")
    t = torch.randint(0, T, (2,), device="cuda")
    noise = torch.randn_like(x0)
    # q_sample: x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) noise, abar_t gathered for each image
    a = alphas_cumprod[t].view(-1, 1, 1, 1)
    x_t = a.sqrt() * x0 + (1.0 - a).sqrt() * noise
    loss = F.mse_loss(model(x_t, t), noise)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad(set_to_none=True)
    checkpoint(f"step {step} optimizer")

# One step of ancestral sampling from pure noise at t = T - 1, with sigma_t^2 = beta_t:
# x_{t-1} = (x_t - beta_t / sqrt(1 - abar_t) eps) / sqrt(1 - beta_t) + sqrt(beta_t) z
model.eval()
with torch.no_grad():
    x = torch.randn(2, 3, 16, 16, device="cuda")
    t = torch.full((2,), T - 1, dtype=torch.long, device="cuda")
    eps = model(x, t)
    beta = betas[t].view(-1, 1, 1, 1)
    abar = alphas_cumprod[t].view(-1, 1, 1, 1)
    x = (x - beta / (1.0 - abar).sqrt() * eps) / (1.0 - beta).sqrt() + beta.sqrt() * torch.randn_like(x)
checkpoint("sampling step")

# parity: shapes only
