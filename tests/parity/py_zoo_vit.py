import os
import sys

import torch
import torch.nn.functional as F
from harness import checkpoint

# torchvision's VisionTransformer at a small size (32x32 images in 8x8 patches, 2 layers of width 64 with
# 4 heads), trained for two AdamW steps. Under PyTorch the model is torchvision's own; where torchvision
# is not installed (under torchlet), models/vit.py, which must allocate exactly what torchvision's does.
# (Evaluation under torch.no_grad() would take nn.MultiheadAttention's fused inference path.)
try:
    from torchvision.models.vision_transformer import VisionTransformer
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from models.vit import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(
    image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10
).cuda()
checkpoint("model.cuda()")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    x = torch.randn(4, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (4,), device="cuda")
    loss = F.cross_entropy(model(x), y)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad(set_to_none=True)
    checkpoint(f"step {step} optimizer")

# parity: shapes only
