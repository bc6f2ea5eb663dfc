import os
import sys

import torch
import torch.nn.functional as F
from harness import checkpoint

# torchvision's ResNet-18 and ResNet-50 (BasicBlock and Bottleneck, the v1.5 stride on the 3x3), trained
# for two SGD steps with momentum on 64x64 images, then evaluated under torch.no_grad(). Under PyTorch the
# model is torchvision's own; where torchvision is not installed (under torchlet), models/resnet.py, which
# must allocate exactly what torchvision's does.
try:
    from torchvision.models import resnet18, resnet50
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from models.resnet import resnet18, resnet50


def train(model, batch, steps=2):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x = torch.randn(batch, 3, 64, 64, device="cuda")
        y = torch.randint(0, 10, (batch,), device="cuda")
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        checkpoint(f"step {step} backward")
        opt.step()
        opt.zero_grad()
        checkpoint(f"step {step} optimizer")
    model.eval()
    with torch.no_grad():
        logits = model(torch.randn(batch, 3, 64, 64, device="cuda"))
        checkpoint("eval forward")
    return logits.argmax(1)


torch.manual_seed(0)
model = resnet18(num_classes=10).cuda()
checkpoint("resnet18.cuda()")
train(model, 4)
del model
checkpoint("resnet18 deleted")

model = resnet50(num_classes=10).cuda()
checkpoint("resnet50.cuda()")
train(model, 2)

# parity: shapes only
