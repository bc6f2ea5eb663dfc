import torch
from harness import checkpoint

# Gradient accumulation: four micro-batches of 128 add their gradients before one AdamW step, so the
# activations of only one micro-batch live at a time.
xs = torch.randn(4, 128, 1024, device="cuda")
w1 = torch.randn(1024, 2048, device="cuda", requires_grad=True)
w2 = torch.randn(2048, 16, device="cuda", requires_grad=True)
opt = torch.optim.AdamW([w1, w2], lr=1e-3)
checkpoint("setup")
for step in range(2):
    for micro in range(4):
        loss = xs[micro].matmul(w1).relu().matmul(w2).pow(2).mean() / 4
        loss.backward()
        checkpoint(f"micro-batch {step}.{micro}")
    opt.step()
    opt.zero_grad()
    checkpoint(f"step {step}")
