"""Probe: which SDPA backend torch picks on this GPU and what each
backend allocates through the CUDA caching allocator, with C++ frames naming the allocating code.
Run on the device:  python3 tests/data/record_sdpa_probe.py $OUT
"""
import inspect, json, os, re, sys, time, warnings
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
log = open(os.path.join(OUT, "probe.txt"), "w")
def P(*a):
    s = " ".join(str(x) for x in a)
    print(s, file=log, flush=True)

dev = torch.device("cuda")
props = torch.cuda.get_device_properties(0)
P("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
  "device", props.name, "cc", props.major, props.minor, "SMs", props.multi_processor_count)
for n in ("_get_sdp_priority_order",):
    if hasattr(torch._C, n):
        try: P(n, getattr(torch._C, n)())
        except Exception as e: P(n, "err", e)
P("flash", torch.backends.cuda.flash_sdp_enabled(), "mem_eff", torch.backends.cuda.mem_efficient_sdp_enabled(),
  "cudnn", torch.backends.cuda.cudnn_sdp_enabled(), "math", torch.backends.cuda.math_sdp_enabled(),
  "fp16_bf16_reduction_math", getattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_enabled", lambda: "n/a")())

NAMES = {-1: "ERROR", 0: "MATH", 1: "FLASH_ATTENTION", 2: "EFFICIENT_ATTENTION", 3: "CUDNN_ATTENTION", 4: "OVERRIDEABLE"}

def mk(B, H, T, D, dt, layout="bhtd", rg=True):
    if layout == "bthd":
        x = torch.randn(B, T, H, D, device=dev, dtype=dt).transpose(1, 2)
    else:
        x = torch.randn(B, H, T, D, device=dev, dtype=dt)
    return x.requires_grad_(rg)

# ---------------- 1. backend choice ----------------
P("\n== backend choice (torch._fused_sdp_choice) ==")
def choice(B=2, H=8, Hk=None, Tq=1000, Tk=None, D=64, Dv=None, dt=torch.bfloat16, causal=False, drop=0.0,
           mask=None, rg=True, layout="bhtd", gqa=False, nograd=False):
    Hk = Hk or H; Tk = Tk or Tq; Dv = Dv or D
    q = mk(B, H, Tq, D, dt, layout, rg); k = mk(B, Hk, Tk, D, dt, layout, rg); v = mk(B, Hk, Tk, Dv, dt, layout, rg)
    m = None
    if mask == "bool": m = torch.ones(Tq, Tk, device=dev, dtype=torch.bool).tril()
    if mask == "float": m = torch.zeros(B, 1, Tq, Tk, device=dev, dtype=dt)
    ctx = torch.no_grad() if nograd else torch.enable_grad()
    with ctx:
        c = torch._fused_sdp_choice(q, k, v, m, drop, causal, scale=None, enable_gqa=gqa)
        why = []
        if int(c) != 3:
            try:
                from torch.backends.cuda import SDPAParams, can_use_cudnn_attention, can_use_flash_attention
                try:
                    prm = SDPAParams(q, k, v, m, drop, causal, gqa)
                except TypeError:
                    prm = SDPAParams(q, k, v, m, drop, causal)
                for nm, fn in (("cudnn", can_use_cudnn_attention), ("flash", can_use_flash_attention)):
                    with warnings.catch_warnings(record=True) as w:
                        warnings.simplefilter("always")
                        ok = fn(prm, True)
                    msgs = [str(x.message).split(" (Triggered")[0] for x in w]
                    why.append(f"{nm}={ok}:{' | '.join(msgs)[:230]}")
            except Exception as e:
                why.append(f"(why err {e})")
    return NAMES.get(int(c), c) + ("   " + " ;; ".join(why) if why else "")
grid = [
    dict(), dict(causal=True), dict(layout="bthd", causal=True), dict(rg=False), dict(nograd=True),
    dict(dt=torch.float16), dict(dt=torch.float32), dict(dt=torch.float32, rg=False),
    dict(drop=0.1), dict(drop=0.125), dict(mask="bool"), dict(mask="float"), dict(mask="bool", rg=False),
    dict(H=8, Hk=2, gqa=True), dict(H=8, Hk=2, gqa=True, rg=False),
    dict(Tq=1, Tk=1000, rg=False), dict(Tq=1, Tk=1000, H=8, Hk=2, gqa=True, rg=False),
    dict(D=80), dict(D=100), dict(D=128), dict(D=160), dict(D=192), dict(D=256), dict(D=64, Dv=128),
    dict(Tq=1024), dict(Tq=1088), dict(Tq=1088, causal=True), dict(Tq=64, Tk=1000), dict(Tq=64, Tk=1000, causal=True),
]
for g in grid:
    desc = ",".join(f"{k}={(str(v).replace('torch.','') )}" for k, v in g.items()) or "default(bf16,B2,H8,T1000,D64)"
    try:
        P(f"  {desc:60s} -> {choice(**g)}")
    except Exception as e:
        P(f"  {desc:60s} -> ERROR {type(e).__name__}: {str(e)[:200]}")
torch.cuda.synchronize()
P("priority order after first selection:", torch._C._get_sdp_priority_order() if hasattr(torch._C, "_get_sdp_priority_order") else "n/a")

# --------------- 2. allocation traces --------------
INTEREST = re.compile(r"(pytorch_flash|FLASH|flash|mha_|efficient|cudnn|_scaled_dot|attention|at::native::|at::_ops::|autograd::generated|"
                      r"alloc_with_matching|run_cudnn|empty|zeros|contiguous|clone|_to_copy|pad|repeat_interleave|matmul|bmm|softmax|dropout)")
def short(name):
    name = re.sub(r"\(.*", "", name)
    name = re.sub(r"<[^<>]*>", "", name)
    name = re.sub(r"<[^<>]*>", "", name)
    return name.strip()[:90]

MARK = 777_777
def mark(i):
    t = torch.empty(MARK + 512 * i, dtype=torch.uint8, device=dev); del t

def rec_start():
    try:
        torch.cuda.memory._record_memory_history(enabled=None)
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="all",
                                                  max_entries=200000, clear_history=True)
    except TypeError:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="all", max_entries=200000)

def rec_stop():
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    tr = snap["device_traces"][0] if snap["device_traces"] else []
    return tr

def frames_of(e):
    out = []
    for f in e.get("frames", []):
        n = f.get("name", "")
        fn = f.get("filename", "")
        if fn.endswith(".py"):
            continue
        if INTEREST.search(n) and "c10::" not in n[:6]:
            s = short(n)
            if s and (not out or out[-1] != s):
                out.append(s)
    keep = [s for s in out if not s.startswith("at::_ops::") and "Dispatch" not in s and "wrapper" not in s.lower()][:7]
    return " < ".join(keep)

def py_line(e):
    for f in e.get("frames", []):
        if f.get("filename", "").endswith("sdpa_probe.py"):
            return f"probe:{f.get('line')}"
    return ""

def run_case(name, fwd, phases=("fwd", "bwd")):
    P(f"\n== {name} ==")
    t0 = time.time()
    try:
        torch.cuda.synchronize()
        st = {}
        # cold run (not recorded) to make one-time allocations (cuBLAS/cuDNN workspaces, graphs)
        out = fwd(); 
        if "bwd" in phases and out.requires_grad:
            out.backward(torch.ones_like(out))
        del out
        for t in (fwd.q, fwd.k, fwd.v):
            t.grad = None
        torch.cuda.synchronize()
        rec_start(); mark(0)
        out = fwd(); torch.cuda.synchronize(); mark(1)
        P("  out", tuple(out.shape), tuple(out.stride()), out.dtype, "grad_fn", type(out.grad_fn).__name__ if out.grad_fn else None)
        if out.grad_fn is not None:
            for a in sorted(dir(out.grad_fn)):
                if a.startswith("_saved_"):
                    try: val = getattr(out.grad_fn, a)
                    except Exception as ex: val = f"<{ex}>"
                    if isinstance(val, torch.Tensor):
                        P(f"    saved {a}: {tuple(val.shape)} {tuple(val.stride())} {val.dtype} {val.device} nbytes={val.numel()*val.element_size()}")
                    else:
                        P(f"    saved {a}: {val!r}"[:200])
        if "bwd" in phases and out.requires_grad:
            gg = torch.randn_like(out); torch.cuda.synchronize(); mark(2)
            out.backward(gg); torch.cuda.synchronize(); mark(3)
            del gg
        del out; torch.cuda.synchronize(); mark(4)
        tr = rec_stop()
    except Exception as e:
        try: torch.cuda.memory._record_memory_history(enabled=None)
        except Exception: pass
        P(f"  ERROR {type(e).__name__}: {str(e)[:300]}")
        return
    labels = {MARK + 512 * i: n for i, n in enumerate(["<start>", "<fwd done>", "<grad made>", "<bwd done>", "<out deleted>"])}
    ids = {}; n = 0
    for e in tr:
        a = e["action"]
        if a not in ("alloc", "free_requested"):
            continue
        sz = e["size"]
        if a == "alloc" and sz in labels:
            P(f"  ---- {labels[sz]}"); continue
        if a == "free_requested" and sz in labels:
            continue
        if a == "alloc":
            n += 1; ids[e["addr"]] = n
            P(f"  A#{n:<3d} {sz:>12d}  {frames_of(e)} {py_line(e)}")
        else:
            i = ids.pop(e["addr"], None)
            P(f"  F#{i if i else '?':<3} {sz:>12d}  {frames_of(e)[:160]}")
    P(f"  ({time.time()-t0:.1f}s)")

class Case:
    def __init__(self, B=2, H=8, Hk=None, Tq=1000, Tk=None, D=64, Dv=None, dt=torch.bfloat16, causal=False,
                 drop=0.0, mask=None, rg=True, layout="bhtd", gqa=False, backend=None, nograd=False):
        Hk = Hk or H; Tk = Tk or Tq; Dv = Dv or D
        self.q = mk(B, H, Tq, D, dt, layout, rg); self.k = mk(B, Hk, Tk, D, dt, layout, rg); self.v = mk(B, Hk, Tk, Dv, dt, layout, rg)
        self.m = None
        if mask == "bool": self.m = torch.ones(Tq, Tk, device=dev, dtype=torch.bool).tril()
        if mask == "float": self.m = torch.zeros(B, 1, Tq, Tk, device=dev, dtype=dt)
        self.kw = dict(attn_mask=self.m, dropout_p=drop, is_causal=causal)
        if gqa: self.kw["enable_gqa"] = True
        self.backend = backend; self.nograd = nograd
    def __call__(self):
        ctx = torch.no_grad() if self.nograd else torch.enable_grad()
        with ctx:
            if self.backend is None:
                return F.scaled_dot_product_attention(self.q, self.k, self.v, **self.kw)
            with sdpa_kernel(self.backend):
                return F.scaled_dot_product_attention(self.q, self.k, self.v, **self.kw)

FL, ME, CU, MA = SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH
cases = [
    ("AUTO bf16 B2 H8 T1000 D64 causal, q from (B,T,H,D).transpose(1,2)", Case(causal=True, layout="bthd")),
    ("FLASH bf16 B2 H8 T1000 D64 causal, BTHD-transposed", Case(causal=True, layout="bthd", backend=FL)),
    ("FLASH bf16 B2 H8 T1000 D64 noncausal, contiguous BHTD", Case(backend=FL)),
    ("FLASH bf16 dropout 0.1", Case(drop=0.1, backend=FL)),
    ("FLASH bf16 GQA H8 Hk2", Case(H=8, Hk=2, gqa=True, backend=FL)),
    ("FLASH bf16 D80", Case(D=80, backend=FL)),
    ("FLASH bf16 D100 (pad to 104)", Case(D=100, backend=FL)),
    ("FLASH bf16 no-grad decode B1 H8 Tq1 Tk1000", Case(B=1, Tq=1, Tk=1000, rg=False, backend=FL)),
    ("FLASH bf16 no-grad decode GQA B1 H8 Hk2 Tq1 Tk1000", Case(B=1, H=8, Hk=2, Tq=1, Tk=1000, gqa=True, rg=False, backend=FL)),
    ("FLASH bf16 no-grad B1 H4 Tq128 Tk4096 (split-kv?)", Case(B=1, H=4, Tq=128, Tk=4096, rg=False, backend=FL)),
    ("FLASH bf16 grad B1 H4 Tq128 Tk4096", Case(B=1, H=4, Tq=128, Tk=4096, backend=FL)),
    ("EFFICIENT bf16 B2 H8 T1000 D64 causal", Case(causal=True, backend=ME)),
    ("EFFICIENT bf16 T1024 D64 (seqaligned bwd kernel)", Case(Tq=1024, backend=ME)),
    ("EFFICIENT fp32 B2 H8 T1000 D64", Case(dt=torch.float32, backend=ME)),
    ("EFFICIENT bf16 D160 (gmem kernel, output_accum)", Case(D=160, backend=ME)),
    ("EFFICIENT bf16 dropout 0.1", Case(drop=0.1, backend=ME)),
    ("EFFICIENT bf16 bool mask (T,T) T1000", Case(mask="bool", backend=ME)),
    ("EFFICIENT bf16 bool mask (T,T) T77", Case(Tq=77, mask="bool", backend=ME)),
    ("EFFICIENT bf16 GQA H8 Hk2", Case(H=8, Hk=2, gqa=True, backend=ME)),
    ("CUDNN bf16 B2 H8 T1000 D64 causal BTHD-transposed", Case(causal=True, layout="bthd", backend=CU)),
    ("CUDNN bf16 B2 H8 T1024 D64 contiguous BHTD", Case(Tq=1024, backend=CU)),
    ("CUDNN bf16 dropout 0.125", Case(Tq=1024, drop=0.125, backend=CU)),
    ("CUDNN bf16 no-grad", Case(Tq=1024, rg=False, backend=CU)),
    ("MATH bf16 B2 H8 T256 D64 causal", Case(Tq=256, causal=True, backend=MA)),
    ("MATH fp32 B2 H8 T256 D64 dropout0.1", Case(Tq=256, dt=torch.float32, drop=0.1, backend=MA)),
    ("MATH bf16 GQA H8 Hk2 T256", Case(Tq=256, H=8, Hk=2, gqa=True, backend=MA)),
    ("AUTO fp32 B2 H8 T1000 D64", Case(dt=torch.float32)),
    ("AUTO bf16 no-grad (inference)", Case(causal=True, rg=False)),
]
if os.environ.get("PASS2"):
    cases = [
        ("AUTO bf16 GQA H8 Hk2 causal grad", Case(H=8, Hk=2, gqa=True, causal=True)),
        ("AUTO bf16 bool mask (T,T) grad", Case(mask="bool")),
        ("AUTO bf16 D128 causal BTHD grad", Case(D=128, causal=True, layout="bthd")),
        ("AUTO bf16 decode B1 H8 Tq1 Tk1000 no-grad", Case(B=1, Tq=1, Tk=1000, rg=False)),
        ("AUTO bf16 T1088 causal BTHD grad (Sk%128==64)", Case(Tq=1088, causal=True, layout="bthd")),
        ("AUTO bf16 T1088 noncausal BTHD grad (Sk%128==64)", Case(Tq=1088, layout="bthd")),
        ("CUDNN bf16 GQA H8 Hk2", Case(H=8, Hk=2, gqa=True, backend=CU)),
        ("CUDNN bf16 float mask (B,1,T,T)", Case(mask="float", backend=CU)),
        ("FLASH bf16 B4 H12 T1024 D64 causal BTHD (GPT-2 small)", Case(B=4, H=12, Tq=1024, causal=True, layout="bthd", backend=FL)),
        ("CUDNN bf16 B4 H12 T1024 D64 causal BTHD (GPT-2 small)", Case(B=4, H=12, Tq=1024, causal=True, layout="bthd", backend=CU)),
        ("CUDNN bf16 D128 T1000", Case(D=128, backend=CU)),
        ("EFFICIENT bf16 D128 T1000", Case(D=128, backend=ME)),
        ("EFFICIENT bf16 D96 T1000", Case(D=96, backend=ME)),
        ("EFFICIENT fp32 D128 T1000", Case(D=128, dt=torch.float32, backend=ME)),
        ("EFFICIENT bf16 no-grad", Case(rg=False, backend=ME)),
        ("FLASH bf16 B4 H12 T1024 BHTD-contig grad_out BTHD-ish", Case(B=4, H=12, Tq=1024, backend=FL)),
        ("CUDNN bf16 D256 T1000", Case(D=256, backend=CU)),
    ]
for name, c in cases:
    run_case(name, c)

P("priority order at end:", torch._C._get_sdp_priority_order())
if os.environ.get("PASS2"):
    log.close(); sys.exit(0)
# --------------- 3. 2.11 metadata from the installed package ---------------
P("\n== schemas ==")
for op in ("_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_backward",
           "_flash_attention_forward", "_flash_attention_backward",
           "_scaled_dot_product_efficient_attention", "_scaled_dot_product_efficient_attention_backward",
           "_efficient_attention_forward", "_efficient_attention_backward",
           "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_cudnn_attention_backward",
           "_scaled_dot_product_attention_math"):
    try: P(" ", getattr(torch.ops.aten, op).default._schema)
    except Exception as e: P(" ", op, "err", e)
inc = os.path.join(os.path.dirname(torch.__file__), "include/torch/csrc/autograd/generated/Functions.h")
P("\n== Functions.h saved variables ==")
try:
    txt = open(inc).read()
    for m in re.finditer(r"struct TORCH_API (ScaledDotProduct\w+Backward\w*|SafeSoftmaxBackward0|SoftmaxBackward0|NativeDropoutBackward0) : public \w+ \{(.*?)\n\};", txt, re.S):
        body = m.group(2)
        saved = re.findall(r"\n  (SavedVariable|c10::SymInt|double|bool|::std::optional<double>|std::optional<double>|::std::vector<bool>|int64_t|at::ScalarType) (\w+);", body)
        P(f"  {m.group(1)}: " + ", ".join(f"{t} {n}" for t, n in saved))
except Exception as e:
    P("  err", e)
P("\n== meta registrations ==")
try:
    import torch._meta_registrations as mr
    for fn in ("meta__scaled_dot_product_flash_attention", "meta__scaled_dot_product_flash_backward",
               "meta__scaled_dot_product_efficient_attention", "meta__scaled_dot_product_efficient_backward",
               "meta__scaled_dot_product_cudnn_attention", "meta__flash_attention_forward", "meta__efficient_attention_forward",
               "meta__efficient_attention_backward", "meta__flash_attention_backward", "meta__scaled_dot_product_cudnn_backward"):
        f = getattr(mr, fn, None)
        if f is not None:
            P(f"--- {fn}\n" + inspect.getsource(f))
        else:
            P(f"--- {fn}: not found")
except Exception as e:
    P("  err", e)
log.close()
