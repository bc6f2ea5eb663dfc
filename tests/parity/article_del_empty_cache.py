import torch
from harness import checkpoint

# The article's fourth method: del a temporary, then empty_cache() (scripts/04_del_and_empty_cache.rhai).
x = torch.randn(1000, 1000).cuda()
temp = x * 2
checkpoint("after x, temp = x * 2")
del temp
checkpoint("after del temp")
torch.cuda.empty_cache()
checkpoint("after empty_cache()")
del x
torch.cuda.empty_cache()
checkpoint("after del x; empty_cache()")
