import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# An nn.Sequential MLP trained with SGD and momentum: the model moves to the GPU child by child.
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 10))
checkpoint("model on the host")
model = model.cuda()
checkpoint("model.cuda()")
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(256, 512, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
for step in range(3):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad(set_to_none=step != 1)
    checkpoint(f"step {step} optimizer")
del logits, loss
checkpoint("after del logits, loss")
