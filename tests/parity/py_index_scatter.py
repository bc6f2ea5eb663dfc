import torch
from harness import checkpoint

# Gathering and scattering by index, forward and backward: rows picked by a tensor of indices
# (`table[ids]`, an embedding written by hand; PyTorch's IndexBackward0 accumulates with a sorted
# index_put_), scatter_add and index_add (mixture-of-experts and graph code summing into slots),
# and roll (shifted sequences).
torch.manual_seed(0)
table = torch.randn(8192, 512, device="cuda", requires_grad=True)
ids = torch.randint(0, 8192, (16384,), device="cuda")
checkpoint("inputs")
rows = table[ids]
checkpoint("rows by ids")
rows.sum().backward()
checkpoint("rows by ids backward")
del rows
table.grad = None
picked = table[ids[:4096], 7:]
checkpoint("rows by ids and a slice")
(picked * 2).sum().backward()
checkpoint("rows by ids and a slice backward")
del picked
table.grad = None
src = torch.randn(16384, 512, device="cuda", requires_grad=True)
slots = torch.randint(0, 8192, (16384, 1), device="cuda").expand(16384, 512)
summed = torch.zeros(8192, 512, device="cuda").scatter_add(0, slots, src)
checkpoint("scatter_add")
summed.sum().backward()
checkpoint("scatter_add backward")
del summed
src.grad = None
acc = table.index_add(0, ids, src)
checkpoint("index_add")
acc.sum().backward()
checkpoint("index_add backward")
del acc
table.grad = None
src.grad = None
buf = torch.zeros(8192, 512, device="cuda")
buf.index_add_(0, ids, src.detach(), alpha=0.5)
buf.scatter_add_(0, slots, src.detach())
checkpoint("in place")
shifted = torch.roll(table, shifts=3, dims=0)
both = table.roll((1, -2), (0, 1))
checkpoint("roll")
(shifted.sum() + both.sum()).backward()
checkpoint("roll backward")
del shifted, both
checkpoint("end")
