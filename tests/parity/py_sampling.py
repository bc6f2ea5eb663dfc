import torch
import torch.nn.functional as F
from harness import checkpoint

# Sampling the next token as generation loops write it, over a GPT-2-sized vocabulary: top-k
# (nanoGPT's generate), top-p (sort, cumsum, a mask scattered back), multinomial draws, and
# einsum for attention scores; then topk and sort inside a graph, with their backward.
torch.manual_seed(0)
logits = torch.randn(4, 50257, device="cuda")
checkpoint("logits")
v, _ = torch.topk(logits, 50)
top_k = logits.clone()
top_k[top_k < v[:, [-1]]] = -float("inf")
probs = F.softmax(top_k, dim=-1)
idx = torch.multinomial(probs, num_samples=1)
checkpoint("top-k sample")
del v, top_k, probs, idx
sorted_logits, sorted_indices = torch.sort(logits, descending=True)
cumulative = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
remove = cumulative > 0.9
remove[..., 1:] = remove[..., :-1].clone()
remove[..., 0] = False
mask = remove.scatter(1, sorted_indices, remove)
top_p = logits.masked_fill(mask, -float("inf"))
idx = torch.multinomial(F.softmax(top_p, dim=-1), num_samples=1)
checkpoint("top-p sample")
del sorted_logits, sorted_indices, cumulative, remove, mask, top_p, idx
q = torch.randn(2, 4, 128, 64, device="cuda")
k = torch.randn(2, 4, 128, 64, device="cuda")
scores = torch.einsum("bhqd,bhkd->bhqk", q, k)
w = torch.randn(64, 32, device="cuda")
proj = torch.einsum("bhqd,de->bhqe", q, w)
checkpoint("einsum")
del scores, proj
x = torch.randn(64, 1000, device="cuda", requires_grad=True)
values, indices = x.topk(10, dim=1)
s, order = x.sort(dim=1)
(values.sum() + s[:, :5].sum()).backward()
checkpoint("topk and sort backward")
