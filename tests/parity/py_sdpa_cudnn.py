import torch
import torch.nn.functional as F
from harness import checkpoint

# scaled_dot_product_attention in bfloat16 as PyTorch 2.11 runs it by default on an H200: cuDNN.
# q, k, v laid out as a model makes them (x.view(B, T, H, D).transpose(1, 2)) and contiguous.
torch.manual_seed(0)
B, T, H, D = 2, 256, 8, 64
qkv = torch.randn(B, T, 3 * H * D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
q, k, v = qkv.split(H * D, dim=2)
q = q.view(B, T, H, D).transpose(1, 2)
k = k.view(B, T, H, D).transpose(1, 2)
v = v.view(B, T, H, D).transpose(1, 2)
checkpoint("inputs")
y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
checkpoint("causal forward")
y = y.transpose(1, 2).contiguous().view(B, T, H * D)
loss = y.float().pow(2).mean()
loss.backward()
checkpoint("backward")
del y, loss
checkpoint("after del")
a = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
b = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
c = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
out = F.scaled_dot_product_attention(a, b, c)
checkpoint("contiguous forward")
out.sum().backward()
checkpoint("contiguous backward")
with torch.no_grad():
    out = F.scaled_dot_product_attention(a, b, c, is_causal=True)
checkpoint("no_grad forward")
mask = torch.ones(T, T, device="cuda", dtype=torch.bool).tril()
out = F.scaled_dot_product_attention(a, b, c, attn_mask=mask)
checkpoint("bool mask forward")
out.sum().backward()
checkpoint("bool mask backward")
