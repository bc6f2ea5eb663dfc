import os
import tempfile

import torch
import torch.nn as nn
from harness import checkpoint

# Checkpointing: torch.save copies each storage to the host (no device memory), torch.load makes
# each saved storage once on its device, in the order the file meets it (model, then AdamW's two
# moments per parameter; its steps live on the host), and load_state_dict copies in place.
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model(torch.randn(64, 512, device="cuda")).square().mean().backward()
opt.step()
checkpoint("trained")
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 1}, path)
checkpoint("saved")
ck = torch.load(path)
checkpoint("loaded")
model.load_state_dict(ck["model"])
checkpoint("weights restored")
cpu = torch.load(path, map_location="cpu")
checkpoint("loaded to the host")
del ck, cpu
checkpoint("dropped")
