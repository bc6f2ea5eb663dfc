"""PyTorch's side of benches/gpu.rs's `gpu_model_ops` group, on the same GPU in the same run.

    python3 benches/model_ops_torch.py [OUT.json]

layer_norm, gelu and softmax over 4096x4096 float32, float16 and bfloat16 (GB/s of bytes read and
written), sum() of 2^28 float32 (GB/s read), and in ms one training step (forward, backward, AdamW)
of scripts/10_transformer_block.rhai's block and one step of scripts/05_training_loop.rhai's MLP.
"""
import json
import sys
import time

import torch
import torch.nn.functional as F


def bench(fn, k):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / k


def block_step():
    torch.manual_seed(0)
    B, T, C, H, V = 8, 128, 256, 4, 4096
    D = C // H
    dev = "cuda"
    idx = torch.randint(0, V, (B, T), device=dev)
    targets = torch.randint(0, V, (B, T), device=dev)
    p = lambda *s: (torch.randn(*s, device=dev) * 0.02).requires_grad_()
    wte, wpe = p(V, C), p(T, C)
    ln1_w, ln1_b = torch.ones(C, device=dev, requires_grad=True), torch.zeros(C, device=dev, requires_grad=True)
    attn_w, attn_b = p(3 * C, C), torch.zeros(3 * C, device=dev, requires_grad=True)
    proj_w, proj_b = p(C, C), torch.zeros(C, device=dev, requires_grad=True)
    ln2_w, ln2_b = torch.ones(C, device=dev, requires_grad=True), torch.zeros(C, device=dev, requires_grad=True)
    fc_w, fc_b = p(4 * C, C), torch.zeros(4 * C, device=dev, requires_grad=True)
    fc2_w, fc2_b = p(C, 4 * C), torch.zeros(C, device=dev, requires_grad=True)
    params = [wte, wpe, ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fc2_w, fc2_b]
    mask = torch.triu(torch.ones(T, T, device=dev), diagonal=1) == 1
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)

    def step():
        x = F.embedding(idx, wte) + wpe
        h = F.layer_norm(x, (C,), ln1_w, ln1_b)
        q, k, v = F.linear(h, attn_w, attn_b).split(C, dim=2)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, H, D).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        att = (q.matmul(k.transpose(-2, -1)) * 0.125).masked_fill(mask, float("-inf")).softmax(-1)
        y = att.matmul(v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + F.linear(y, proj_w, proj_b)
        h = F.layer_norm(x, (C,), ln2_w, ln2_b)
        x = x + F.linear(F.gelu(F.linear(h, fc_w, fc_b)), fc2_w, fc2_b)
        loss = F.cross_entropy(x.matmul(wte.t()).view(B * T, V), targets.view(B * T))
        loss.backward()
        opt.step()
        opt.zero_grad()

    return bench(step, 50)


def mlp_step():
    """One step of scripts/05_training_loop.rhai's loop, with its loss.item()."""
    torch.manual_seed(0)
    x = torch.randn(512, 2, device="cuda")
    y = x[:, 0:1].sin() + x[:, 1:2] * 0.5
    w1 = (torch.randn(2, 64, device="cuda") * 0.5).requires_grad_()
    b1 = torch.zeros(64, device="cuda", requires_grad=True)
    w2 = (torch.randn(64, 1, device="cuda") * 0.1).requires_grad_()
    b2 = torch.zeros(1, device="cuda", requires_grad=True)
    params = (w1, b1, w2, b2)

    def step():
        loss = F.mse_loss((x.matmul(w1) + b1).relu().matmul(w2) + b2, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.sub_(p.grad * 0.1)
        for p in params:
            p.grad = None
        loss.item()

    return bench(step, 500)


def main():
    res = {}
    for dtype, tag in [(torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")]:
        x = torch.randn(4096, 4096, device="cuda").to(dtype)
        w, b = torch.randn(4096, device="cuda").to(dtype), torch.randn(4096, device="cuda").to(dtype)
        moved = 2 * x.element_size() * 4096 * 4096
        for name, fn in [
            ("layer_norm_4096x4096_" + tag, lambda: F.layer_norm(x, (4096,), w, b)),
            ("gelu_4096x4096_" + tag, lambda: F.gelu(x)),
            ("softmax_4096x4096_" + tag, lambda: x.softmax(1)),
        ]:
            res[name + "_GBps"] = moved / bench(fn, 200) / 1e9
    big = torch.randn(1 << 28, device="cuda")
    res["sum_2p28_f32_GBps"] = 4 * (1 << 28) / bench(lambda: big.sum(), 200) / 1e9
    del big
    res["transformer_block_step_ms"] = block_step() * 1e3
    res["mlp_step_ms"] = mlp_step() * 1e3
    print(json.dumps(res, indent=1))
    if len(sys.argv) > 1:
        json.dump(res, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
