import os
import sys

import torch
from harness import checkpoint

# transformers' LlamaForCausalLM at a small size (2 layers of width 128, 4 heads over 2 key-value heads,
# vocabulary 1000) in bfloat16, with peft's LoRA at LoraConfig's defaults on q_proj and v_proj, trained for
# two AdamW steps with gradient checkpointing off and then on. Under PyTorch the model and the adapters are
# transformers' and peft's own; where they are not installed (under torchlet), models/llama.py, which
# must allocate exactly what they do.
try:
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from models.llama import LlamaConfig, LlamaForCausalLM, LoraConfig, get_peft_model


def train(model, tag):
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    for step in range(2):
        ids = torch.randint(0, 1000, (2, 64), device="cuda")
        out = model(input_ids=ids, labels=ids)
        checkpoint(f"{tag} step {step} forward")
        out.loss.backward()
        checkpoint(f"{tag} step {step} backward")
        opt.step()
        opt.zero_grad()
        checkpoint(f"{tag} step {step} optimizer")


torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
)
model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16)
checkpoint("model.cuda()")
model = get_peft_model(model, LoraConfig(target_modules=["q_proj", "v_proj"]))
model.train()
checkpoint("lora")
train(model, "plain")
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
train(model, "checkpointed")

# parity: shapes only
