"""The learning rates of PyTorch's schedulers over a few steps, and an SGD step that uses them;
its standard output under PyTorch 2.11 is lr_schedulers.torch.txt
(`python3 record_lr_schedulers.py > lr_schedulers.torch.txt`); torchlet runs it unchanged."""
import torch
from torch.optim.lr_scheduler import (StepLR, MultiStepLR, LinearLR, CosineAnnealingLR,
    ExponentialLR, LambdaLR, SequentialLR, OneCycleLR, ReduceLROnPlateau, ConstantLR,
    PolynomialLR, MultiplicativeLR, CosineAnnealingWarmRestarts, CyclicLR, ChainedScheduler)

def run(make, steps=6, lr=1.0):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=lr)
    sched = make(opt)
    seen = []
    for _ in range(steps):
        seen.append(round(sched.get_last_lr()[0], 6))
        opt.step()
        sched.step()
    return seen

print(run(lambda o: StepLR(o, step_size=2, gamma=0.1)))
print(run(lambda o: MultiStepLR(o, milestones=[1, 3], gamma=0.5)))
print(run(lambda o: LinearLR(o, start_factor=0.25, total_iters=3)))
print(run(lambda o: CosineAnnealingLR(o, T_max=4), steps=5))
print(run(lambda o: ExponentialLR(o, gamma=0.5), steps=3))
print(run(lambda o: LambdaLR(o, lambda e: 1 / (e + 1)), steps=3))
print(run(lambda o: SequentialLR(o, [LinearLR(o, start_factor=0.5, total_iters=2),
                                     ExponentialLR(o, gamma=0.5)], milestones=[2]), steps=5))
print(run(lambda o: OneCycleLR(o, max_lr=1.0, total_steps=5), steps=5))
print(run(lambda o: OneCycleLR(o, max_lr=1.0, total_steps=9, three_phase=True,
                               anneal_strategy="linear"), steps=9))
print(run(lambda o: ConstantLR(o, factor=0.5, total_iters=2), steps=4))
print(run(lambda o: PolynomialLR(o, total_iters=4, power=2.0), steps=6))
print(run(lambda o: MultiplicativeLR(o, lambda e: 0.9), steps=4))
print(run(lambda o: CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2), steps=8))
print(run(lambda o: CyclicLR(o, base_lr=0.1, max_lr=1.0, step_size_up=2, mode="triangular2"),
          steps=9))
print(run(lambda o: ChainedScheduler([ConstantLR(o, factor=0.5, total_iters=2),
                                      ExponentialLR(o, gamma=0.9)]), steps=4))

# Adam's betas follow a one-cycle momentum schedule.
q = torch.zeros(1, requires_grad=True)
adam = torch.optim.AdamW([q], lr=1.0)
cycle = OneCycleLR(adam, max_lr=0.5, total_steps=4)
for _ in range(3):
    adam.step()
    cycle.step()
print([round(b, 6) for b in adam.param_groups[0]["betas"]], round(cycle.get_last_lr()[0], 6))

# The optimizer steps with the scheduled lr: p moves by -lr * grad each step.
p = torch.zeros(1, device="cuda", requires_grad=True)
opt = torch.optim.SGD([p], lr=1.0)
sched = StepLR(opt, step_size=1, gamma=0.5)
for _ in range(3):
    p.grad = torch.ones(1, device="cuda")
    opt.step()
    sched.step()
print(p.item())
plateau = ReduceLROnPlateau(opt, patience=1, factor=0.1)
for loss in [1.0, 1.0, 1.0]:
    plateau.step(loss)
print(round(opt.param_groups[0]["lr"], 6))
