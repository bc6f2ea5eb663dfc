import math
import torch
import torch.nn.functional as F
from harness import checkpoint

# A GPT-style block (batch 4, 256 tokens, width 512, 8 heads, vocabulary 1000): embedding, layer
# norm, causal attention with masked_fill and softmax, a GELU MLP, trained two steps with AdamW.
B, T, C, H, V = 4, 256, 512, 8, 1000
D = C // H
idx = torch.randint(0, V, (B, T), device="cuda")
targets = torch.randint(0, V, (B, T), device="cuda")
wte = torch.randn(V, C, device="cuda", requires_grad=True)
wpe = torch.randn(T, C, device="cuda", requires_grad=True)
ln1_w = torch.ones(C, device="cuda", requires_grad=True)
ln1_b = torch.zeros(C, device="cuda", requires_grad=True)
attn_w = torch.randn(3 * C, C, device="cuda", requires_grad=True)
attn_b = torch.zeros(3 * C, device="cuda", requires_grad=True)
proj_w = torch.randn(C, C, device="cuda", requires_grad=True)
proj_b = torch.zeros(C, device="cuda", requires_grad=True)
ln2_w = torch.ones(C, device="cuda", requires_grad=True)
ln2_b = torch.zeros(C, device="cuda", requires_grad=True)
fc_w = torch.randn(4 * C, C, device="cuda", requires_grad=True)
fc_b = torch.zeros(4 * C, device="cuda", requires_grad=True)
fc2_w = torch.randn(C, 4 * C, device="cuda", requires_grad=True)
fc2_b = torch.zeros(C, device="cuda", requires_grad=True)
params = [wte, wpe, ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fc2_w, fc2_b]
mask = torch.triu(torch.ones(T, T, device="cuda"), diagonal=1) == 1
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
checkpoint("parameters")
for step in range(2):
    x = F.embedding(idx, wte) + wpe
    h = F.layer_norm(x, (C,), ln1_w, ln1_b)
    qkv = F.linear(h, attn_w, attn_b)
    q, k, v = qkv.split(C, dim=2)
    q = q.view(B, T, H, D).transpose(1, 2)
    k = k.view(B, T, H, D).transpose(1, 2)
    v = v.view(B, T, H, D).transpose(1, 2)
    att = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
    att = att.masked_fill(mask, float("-inf"))
    att = att.softmax(-1)
    y = att.matmul(v).transpose(1, 2).contiguous().view(B, T, C)
    x = x + F.linear(y, proj_w, proj_b)
    h = F.layer_norm(x, (C,), ln2_w, ln2_b)
    x = x + F.linear(F.gelu(F.linear(h, fc_w, fc_b)), fc2_w, fc2_b)
    logits = x.matmul(wte.t())
    loss = F.cross_entropy(logits.view(B * T, V), targets.view(B * T))
    checkpoint(f"forward {step}")
    loss.backward()
    checkpoint(f"backward {step}")
    opt.step()
    checkpoint(f"step {step}")
    opt.zero_grad()
    checkpoint(f"zero_grad {step}")
