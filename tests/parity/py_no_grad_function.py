import torch
import torch.nn as nn
from harness import checkpoint

# @torch.no_grad() on a function: its ops record no graph, so its temporaries die at return.
model = nn.Sequential(nn.Linear(1000, 1000), nn.Tanh(), nn.Linear(1000, 1000)).cuda()
x = torch.randn(64, 1000, device="cuda")


@torch.no_grad()
def evaluate(model, x):
    h = model(x)
    return h.sum().item()


def train_forward(model, x):
    h = model(x)
    return h.sum()


value = evaluate(model, x)
checkpoint("after evaluate under @no_grad")
total = train_forward(model, x)
checkpoint("after train_forward with grad")
total.backward()
checkpoint("after backward")
del total
checkpoint("after del total")
