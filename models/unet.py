"""The UNet of DDPM (Ho et al. 2020) in torch.nn modules, run unchanged under PyTorch and under torchlet."""

import math
from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["UNet", "ddpm_cifar10", "ddpm_schedule", "get_timestep_embedding"]

# No library installed on the GPU machine defines this model (diffusers is not there), so this one file is
# the model under PyTorch and under torchlet alike: tests/parity/py_zoo_unet.py imports it on both sides
# and compares every allocator event, which checks torchlet's ops (not a copy of a library) against
# PyTorch's. It follows the DDPM reference (diffusion_tf/models/unet.py, as pesser/pytorch_diffusion ports
# it to torch.nn) module for module and op for op, since the ops decide what is allocated and saved.
# Not offered, and refused by name: pretrained weights, and resamp_with_conv=False (the reference's
# average-pool downsampling and conv-less upsampling).


def get_timestep_embedding(timesteps: torch.Tensor, embedding_dim: int) -> torch.Tensor:
    """DDPM's sinusoidal embedding of the timesteps: sin then cos of t times geometric frequencies."""
    assert timesteps.dim() == 1
    half_dim = embedding_dim // 2
    # The reference spaces the frequencies by log(10000) / (half_dim - 1), as tensor2tensor does,
    # and puts sin before cos (unlike "Attention Is All You Need").
    emb = math.log(10000) / (half_dim - 1)
    # Made on the timesteps' device rather than on the host and copied, as the TF reference builds it
    # in the graph: a host tensor would cost a host-to-device copy per call and no less GPU memory.
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32, device=timesteps.device) * -emb)
    emb = timesteps.float()[:, None] * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if embedding_dim % 2 == 1:
        emb = F.pad(emb, (0, 1, 0, 0))
    return emb


def nonlinearity(x: torch.Tensor) -> torch.Tensor:
    # The reference's tf.nn.swish, x * sigmoid(x): SiLU, which PyTorch computes in one kernel that
    # saves only its input for the backward (x * torch.sigmoid(x) would keep a sigmoid too).
    return F.silu(x)


def Normalize(in_channels: int) -> nn.GroupNorm:
    # 32 groups and eps 1e-6: tf.contrib.layers.group_norm's as the reference calls it.
    return nn.GroupNorm(num_groups=32, num_channels=in_channels, eps=1e-6, affine=True)


class Upsample(nn.Module):
    """Nearest-neighbour doubling, then a 3x3 conv."""

    def __init__(self, in_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        return self.conv(x)


class Downsample(nn.Module):
    """A 3x3 conv of stride 2 after TF's 'SAME' padding."""

    def __init__(self, in_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=2, padding=0)

    def forward(self, x):
        # TF's 'SAME' padding of an even size with stride 2 pads one row and one column, at the bottom
        # and right only; Conv2d pads symmetrically, so the reference's padding is written out.
        x = F.pad(x, (0, 1, 0, 1), mode="constant", value=0)
        return self.conv(x)


class ResnetBlock(nn.Module):
    """GroupNorm, swish, conv; plus the projected time embedding; GroupNorm, swish, dropout, conv; plus the input."""

    def __init__(self, *, in_channels: int, out_channels: int, temb_channels: int, dropout: float):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.norm1 = Normalize(in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.temb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = Normalize(out_channels)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        if in_channels != out_channels:
            # The reference's default (conv_shortcut=False): a 1x1 "network in network" projection.
            self.nin_shortcut = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0)

    def forward(self, x, temb):
        h = x
        h = self.norm1(h)
        h = nonlinearity(h)
        h = self.conv1(h)
        # One bias per channel from the timestep, broadcast over the image.
        h = h + self.temb_proj(nonlinearity(temb))[:, :, None, None]
        h = self.norm2(h)
        h = nonlinearity(h)
        h = self.dropout(h)
        h = self.conv2(h)
        if self.in_channels != self.out_channels:
            x = self.nin_shortcut(x)
        return x + h


class AttnBlock(nn.Module):
    """Single-head self-attention over the pixels, with its residual."""

    def __init__(self, in_channels: int):
        super().__init__()
        self.in_channels = in_channels
        self.norm = Normalize(in_channels)
        # Three 1x1 convs, as the reference's three `nin` layers (not one fused qkv projection).
        self.q = nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.k = nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.v = nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.proj_out = nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        h_ = self.norm(x)
        q = self.q(h_)
        k = self.k(h_)
        v = self.v(h_)

        # The attention matrix written out (bmm, scale, softmax, bmm) as the reference computes it with
        # einsum, rather than F.scaled_dot_product_attention: its (hw x hw) weights are materialised and
        # saved for the backward, which is what the reference costs in memory.
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w)
        q = q.permute(0, 2, 1)  # b, hw, c
        k = k.reshape(b, c, h * w)  # b, c, hw
        w_ = torch.bmm(q, k)  # b, hw, hw: w_[b, i, j] = sum_c q[b, i, c] k[b, c, j]
        w_ = w_ * (int(c) ** (-0.5))
        w_ = F.softmax(w_, dim=2)

        v = v.reshape(b, c, h * w)
        w_ = w_.permute(0, 2, 1)  # b, hw (keys), hw (queries)
        h_ = torch.bmm(v, w_)  # b, c, hw: h_[b, c, j] = sum_i v[b, c, i] w_[b, i, j]
        h_ = h_.reshape(b, c, h, w)

        h_ = self.proj_out(h_)
        return x + h_


class UNet(nn.Module):
    """DDPM's noise-prediction UNet: eps_theta(x_t, t), an image of the input's shape."""

    def __init__(
        self,
        *,
        ch: int = 128,
        out_ch: int = 3,
        ch_mult: Sequence[int] = (1, 2, 2, 2),
        num_res_blocks: int = 2,
        attn_resolutions: Sequence[int] = (16,),
        dropout: float = 0.1,
        resamp_with_conv: bool = True,
        in_channels: int = 3,
        image_size: int = 32,
    ):
        super().__init__()
        if not resamp_with_conv:
            raise NotImplementedError(
                "torchlet's model zoo has no conv-less resampling: use resamp_with_conv=True")
        self.ch = ch
        self.temb_ch = ch * 4
        self.num_resolutions = len(ch_mult)
        self.num_res_blocks = num_res_blocks
        self.image_size = image_size
        self.in_channels = in_channels

        # timestep embedding: ch -> 4 ch -> 4 ch
        self.temb = nn.Module()
        self.temb.dense = nn.ModuleList([nn.Linear(ch, self.temb_ch), nn.Linear(self.temb_ch, self.temb_ch)])

        # downsampling
        self.conv_in = nn.Conv2d(in_channels, ch, kernel_size=3, stride=1, padding=1)
        curr_res = image_size
        in_ch_mult = (1,) + tuple(ch_mult)
        self.down = nn.ModuleList()
        block_in = ch
        for i_level in range(self.num_resolutions):
            block = nn.ModuleList()
            attn = nn.ModuleList()
            block_in = ch * in_ch_mult[i_level]
            block_out = ch * ch_mult[i_level]
            for _ in range(num_res_blocks):
                block.append(ResnetBlock(in_channels=block_in, out_channels=block_out,
                                         temb_channels=self.temb_ch, dropout=dropout))
                block_in = block_out
                if curr_res in attn_resolutions:
                    attn.append(AttnBlock(block_in))
            down = nn.Module()
            down.block = block
            down.attn = attn
            if i_level != self.num_resolutions - 1:
                down.downsample = Downsample(block_in)
                curr_res = curr_res // 2
            self.down.append(down)

        # middle: the reference always attends here, whatever attn_resolutions says
        self.mid = nn.Module()
        self.mid.block_1 = ResnetBlock(in_channels=block_in, out_channels=block_in,
                                       temb_channels=self.temb_ch, dropout=dropout)
        self.mid.attn_1 = AttnBlock(block_in)
        self.mid.block_2 = ResnetBlock(in_channels=block_in, out_channels=block_in,
                                       temb_channels=self.temb_ch, dropout=dropout)

        # upsampling: one block more per level than on the way down, each taking one skip
        self.up = nn.ModuleList()
        for i_level in reversed(range(self.num_resolutions)):
            block = nn.ModuleList()
            attn = nn.ModuleList()
            block_out = ch * ch_mult[i_level]
            skip_in = ch * ch_mult[i_level]
            for i_block in range(num_res_blocks + 1):
                if i_block == num_res_blocks:
                    # the last skip of a level is the one from before its downsample (or conv_in)
                    skip_in = ch * in_ch_mult[i_level]
                block.append(ResnetBlock(in_channels=block_in + skip_in, out_channels=block_out,
                                         temb_channels=self.temb_ch, dropout=dropout))
                block_in = block_out
                if curr_res in attn_resolutions:
                    attn.append(AttnBlock(block_in))
            up = nn.Module()
            up.block = block
            up.attn = attn
            if i_level != 0:
                up.upsample = Upsample(block_in)
                curr_res = curr_res * 2
            # prepended, so that self.up[i_level] is the level i_level (and parameters register top down)
            self.up.insert(0, up)

        # end
        self.norm_out = Normalize(block_in)
        self.conv_out = nn.Conv2d(block_in, out_ch, kernel_size=3, stride=1, padding=1)

    def forward(self, x, t):
        assert x.shape[2] == x.shape[3] == self.image_size

        # timestep embedding
        temb = get_timestep_embedding(t, self.ch)
        temb = self.temb.dense[0](temb)
        temb = nonlinearity(temb)
        temb = self.temb.dense[1](temb)

        # downsampling: every block's output is kept for its skip connection
        hs = [self.conv_in(x)]
        for i_level in range(self.num_resolutions):
            for i_block in range(self.num_res_blocks):
                h = self.down[i_level].block[i_block](hs[-1], temb)
                if len(self.down[i_level].attn) > 0:
                    h = self.down[i_level].attn[i_block](h)
                hs.append(h)
            if i_level != self.num_resolutions - 1:
                hs.append(self.down[i_level].downsample(hs[-1]))

        # middle
        h = hs[-1]
        h = self.mid.block_1(h, temb)
        h = self.mid.attn_1(h)
        h = self.mid.block_2(h, temb)

        # upsampling: the skips are taken newest first, each joined to h along the channels
        for i_level in reversed(range(self.num_resolutions)):
            for i_block in range(self.num_res_blocks + 1):
                h = self.up[i_level].block[i_block](torch.cat([h, hs.pop()], dim=1), temb)
                if len(self.up[i_level].attn) > 0:
                    h = self.up[i_level].attn[i_block](h)
            if i_level != 0:
                h = self.up[i_level].upsample(h)

        # end
        h = self.norm_out(h)
        h = nonlinearity(h)
        h = self.conv_out(h)
        return h


def ddpm_cifar10(*, weights=None, **kwargs) -> UNet:
    """DDPM's CIFAR-10 model: ch 128, ch_mult (1, 2, 2, 2), 2 res blocks, attention at 16x16, dropout 0.1, 32x32."""
    if weights is not None:
        raise NotImplementedError("torchlet's model zoo has no pretrained weights: use weights=None")
    config = dict(ch=128, out_ch=3, ch_mult=(1, 2, 2, 2), num_res_blocks=2, attn_resolutions=(16,),
                  dropout=0.1, in_channels=3, image_size=32)
    config.update(kwargs)
    return UNet(**config)


def ddpm_schedule(num_timesteps: int = 1000, beta_start: float = 1e-4, beta_end: float = 0.02):
    """(betas, alphas_cumprod) of DDPM's linear schedule, as Python floats.

    The reference computes them on the host in float64 (np.linspace, np.cumprod) and gathers from them
    on the device; Python floats are float64, and linspace's and cumprod's arithmetic is written as
    numpy's, so the values are the reference's. The caller makes the device buffers the timesteps index
    (torch.tensor(..., device="cuda")): torchlet has no torch.cumprod to build them on the device.
    """
    # np.linspace's arithmetic: i * step + start, the last one exactly beta_end.
    step = (beta_end - beta_start) / (num_timesteps - 1)
    betas = [i * step + beta_start for i in range(num_timesteps - 1)] + [beta_end]
    alphas_cumprod = []
    product = 1.0
    for beta in betas:
        product *= 1.0 - beta
        alphas_cumprod.append(product)
    return betas, alphas_cumprod
