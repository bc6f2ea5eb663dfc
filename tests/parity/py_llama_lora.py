import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# A Llama-style decoder in bfloat16 as transformers writes it (RMSNorm in float32 with pow, mean
# and rsqrt; rotary embeddings from a matmul, cat, cos and sin; rotate_half by slicing; SDPA with
# is_causal; a SiLU-gated MLP) fine-tuned with LoRA as peft does it: a frozen base, trainable A and
# B on q_proj and v_proj, scaling alpha / r. The final norm is nn.RMSNorm and stays trainable.
# Two AdamW steps with clip_grad_norm_, then generation-style evaluation under no_grad.
VOCAB, WIDTH, HEADS, FFN, LAYERS, BATCH, SEQ, RANK, ALPHA = 1000, 256, 4, 512, 2, 2, 64, 8, 16


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LoraLinear(nn.Module):
    def __init__(self, base, r=RANK, alpha=ALPHA):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        result = self.base_layer(x)
        return result + self.lora_B(self.lora_A(x)) * self.scaling


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_dim = WIDTH // HEADS
        self.q_proj = nn.Linear(WIDTH, WIDTH, bias=False)
        self.k_proj = nn.Linear(WIDTH, WIDTH, bias=False)
        self.v_proj = nn.Linear(WIDTH, WIDTH, bias=False)
        self.o_proj = nn.Linear(WIDTH, WIDTH, bias=False)

    def forward(self, hidden_states, cos, sin):
        bsz, q_len, _ = hidden_states.size()
        shape = (bsz, q_len, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = out.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(WIDTH, FFN, bias=False)
        self.up_proj = nn.Linear(WIDTH, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, WIDTH, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()
        self.mlp = MLP()
        self.input_layernorm = LlamaRMSNorm(WIDTH)
        self.post_attention_layernorm = LlamaRMSNorm(WIDTH)

    def forward(self, hidden_states, cos, sin):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), cos, sin)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
        return residual + hidden_states


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, WIDTH)
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(LAYERS)])
        self.norm = nn.RMSNorm(WIDTH, eps=1e-6)
        self.rotary_emb = RotaryEmbedding(WIDTH // HEADS)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, input_ids, labels=None):
        hidden_states = self.embed_tokens(input_ids)
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        cos, sin = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, cos, sin)
        logits = self.lm_head(self.norm(hidden_states)).float()
        if labels is None:
            return logits
        return F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))


torch.manual_seed(0)
model = Llama().to(device="cuda", dtype=torch.bfloat16)
checkpoint("model.to(cuda, bfloat16)")
model.requires_grad_(False)
for layer in model.layers:
    layer.self_attn.q_proj = LoraLinear(layer.self_attn.q_proj).to(device="cuda", dtype=torch.bfloat16)
    layer.self_attn.v_proj = LoraLinear(layer.self_attn.v_proj).to(device="cuda", dtype=torch.bfloat16)
model.norm.weight.requires_grad_(True)
trainable = [p for p in model.parameters() if p.requires_grad]
checkpoint("LoRA adapters")
optimizer = torch.optim.AdamW(trainable, lr=1e-4)
input_ids = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda")
for step in range(2):
    loss = model(input_ids, labels=input_ids)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    checkpoint(f"step {step} clip")
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    checkpoint(f"step {step} optimizer")
model.eval()
with torch.no_grad():
    logits = model(input_ids[:, :16])
    next_token = logits[:, -1].argmax(dim=-1)
checkpoint("evaluation")
