import math
import torch
import torch.nn.functional as F
from harness import checkpoint

# A 4-layer GPT (batch 8, 256 tokens, width 384, 6 heads, vocabulary 8192): pre-norm blocks of causal
# attention and a GELU MLP, a final layer norm, the head tied to the embedding, two AdamW steps.
B, T, C, H, V, L = 8, 256, 384, 6, 8192, 4
D = C // H
idx = torch.randint(0, V, (B, T), device="cuda")
targets = torch.randint(0, V, (B, T), device="cuda")
wte = torch.randn(V, C, device="cuda", requires_grad=True)
wpe = torch.randn(T, C, device="cuda", requires_grad=True)
layers = []
for l in range(L):
    layers.append(
        [
            torch.ones(C, device="cuda", requires_grad=True),
            torch.zeros(C, device="cuda", requires_grad=True),
            torch.randn(3 * C, C, device="cuda", requires_grad=True),
            torch.zeros(3 * C, device="cuda", requires_grad=True),
            torch.randn(C, C, device="cuda", requires_grad=True),
            torch.zeros(C, device="cuda", requires_grad=True),
            torch.ones(C, device="cuda", requires_grad=True),
            torch.zeros(C, device="cuda", requires_grad=True),
            torch.randn(4 * C, C, device="cuda", requires_grad=True),
            torch.zeros(4 * C, device="cuda", requires_grad=True),
            torch.randn(C, 4 * C, device="cuda", requires_grad=True),
            torch.zeros(C, device="cuda", requires_grad=True),
        ]
    )
lnf_w = torch.ones(C, device="cuda", requires_grad=True)
lnf_b = torch.zeros(C, device="cuda", requires_grad=True)
params = [wte, wpe]
for layer in layers:
    for p in layer:
        params.append(p)
params.append(lnf_w)
params.append(lnf_b)
mask = torch.triu(torch.ones(T, T, device="cuda"), diagonal=1) == 1
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
checkpoint("parameters")
for step in range(2):
    x = F.embedding(idx, wte) + wpe
    for l in range(L):
        p = layers[l]
        h = F.layer_norm(x, (C,), p[0], p[1])
        qkv = F.linear(h, p[2], p[3])
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, H, D).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        att = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        att = att.masked_fill(mask, float("-inf"))
        att = att.softmax(-1)
        y = att.matmul(v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + F.linear(y, p[4], p[5])
        h = F.layer_norm(x, (C,), p[6], p[7])
        x = x + F.linear(F.gelu(F.linear(h, p[8], p[9])), p[10], p[11])
    x = F.layer_norm(x, (C,), lnf_w, lnf_b)
    logits = x.matmul(wte.t())
    loss = F.cross_entropy(logits.view(B * T, V), targets.view(B * T))
    checkpoint(f"forward {step}")
    loss.backward()
    checkpoint(f"backward {step}")
    opt.step()
    checkpoint(f"step {step}")
    opt.zero_grad()
    checkpoint(f"zero_grad {step}")
