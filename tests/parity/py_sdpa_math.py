import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from harness import checkpoint

# The math backend, PyTorch's composite: half inputs computed in float32, the causal mask made
# and converted, _safe_softmax's temporaries, and the discarded probabilities' cast.
torch.manual_seed(0)
B, T, H, D = 2, 128, 4, 32
q = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
k = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
v = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
checkpoint("inputs")
with sdpa_kernel(SDPBackend.MATH):
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
checkpoint("causal forward")
out.sum().backward()
checkpoint("backward")
del out
x = torch.randn(B, H, T, D, device="cuda", dtype=torch.float64, requires_grad=True)
mask = torch.randn(T, T, device="cuda", dtype=torch.float64)
out = F.scaled_dot_product_attention(x, x, x, attn_mask=mask)
checkpoint("float64 (math only) with a float mask")
out.sum().backward()
checkpoint("float64 backward")
