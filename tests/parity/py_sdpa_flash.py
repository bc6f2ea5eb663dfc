import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from harness import checkpoint

# FlashAttention-2 as sdpa_kernel(FLASH_ATTENTION) asks for it: its log-sum-exp, RNG state,
# split-KV accumulators when the grid is small, and backward's softmax_d and dq_accum.
torch.manual_seed(0)
B, T, H, D = 2, 256, 8, 64
q = torch.randn(B, H, T, D, device="cuda", dtype=torch.float16, requires_grad=True)
k = torch.randn(B, H, T, D, device="cuda", dtype=torch.float16, requires_grad=True)
v = torch.randn(B, H, T, D, device="cuda", dtype=torch.float16, requires_grad=True)
checkpoint("inputs")
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
checkpoint("forward")
out.sum().backward()
checkpoint("backward")
del out
kg = torch.randn(B, 2, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
vg = torch.randn(B, 2, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
qg = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    out = F.scaled_dot_product_attention(qg, kg, vg, enable_gqa=True)
checkpoint("grouped-query forward")
out.sum().backward()
checkpoint("grouped-query backward")
cache_k = torch.randn(1, 8, 1000, 128, device="cuda", dtype=torch.bfloat16)
cache_v = torch.randn(1, 8, 1000, 128, device="cuda", dtype=torch.bfloat16)
step_q = torch.randn(1, 8, 4, 128, device="cuda", dtype=torch.bfloat16)
with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    step = F.scaled_dot_product_attention(step_q, cache_k, cache_v)
checkpoint("split-KV decode")
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
checkpoint("dropout forward")
