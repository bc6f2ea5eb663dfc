import torch
from harness import checkpoint

# The article's first method: free GPU memory with `del` (scripts/01_del.rhai).
checkpoint("start")
x = torch.randn(1000, 1000).cuda()
checkpoint("after x = randn(1000,1000).cuda()")
x = x.cpu()
checkpoint("after x = x.cpu()")
del x
checkpoint("after del x")
torch.cuda.empty_cache()
checkpoint("after empty_cache()")
