import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint

# The losses regression, detection, multi-label and distillation code trains with beside
# cross_entropy and mse_loss, forward and backward: l1_loss, smooth_l1_loss (beta), huber_loss
# (delta, sum), binary_cross_entropy_with_logits (plain, with pos_weight, as nn.BCEWithLogitsLoss),
# binary_cross_entropy after a sigmoid, kl_div (batchmean, log_target), losses without reduction
# or summed (mse_loss, nll_loss, cross_entropy), and cross_entropy with label smoothing.
torch.manual_seed(0)
x = torch.randn(4096, 1024, device="cuda", requires_grad=True)
t = torch.randn(4096, 1024, device="cuda")
checkpoint("inputs")
loss = F.l1_loss(x, t)
checkpoint("l1")
loss.backward()
checkpoint("l1 backward")
x.grad = None
loss = F.smooth_l1_loss(x, t, beta=0.5)
checkpoint("smooth_l1")
loss.backward()
checkpoint("smooth_l1 backward")
x.grad = None
loss = nn.HuberLoss(reduction="sum", delta=2.0)(x, t)
checkpoint("huber")
loss.backward()
checkpoint("huber backward")
x.grad = None
y = torch.rand(4096, 1024, device="cuda")
checkpoint("targets")
loss = F.binary_cross_entropy_with_logits(x, y)
checkpoint("bce_with_logits")
loss.backward()
checkpoint("bce_with_logits backward")
x.grad = None
pos_weight = torch.full((1024,), 2.0, device="cuda")
loss = nn.BCEWithLogitsLoss(pos_weight=pos_weight)(x, y)
checkpoint("bce_with_logits pos_weight")
loss.backward()
checkpoint("bce_with_logits pos_weight backward")
x.grad = None
p = torch.sigmoid(x)
loss = F.binary_cross_entropy(p, y)
checkpoint("bce")
loss.backward()
checkpoint("bce backward")
del p
x.grad = None
logp = F.log_softmax(x, dim=-1)
q = F.softmax(t, dim=-1)
loss = F.kl_div(logp, q, reduction="batchmean")
checkpoint("kl_div")
loss.backward()
checkpoint("kl_div backward")
x.grad = None
logq = F.log_softmax(t, dim=-1)
loss = nn.KLDivLoss(reduction="batchmean", log_target=True)(F.log_softmax(x, dim=-1), logq)
checkpoint("kl_div log_target")
loss.backward()
checkpoint("kl_div log_target backward")
del logp, q, logq
x.grad = None
per_item = F.smooth_l1_loss(x, t, reduction="none")
loss = per_item.mean(dim=1).sum()
checkpoint("smooth_l1 none")
loss.backward()
checkpoint("smooth_l1 none backward")
del per_item, loss
x.grad = None
loss = F.mse_loss(x, t, reduction="sum") + F.mse_loss(x, t, reduction="none")[0].sum()
checkpoint("mse sum and none")
loss.backward()
checkpoint("mse sum and none backward")
x.grad = None
logits = torch.randn(4096, 1000, device="cuda", requires_grad=True)
labels = torch.randint(0, 1000, (4096,), device="cuda")
labels[::7] = -100
checkpoint("logits")
loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
checkpoint("cross_entropy label_smoothing")
loss.backward()
checkpoint("cross_entropy label_smoothing backward")
logits.grad = None
loss = F.cross_entropy(logits, labels, reduction="sum") + F.cross_entropy(logits, labels, reduction="none").mean()
checkpoint("cross_entropy sum and none")
loss.backward()
checkpoint("cross_entropy sum and none backward")
logits.grad = None
loss = nn.CrossEntropyLoss(label_smoothing=0.2, reduction="sum")(logits, labels)
loss = loss + F.nll_loss(F.log_softmax(logits, dim=1), labels, reduction="sum")
checkpoint("label_smoothing sum, nll_loss sum")
loss.backward()
checkpoint("label_smoothing sum, nll_loss sum backward")
del loss
checkpoint("end")
