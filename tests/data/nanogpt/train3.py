"""Three AdamW steps of nanoGPT's model.py (unchanged, beside this file), run by PyTorch and by
torchlet alike; prints the peaks the caching allocator reached."""

import sys

import torch
from model import GPT, GPTConfig

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 8
# "bf16" runs the forward under autocast, as nanoGPT's train.py does on GPUs with bfloat16.
bf16 = len(sys.argv) > 2 and sys.argv[2] == "bf16"
torch.manual_seed(0)
config = GPTConfig(block_size=256, vocab_size=8192, n_layer=4, n_head=6, n_embd=384, dropout=0.0, bias=True)
model = GPT(config)
model.to("cuda")
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
x = torch.randint(0, config.vocab_size, (batch, config.block_size), device="cuda")
y = torch.randint(0, config.vocab_size, (batch, config.block_size), device="cuda")
for step in range(3):
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
        logits, loss = model(x, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    print(f"step {step}: allocated {torch.cuda.memory_allocated()} reserved {torch.cuda.memory_reserved()}")
print(f"peak allocated {torch.cuda.max_memory_allocated()} peak reserved {torch.cuda.max_memory_reserved()}")
