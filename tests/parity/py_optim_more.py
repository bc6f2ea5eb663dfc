import torch
import torch.nn as nn
from harness import checkpoint

# RMSprop and Adagrad as PyTorch runs them on CUDA by default (foreach), on an MLP: Adagrad's
# sums appear when the optimizer is made, RMSprop's square averages (and its momentum buffers and
# gradient averages when asked for) at the first step; the updates make their temporaries as
# lists (square roots, L2-decayed gradients, scaled numerators). Then each per tensor
# (foreach=False), whose temporaries come and go one parameter at a time.
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 256)).cuda()
x = torch.randn(128, 512, device="cuda")
checkpoint("model")


def train(opt, name, steps=2):
    for step in range(steps):
        loss = model(x).pow(2).mean()
        loss.backward()
        checkpoint(f"{name} backward {step}")
        opt.step()
        checkpoint(f"{name} step {step}")
        opt.zero_grad()
    del loss


opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
train(opt, "rmsprop")
del opt
checkpoint("rmsprop gone")
opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9, centered=True, weight_decay=0.01)
train(opt, "rmsprop centered")
del opt
opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9, maximize=True, foreach=False)
train(opt, "rmsprop single")
del opt
opt = torch.optim.Adagrad(model.parameters(), lr=1e-2)
checkpoint("adagrad made")
train(opt, "adagrad")
del opt
opt = torch.optim.Adagrad(model.parameters(), lr=1e-2, weight_decay=0.01, lr_decay=0.001)
train(opt, "adagrad decay")
del opt
opt = torch.optim.Adagrad(model.parameters(), lr=1e-2, weight_decay=0.01, foreach=False)
train(opt, "adagrad single")
del opt
checkpoint("end")
