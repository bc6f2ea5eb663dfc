import torch
import torch.nn.functional as F
from harness import checkpoint

# embedding, where, masked_fill, triu/tril, index_select and gather, with their backwards.
wte = torch.randn(4096, 256, device="cuda", requires_grad=True)
idx = torch.randint(0, 4096, (8, 128), device="cuda")
checkpoint("inputs")
emb = F.embedding(idx, wte)
checkpoint("embedding")
scores = torch.randn(128, 128, device="cuda", requires_grad=True)
mask = torch.triu(torch.ones(128, 128, device="cuda"), diagonal=1) == 1
filled = scores.masked_fill(mask, float("-inf"))
low = torch.tril(scores)
picked = torch.where(mask, scores, torch.zeros(128, 128, device="cuda"))
checkpoint("masks")
rows = torch.arange(0, 128, 2, device="cuda")
sel = torch.index_select(scores, 0, rows)
cols = torch.randint(0, 128, (128, 4), device="cuda")
gat = torch.gather(scores, 1, cols)
checkpoint("index_select and gather")
(emb.sum() + filled.softmax(-1).sum() + low.sum() + picked.sum() + sel.sum() + gat.sum()).backward()
checkpoint("backward")
