import torch
import torch.nn as nn
from harness import checkpoint

# nn.MultiheadAttention as people use it: batch_first, trained with the default need_weights=True
# (the explicit bmm, softmax, bmm path that also returns head-averaged weights), then with
# need_weights=False (scaled_dot_product_attention) and a causal float mask, AdamW steps.
torch.manual_seed(0)
mha = nn.MultiheadAttention(embed_dim=128, num_heads=4, batch_first=True).cuda()
checkpoint("mha.cuda()")
opt = torch.optim.AdamW(mha.parameters(), lr=1e-3)
x = torch.randn(8, 64, 128, device="cuda")
out, weights = mha(x, x, x)
checkpoint("forward, need_weights=True")
(out.sum() + weights.sum()).backward()
checkpoint("backward")
opt.step()
opt.zero_grad()
checkpoint("step")
del out, weights
mask = torch.triu(torch.full((64, 64), float("-inf"), device="cuda"), diagonal=1)
out, none = mha(x, x, x, attn_mask=mask, need_weights=False)
checkpoint("forward, need_weights=False, causal mask")
out.sum().backward()
checkpoint("backward without weights")
opt.step()
opt.zero_grad()
checkpoint("second step")
