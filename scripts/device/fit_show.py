"""PyTorch's side of `torchlet fit scripts/11_will_it_fit.rhai --sweep batch=…`: the same GPT-2
step (AdamW, two steps) at one batch, in a fresh process, on the whole GPU or limited with
set_per_process_memory_fraction to LIMIT bytes. Prints one JSON line: the peaks, whether it ran
out of memory and where the memory outside the allocator stood.

    python3 fit_show.py BATCH LIMIT_BYTES|0 [layers width heads]
"""
import json
import math
import sys

import torch
import torch.nn.functional as F


def step_loop(batch, L, C, H, T=1024, V=50257):
    D = C // H
    dev = "cuda"
    weight = lambda r, c: (torch.randn(r, c, device=dev) * 0.02).requires_grad_()
    ones = lambda n: torch.ones(n, device=dev, requires_grad=True)
    zeros = lambda n: torch.zeros(n, device=dev, requires_grad=True)
    wte, wpe = weight(V, C), weight(T, C)
    layers = []
    for _ in range(L):
        layers.append(dict(ln1_w=ones(C), ln1_b=zeros(C), attn_w=weight(3 * C, C), attn_b=zeros(3 * C),
                           proj_w=weight(C, C), proj_b=zeros(C), ln2_w=ones(C), ln2_b=zeros(C),
                           fc_w=weight(4 * C, C), fc_b=zeros(4 * C), fc2_w=weight(C, 4 * C), fc2_b=zeros(C)))
    lnf_w, lnf_b = ones(C), zeros(C)
    params = [wte, wpe] + [t for p in layers for t in p.values()] + [lnf_w, lnf_b]
    opt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1)
    idx = torch.randint(0, V, (batch, T), device=dev)
    targets = torch.randint(0, V, (batch, T), device=dev)
    mask = torch.triu(torch.ones(T, T, device=dev), diagonal=1) == 1
    for step in range(2):
        x = F.embedding(idx, wte) + wpe
        for p in layers:
            h = F.layer_norm(x, (C,), p["ln1_w"], p["ln1_b"])
            q, k, v = F.linear(h, p["attn_w"], p["attn_b"]).split(C, 2)
            q = q.view(batch, T, H, D).transpose(1, 2)
            k = k.view(batch, T, H, D).transpose(1, 2)
            v = v.view(batch, T, H, D).transpose(1, 2)
            att = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = att.matmul(v).transpose(1, 2).contiguous().view(batch, T, C)
            x = x + F.linear(y, p["proj_w"], p["proj_b"])
            h = F.layer_norm(x, (C,), p["ln2_w"], p["ln2_b"])
            x = x + F.linear(F.gelu(F.linear(h, p["fc_w"], p["fc_b"])), p["fc2_w"], p["fc2_b"])
        del h, q, k, v, att, y
        logits = F.layer_norm(x, (C,), lnf_w, lnf_b).matmul(wte.t())
        loss = F.cross_entropy(logits.view(batch * T, V), targets.view(batch * T))
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch.cuda.synchronize()


def main():
    batch, limit = int(sys.argv[1]), int(sys.argv[2])
    L, C, H = (int(a) for a in sys.argv[3:6]) if len(sys.argv) > 5 else (24, 1024, 16)
    torch.cuda.init()
    free0, total = torch.cuda.mem_get_info()
    if limit:
        torch.cuda.set_per_process_memory_fraction(limit / total)
    out = dict(batch=batch, limit=limit, total=total, free_at_start=free0, layers=L, width=C, heads=H)
    try:
        step_loop(batch, L, C, H)
        out["oom"] = False
    except torch.OutOfMemoryError as e:
        out["oom"] = True
        out["message"] = str(e).splitlines()[0]
    free1, _ = torch.cuda.mem_get_info()
    out.update(peak_allocated=torch.cuda.max_memory_allocated(),
               peak_reserved=torch.cuda.max_memory_reserved(),
               reserved_at_end=torch.cuda.memory_reserved(),
               free_at_end=free1,
               outside_allocator_at_end=total - free1 - torch.cuda.memory_reserved())
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
