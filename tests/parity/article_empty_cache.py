import torch
from harness import checkpoint

# The article's second method: empty_cache() while the tensor is still alive (scripts/02_empty_cache.rhai).
x = torch.randn(1000, 1000).cuda()
checkpoint("after x = randn(1000,1000).cuda()")
torch.cuda.empty_cache()
checkpoint("after empty_cache()")
del x
torch.cuda.empty_cache()
checkpoint("after del x; empty_cache()")
