import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from harness import checkpoint

# The memory-efficient kernel: float32 (which neither cuDNN nor flash takes), masks, head dims
# over 128 in half precision (its float32 output accumulator) and its backward workspace.
torch.manual_seed(0)
B, T, H, D = 2, 1000, 8, 64
q = torch.randn(B, H, T, D, device="cuda", requires_grad=True)
k = torch.randn(B, H, T, D, device="cuda", requires_grad=True)
v = torch.randn(B, H, T, D, device="cuda", requires_grad=True)
checkpoint("inputs")
out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
checkpoint("float32 causal forward")
out.sum().backward()
checkpoint("float32 backward")
del out
mask = torch.zeros(B, 1, T, T, device="cuda")
out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
checkpoint("float mask forward")
out.sum().backward()
checkpoint("float mask backward")
del out, mask
x = torch.randn(2, 8, 77, 160, device="cuda", dtype=torch.bfloat16, requires_grad=True)
bool_mask = torch.ones(77, 77, device="cuda", dtype=torch.bool).tril()
with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
    out = F.scaled_dot_product_attention(x, x, x, attn_mask=bool_mask)
checkpoint("bfloat16 head dim 160 with a bool mask")
out.sum().backward()
checkpoint("bfloat16 backward")
