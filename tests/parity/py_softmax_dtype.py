import torch
import torch.nn.functional as F
from harness import checkpoint

# softmax and log_softmax with a result dtype, as eager attention in transformers writes them
# (softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)): from bfloat16 the input is
# converted first, from float16 on the GPU one kernel reads half and writes float, and backward
# gives the gradient in the input's dtype.
torch.manual_seed(0)
for dtype in (torch.bfloat16, torch.float16):
    q = torch.randn(4, 8, 256, 64, device="cuda", dtype=dtype, requires_grad=True)
    k = torch.randn(4, 8, 256, 64, device="cuda", dtype=dtype, requires_grad=True)
    v = torch.randn(4, 8, 256, 64, device="cuda", dtype=dtype, requires_grad=True)
    scores = q @ k.transpose(-1, -2) / 8.0
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(dtype)
    out = probs @ v
    checkpoint(f"{dtype} forward")
    out.float().square().mean().backward()
    checkpoint(f"{dtype} backward")
    del q, k, v, scores, probs, out
    logits = torch.randn(512, 1000, device="cuda", dtype=dtype, requires_grad=True)
    target = torch.randint(0, 1000, (512,), device="cuda")
    loss = F.nll_loss(logits.log_softmax(-1, dtype=torch.float32), target)
    checkpoint(f"{dtype} log_softmax")
    loss.backward()
    checkpoint(f"{dtype} log_softmax backward")
    del logits, target, loss
