import torch
from harness import checkpoint

# Requests around the allocator's size limits (512 B, 1 MiB, 10 MiB), holes filled by later requests,
# empty_cache with and without live blocks, and a large cached block reused for a smaller request.
a = torch.empty(1, dtype=torch.uint8, device="cuda")
b = torch.empty(512, dtype=torch.uint8, device="cuda")
c = torch.empty(513, dtype=torch.uint8, device="cuda")
d = torch.empty(1048576, dtype=torch.uint8, device="cuda")
e = torch.empty(1048577, dtype=torch.uint8, device="cuda")
f = torch.empty(10485759, dtype=torch.uint8, device="cuda")
g = torch.empty(10485760, dtype=torch.uint8, device="cuda")
h = torch.empty(10485761, dtype=torch.uint8, device="cuda")
i = torch.empty(104857600, dtype=torch.uint8, device="cuda")
checkpoint("sizes")
del b, d, f, h
checkpoint("every other freed")
b = torch.empty(600, dtype=torch.uint8, device="cuda")
d = torch.empty(500000, dtype=torch.uint8, device="cuda")
f = torch.empty(5000000, dtype=torch.uint8, device="cuda")
h = torch.empty(12000000, dtype=torch.uint8, device="cuda")
checkpoint("holes reused")
torch.cuda.empty_cache()
checkpoint("empty_cache with live blocks")
del a, b, c, d, e, f, g, h, i
checkpoint("all freed")
torch.cuda.empty_cache()
checkpoint("empty_cache")
j = torch.empty(52428800, dtype=torch.uint8, device="cuda")
del j
k = torch.empty(41943040, dtype=torch.uint8, device="cuda")
checkpoint("40 MiB in a cached 50 MiB block")
l = torch.empty(8388608, dtype=torch.uint8, device="cuda")
checkpoint("8 MiB from the rest")
del k, l
torch.cuda.empty_cache()
checkpoint("end")
