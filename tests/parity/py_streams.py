import torch
from harness import checkpoint

# Two streams by hand: blocks belong to the stream that allocated them, and a block used on
# another stream (record_stream) waits for that stream's work before its memory is reused.
side = torch.cuda.Stream()
main = torch.cuda.current_stream()
x = torch.randn(1024, 1024, device="cuda")
checkpoint("x on the default stream")

# A side-stream allocation cannot reuse the default stream's segment: it gets its own.
with torch.cuda.stream(side):
    side.wait_stream(main)
    y = x * 2
    small = torch.ones(100, device="cuda")
checkpoint("y and small on the side stream")

# Freed on the default stream, the side stream's block returns to the side stream's pool:
# the next default-stream request of that size takes a new block, the next side-stream one reuses it.
del y
z = torch.empty(1024, 1024, device="cuda")
checkpoint("z on the default stream after del y")
with torch.cuda.stream(side):
    w = torch.empty(1024, 1024, device="cuda")
checkpoint("w on the side stream reuses y's block")

# record_stream: x is read on the side stream, so its free waits for that stream's work.
with torch.cuda.stream(side):
    doubled = x * 2
x.record_stream(side)
del x
checkpoint("x freed while in use on the side stream")
torch.cuda.synchronize()
a = torch.empty(1024, 1024, device="cuda")
checkpoint("the next request completes x's free and reuses its block")

# A block used on two other streams waits for both; empty_cache waits for every stream.
other = torch.cuda.Stream()
b = torch.randn(256, 1024, device="cuda")
b.record_stream(side)
b.record_stream(other)
b.record_stream(main)  # its own stream: ignored
del b
checkpoint("b freed while in use on two streams")
torch.cuda.empty_cache()
checkpoint("empty_cache completes b's free and releases what it can")

# Work on the other stream allocates on it; the side stream's blocks stay the side stream's.
with torch.cuda.stream(other):
    c = doubled.sum(dim=0)
    d = torch.zeros(4096, device="cuda")
checkpoint("c and d on the third stream")

# cuBLAS keeps a workspace per stream: a matrix product on a new stream takes another one.
m = z @ z
checkpoint("a matrix product on the default stream")
with torch.cuda.stream(other):
    n = a @ a
checkpoint("a matrix product on the third stream")
del doubled, c, d, w, small, m, n
checkpoint("everything but z and a freed")
torch.cuda.empty_cache()
checkpoint("after empty_cache")
