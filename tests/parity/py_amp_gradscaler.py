import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# Mixed precision as the AMP recipe writes it: a float32 MLP run under autocast(float16) with a
# GradScaler (scale, backward, unscale_ before clip_grad_norm_, step, update), three steps, the
# second with an overflowing gradient so that step is skipped and the scale backs off.
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda")
checkpoint("model and scaler")
x = torch.randn(256, 512, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
for step in range(3):
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    if step == 1:
        loss = loss * float("inf")
    scaler.scale(loss).backward()
    checkpoint(f"step {step} backward")
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    checkpoint(f"step {step} unscale and clip")
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    checkpoint(f"step {step} step and update")
print("scale", scaler.get_scale())
