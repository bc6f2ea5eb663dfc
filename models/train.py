"""Train a model of the zoo for a few steps and print its peak memory, under PyTorch or under torchlet.

    python3 models/train.py MODEL [batch=N] [seq=N] [precision=P] [ckpt=0|1] [steps=N] [parallel=D]
    torchlet fit models/train.py MODEL batch=64 --gpu H200
    torchlet fit models/train.py llama3-8b seq=4096 parallel=fsdp --world-size 8 --gpu H100-80GB

MODEL is resnet50, vit_b_16, gpt2, llama3-8b-lora or llama3-8b (whose weights are bfloat16; the
latter trained in full), or unet (DDPM's CIFAR-10 UNet, 32x32, on DDPM's noise-prediction loss; DDPM
trained it at batch=128); P is float32 or autocast (float16 autocast with a GradScaler); D is none, ddp
(DistributedDataParallel) or fsdp (FSDP2: each decoder layer and the whole model `fully_shard`ed),
one process per rank as torchrun (or `torchlet fit --world-size N`) starts them. Under PyTorch the model is the real library's
(torchvision, transformers, peft); where the library is not installed (under torchlet), the copy in
models/, which allocates what the library does; unet is models/unet.py under both (no installed library
defines it). The last line is the peaks as JSON.
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

DEFAULTS = {"batch": 8, "seq": 1024, "precision": "float32", "ckpt": 0, "steps": 2, "parallel": "none"}
TEXT_SETTINGS = ("precision", "parallel")


def parse(argv):
    """MODEL and the key=value settings, with DEFAULTS for the rest."""
    if not argv:
        sys.exit(__doc__)
    settings = dict(DEFAULTS)
    for arg in argv[1:]:
        key, _, value = arg.partition("=")
        if key not in DEFAULTS or not value:
            sys.exit(f"unknown setting {arg!r}: use {', '.join(k + '=' for k in DEFAULTS)}")
        settings[key] = value if key in TEXT_SETTINGS else int(value)
    return argv[0], settings


def build(name, s):
    """(model, make_batch, loss_of) for MODEL: the batch maker and loss as the model is trained."""
    if name in ("resnet50", "vit_b_16"):
        try:
            import torchvision.models as tv
        except ImportError:
            from models import resnet as tv_resnet, vit as tv_vit
            tv = tv_resnet if name == "resnet50" else tv_vit
        model = getattr(tv, name)().cuda()
        b = s["batch"]

        def make_batch():
            return torch.randn(b, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (b,), device="cuda")

        return model, make_batch, lambda m, x, y: F.cross_entropy(m(x), y)
    if name == "unet":
        if s["ckpt"] or s["parallel"] == "fsdp":
            sys.exit("unet: ckpt=1 and parallel=fsdp are not offered (it has no checkpointing or FSDP plan)")
        return ddpm_unet(s["batch"])
    if name == "gpt2":
        try:
            from transformers import GPT2Config, GPT2LMHeadModel
        except ImportError:
            from models.gpt2 import GPT2Config, GPT2LMHeadModel
        model = GPT2LMHeadModel(GPT2Config()).cuda()
    elif name == "llama3-8b-lora":
        model = llama3_8b_lora()
    elif name == "llama3-8b":
        model = llama3_8b()
    else:
        sys.exit(f"unknown model {name!r}: resnet50, vit_b_16, gpt2, llama3-8b-lora, llama3-8b or unet")
    if s["ckpt"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    b, t = s["batch"], s["seq"]

    def make_tokens():
        ids = torch.randint(0, 1000, (b, t), device="cuda")
        return ids, ids

    return model, make_tokens, lambda m, x, y: m(input_ids=x, labels=y).loss


def ddpm_unet(b):
    """DDPM's CIFAR-10 UNet on b 32x32 images and DDPM's loss (Ho et al. 2020, Algorithm 1): the MSE
    between the noise and the model's prediction of it from x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) noise,
    at a random timestep per image, abar gathered from the schedule's buffer."""
    from models.unet import ddpm_cifar10, ddpm_schedule

    model = ddpm_cifar10().cuda()
    _, alphas_cumprod = ddpm_schedule(1000)
    alphas_cumprod = torch.tensor(alphas_cumprod, dtype=torch.float32, device="cuda")

    def make_batch():
        return torch.randn(b, 3, 32, 32, device="cuda"), None

    def loss_of(m, x0, _):
        t = torch.randint(0, alphas_cumprod.shape[0], (x0.shape[0],), device="cuda")
        noise = torch.randn_like(x0)
        a = alphas_cumprod[t].view(-1, 1, 1, 1)
        x_t = a.sqrt() * x0 + (1.0 - a).sqrt() * noise
        return F.mse_loss(m(x_t, t), noise)

    return model, make_batch, loss_of


def llama3_8b_lora():
    """Llama 3 8B in bfloat16 with peft's LoRA at LoraConfig's defaults on q_proj and v_proj."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        from models.llama import LoraConfig, get_peft_model
    return get_peft_model(llama3_8b(), LoraConfig(target_modules=["q_proj", "v_proj"]))


def llama3_8b():
    """Llama 3 8B in bfloat16, every parameter trained."""
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        from models.llama import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192, rope_theta=500000.0,
        bos_token_id=128000, eos_token_id=128001,
    )
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    return model


def parallelize(model, how):
    """The model as `parallel=` wraps it, in a process group joined from the launcher's RANK and
    WORLD_SIZE: DDP, or FSDP2 over each decoder layer (or block) and then the whole model."""
    if how == "none":
        return model
    import torch.distributed as dist

    dist.init_process_group("nccl")
    if how == "ddp":
        return torch.nn.parallel.DistributedDataParallel(model)
    if how != "fsdp":
        sys.exit(f"unknown parallel={how!r}: none, ddp or fsdp")
    from torch.distributed.fsdp import fully_shard

    layers = model.model.layers if hasattr(model, "model") else model.transformer.h
    for layer in layers:
        fully_shard(layer)
    fully_shard(model)
    return model


def main():
    name, s = parse(sys.argv[1:])
    torch.manual_seed(0)
    model, make_batch, loss_of = build(name, s)
    model.train()
    model = parallelize(model, s["parallel"])
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9) if name == "resnet50" else torch.optim.AdamW(params, lr=1e-4)
    autocast = s["precision"] == "autocast"
    scaler = torch.amp.GradScaler("cuda", enabled=autocast)
    setup = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    for _ in range(s["steps"]):
        x, y = make_batch()
        with torch.autocast("cuda", dtype=torch.float16, enabled=autocast):
            loss = loss_of(model, x, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    peaks = {
        "model": name, **s,
        "setup_peak_allocated": setup[0], "setup_peak_reserved": setup[1],
        "peak_allocated": torch.cuda.max_memory_allocated(), "peak_reserved": torch.cuda.max_memory_reserved(),
        "allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
    }
    print(json.dumps(peaks))


if __name__ == "__main__":
    main()
