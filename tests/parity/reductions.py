import torch
from harness import checkpoint

# sum/mean/max/min/argmax over whole tensors and along each dim, as bare statements: big sizes need
# multi-block reductions (staging buffers, semaphores), small ones do not; float32 and float16.
m = torch.randn(4096, 4096, device="cuda")
checkpoint("m")
m.sum()
m.mean()
m.max()
m.min()
m.argmax()
checkpoint("m whole")
m.sum(0)
m.mean(0)
m.max(0).values
m.min(0).values
m.argmax(0)
checkpoint("m dim 0")
m.sum(1)
m.mean(1)
m.max(1).values
m.min(1).values
m.argmax(1)
checkpoint("m dim 1")
m.sum(1, keepdim=True)
m.max(0, keepdim=True).values
checkpoint("m keepdim")
v = torch.randn(16777216, device="cuda")
checkpoint("v")
v.sum()
v.mean()
v.max()
v.min()
v.argmax()
checkpoint("v whole")
v.sum(0)
v.mean(0)
v.max(0).values
v.min(0).values
v.argmax(0)
checkpoint("v dim 0")
v.sum(0, keepdim=True)
v.max(0, keepdim=True).values
checkpoint("v keepdim")
c = torch.randn(256, 256, 256, device="cuda")
checkpoint("c")
c.sum()
c.mean()
c.max()
c.min()
c.argmax()
checkpoint("c whole")
c.sum(0)
c.mean(0)
c.max(0).values
c.min(0).values
c.argmax(0)
checkpoint("c dim 0")
c.sum(1)
c.mean(1)
c.max(1).values
c.min(1).values
c.argmax(1)
checkpoint("c dim 1")
c.sum(2)
c.mean(2)
c.max(2).values
c.min(2).values
c.argmax(2)
checkpoint("c dim 2")
c.sum(2, keepdim=True)
c.max(0, keepdim=True).values
checkpoint("c keepdim")
o = torch.randn(1000, 3000, device="cuda")
checkpoint("o")
o.sum()
o.mean()
o.max()
o.min()
o.argmax()
checkpoint("o whole")
o.sum(0)
o.mean(0)
o.max(0).values
o.min(0).values
o.argmax(0)
checkpoint("o dim 0")
o.sum(1)
o.mean(1)
o.max(1).values
o.min(1).values
o.argmax(1)
checkpoint("o dim 1")
o.sum(1, keepdim=True)
o.max(0, keepdim=True).values
checkpoint("o keepdim")
s = torch.randn(3, 5, device="cuda")
checkpoint("s")
s.sum()
s.mean()
s.max()
s.min()
s.argmax()
checkpoint("s whole")
s.sum(0)
s.mean(0)
s.max(0).values
s.min(0).values
s.argmax(0)
checkpoint("s dim 0")
s.sum(1)
s.mean(1)
s.max(1).values
s.min(1).values
s.argmax(1)
checkpoint("s dim 1")
s.sum(1, keepdim=True)
s.max(0, keepdim=True).values
checkpoint("s keepdim")
t = torch.randn(2, 3, 4, device="cuda")
checkpoint("t")
t.sum()
t.mean()
t.max()
t.min()
t.argmax()
checkpoint("t whole")
t.sum(0)
t.mean(0)
t.max(0).values
t.min(0).values
t.argmax(0)
checkpoint("t dim 0")
t.sum(1)
t.mean(1)
t.max(1).values
t.min(1).values
t.argmax(1)
checkpoint("t dim 1")
t.sum(2)
t.mean(2)
t.max(2).values
t.min(2).values
t.argmax(2)
checkpoint("t dim 2")
t.sum(2, keepdim=True)
t.max(0, keepdim=True).values
checkpoint("t keepdim")
mh = m.half()
checkpoint("mh")
mh.sum()
mh.mean()
mh.max()
mh.min()
mh.argmax()
checkpoint("mh whole")
mh.sum(0)
mh.mean(0)
mh.max(0).values
mh.min(0).values
mh.argmax(0)
checkpoint("mh dim 0")
mh.sum(1)
mh.mean(1)
mh.max(1).values
mh.min(1).values
mh.argmax(1)
checkpoint("mh dim 1")
mh.sum(1, keepdim=True)
mh.max(0, keepdim=True).values
checkpoint("mh keepdim")
vh = v.half()
checkpoint("vh")
vh.sum()
vh.mean()
vh.max()
vh.min()
vh.argmax()
checkpoint("vh whole")
vh.sum(0)
vh.mean(0)
vh.max(0).values
vh.min(0).values
vh.argmax(0)
checkpoint("vh dim 0")
vh.sum(0, keepdim=True)
vh.max(0, keepdim=True).values
checkpoint("vh keepdim")
ch = c.half()
checkpoint("ch")
ch.sum()
ch.mean()
ch.max()
ch.min()
ch.argmax()
checkpoint("ch whole")
ch.sum(0)
ch.mean(0)
ch.max(0).values
ch.min(0).values
ch.argmax(0)
checkpoint("ch dim 0")
ch.sum(1)
ch.mean(1)
ch.max(1).values
ch.min(1).values
ch.argmax(1)
checkpoint("ch dim 1")
ch.sum(2)
ch.mean(2)
ch.max(2).values
ch.min(2).values
ch.argmax(2)
checkpoint("ch dim 2")
ch.sum(2, keepdim=True)
ch.max(0, keepdim=True).values
checkpoint("ch keepdim")
sh = s.half()
checkpoint("sh")
sh.sum()
sh.mean()
sh.max()
sh.min()
sh.argmax()
checkpoint("sh whole")
sh.sum(0)
sh.mean(0)
sh.max(0).values
sh.min(0).values
sh.argmax(0)
checkpoint("sh dim 0")
sh.sum(1)
sh.mean(1)
sh.max(1).values
sh.min(1).values
sh.argmax(1)
checkpoint("sh dim 1")
sh.sum(1, keepdim=True)
sh.max(0, keepdim=True).values
checkpoint("sh keepdim")
r = m.sum(0)
q = v.max()
checkpoint("kept results")
