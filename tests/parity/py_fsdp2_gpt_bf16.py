import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn import functional as F
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore
from harness import checkpoint

# A small GPT under FSDP2 on 2 ranks (rank 0 of PyTorch's fake process group) with mixed
# precision: parameters all-gathered in bfloat16, gradients reduced in float32. Each block and the
# root (embeddings tied to the output layer, the final norm) is sharded; AdamW, two steps.
dist.init_process_group("fake", rank=0, world_size=2, store=FakeStore())
torch.manual_seed(0)
VOCAB, CTX, WIDTH, HEADS, LAYERS, BATCH = 512, 64, 128, 4, 2, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.out = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(WIDTH, dim=2)
        q = q.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        k = k.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        v = v.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.out(F.gelu(self.fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(CTX, WIDTH)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, VOCAB).float(), targets.view(-1))


model = GPT().cuda()
policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
for block in model.blocks:
    fully_shard(block, mp_policy=policy)
fully_shard(model, mp_policy=policy)
checkpoint("sharded")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
idx = torch.randint(0, VOCAB, (BATCH, CTX), device="cuda")
targets = torch.randint(0, VOCAB, (BATCH, CTX), device="cuda")
for step in range(2):
    loss = model(idx, targets)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    opt.step()
    opt.zero_grad(set_to_none=True)
    checkpoint(f"step {step} optimizer")
