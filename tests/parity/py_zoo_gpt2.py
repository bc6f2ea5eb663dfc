import os
import sys

import torch
from harness import checkpoint

# transformers' GPT2LMHeadModel at a small size (2 layers of width 128, 4 heads, vocabulary 1000) with
# its default configuration (dropout 0.1, SDPA attention, use_cache, tied embeddings), trained on its own
# language-model loss for two AdamW steps. Under PyTorch the model is transformers' own; where
# transformers is not installed (under torchlet), models/gpt2.py, which must allocate exactly what
# transformers' does.
try:
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from models.gpt2 import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(vocab_size=1000, n_positions=64, n_embd=128, n_layer=2, n_head=4)
model = GPT2LMHeadModel(config).cuda()
model.train()
checkpoint("model.cuda()")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(2):
    ids = torch.randint(0, 1000, (4, 64), device="cuda")
    out = model(input_ids=ids, labels=ids)
    checkpoint(f"step {step} forward")
    out.loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step} optimizer")

# parity: shapes only
