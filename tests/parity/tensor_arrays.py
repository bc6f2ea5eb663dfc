import torch
from harness import checkpoint

# Arrays of tensors emptied three ways: del, a bare pop(1), rebinding to []. A list frees its items
# last to first; the freed pieces of split segments show up as inactive_split.
a = [torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")]
checkpoint("small a")
del a
checkpoint("del small a")
a = [torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")]
checkpoint("small a again")
a.pop(1)
checkpoint("small a.pop(1)")
a = []
checkpoint("small a = []")
b = [torch.randn(1000000, device="cuda"), torch.randn(1000000, device="cuda"), torch.randn(1000000, device="cuda"), torch.randn(1000000, device="cuda")]
checkpoint("big b")
del b
checkpoint("del big b")
b = [torch.randn(1000000, device="cuda"), torch.randn(1000000, device="cuda"), torch.randn(1000000, device="cuda"), torch.randn(1000000, device="cuda")]
checkpoint("big b again")
b.pop(1)
checkpoint("big b.pop(1)")
b.pop(1)
checkpoint("big b.pop(1) again")
b = []
checkpoint("big b = []")
c = [torch.randn(1000000, device="cuda"), torch.randn(1000, device="cuda"), torch.randn(3000000, device="cuda"), torch.randn(10, device="cuda")]
checkpoint("mixed c")
keep = c[2]
c = []
checkpoint("mixed c = [] keeping c[2]")
del keep
torch.cuda.empty_cache()
checkpoint("del keep; empty_cache()")
