"""Record what scaled_dot_product_attention allocates on the GPU, backend by backend (run on the H200).

    python3 tests/data/record_sdpa.py OUT.json

For each case (dtype, shapes, mask, causal, dropout, GQA, grad or not, a forced backend or PyTorch's
choice) it runs forward then backward (with a gradient made beforehand) and writes the allocator's
trace entries of each phase as [action, size], the backend PyTorch chose (the grad_fn's name) and the
output's and saved tensors' shapes and strides. torchlet's SDPA table (crates/core, Note [SDPA
allocations]) is read off this file; tests/data/torch_sdpa.json is its output.
"""

import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}
SKIPPED = ("free_requested", "snapshot")


def trace_len():
    traces = torch.cuda.memory._snapshot()["device_traces"]
    return len(traces[0]) if traces else 0


def trace_since(start):
    traces = torch.cuda.memory._snapshot()["device_traces"]
    entries = traces[0][start:] if traces else []
    return [[e["action"], e["size"]] for e in entries if e["action"] not in SKIPPED]


def cases():
    """The grid: every field a case may set, with its default."""
    base = dict(dtype="float16", B=2, H=4, Hk=None, Tq=256, Tk=None, D=64, Dv=None, causal=False,
                mask=None, dropout=0.0, grad=True, backend=None, layout="bhtd", scale=None)
    out = []

    def add(**kw):
        c = dict(base)
        c.update(kw)
        out.append(c)

    for dtype in DTYPES:
        for T in (128, 100, 256, 1000):
            for D in (64, 128):
                for causal in (False, True):
                    add(dtype=dtype, Tq=T, D=D, causal=causal)
    for D in (32, 40, 80, 96, 100, 160, 192, 256, 257):
        add(D=D)
        add(D=D, dtype="float32")
    for dtype in DTYPES:
        add(dtype=dtype, mask="bool")
        add(dtype=dtype, mask="float")
        add(dtype=dtype, mask="bool_b1tt")
        add(dtype=dtype, dropout=0.1)
        add(dtype=dtype, H=8, Hk=2)
        add(dtype=dtype, Tq=1, Tk=300, grad=False)
        add(dtype=dtype, Tq=64, Tk=300)
        add(dtype=dtype, Tq=64, Tk=300, causal=True)
        add(dtype=dtype, grad=False)
        add(dtype=dtype, grad=False, causal=True)
        add(dtype=dtype, layout="bthd")
        add(dtype=dtype, Dv=32)
        for backend in BACKENDS:
            add(dtype=dtype, backend=backend)
            add(dtype=dtype, backend=backend, causal=True)
    for B, H, T in ((1, 1, 64), (8, 12, 1024), (4, 16, 2048), (3, 5, 77)):
        add(B=B, H=H, Tq=T)
        add(B=B, H=H, Tq=T, dtype="bfloat16", causal=True)
        add(B=B, H=H, Tq=T, dtype="float32")
    return out


def make_inputs(c):
    dt = DTYPES[c["dtype"]]
    B, H, D = c["B"], c["H"], c["D"]
    Hk = c["Hk"] or H
    Tq = c["Tq"]
    Tk = c["Tk"] or Tq
    Dv = c["Dv"] or D

    def leaf(h, t, d):
        if c["layout"] == "bthd":
            x = torch.randn(B, t, h, d, device="cuda", dtype=dt).transpose(1, 2)
        else:
            x = torch.randn(B, h, t, d, device="cuda", dtype=dt)
        return x.requires_grad_(c["grad"])

    q, k, v = leaf(H, Tq, D), leaf(Hk, Tk, D), leaf(Hk, Tk, Dv)
    mask = None
    if c["mask"] == "bool":
        mask = torch.ones(Tq, Tk, device="cuda", dtype=torch.bool).tril()
    elif c["mask"] == "float":
        mask = torch.zeros(B, 1, Tq, Tk, device="cuda", dtype=dt)
    elif c["mask"] == "bool_b1tt":
        mask = torch.ones(B, 1, Tq, Tk, device="cuda", dtype=torch.bool).tril()
    return q, k, v, mask


def run_case(c):
    q, k, v, mask = make_inputs(c)
    kwargs = dict(attn_mask=mask, dropout_p=c["dropout"], is_causal=c["causal"], scale=c["scale"])
    if c["Hk"]:
        kwargs["enable_gqa"] = True
    torch.cuda.synchronize()
    record = {"case": c}
    try:
        start = trace_len()
        if c["backend"]:
            with sdpa_kernel(BACKENDS[c["backend"]]):
                out = F.scaled_dot_product_attention(q, k, v, **kwargs)
        else:
            out = F.scaled_dot_product_attention(q, k, v, **kwargs)
        torch.cuda.synchronize()
        record["forward"] = trace_since(start)
        record["grad_fn"] = type(out.grad_fn).__name__ if out.grad_fn is not None else None
        record["out"] = {"shape": list(out.shape), "stride": list(out.stride()), "dtype": str(out.dtype)}
        saved = {}
        if out.grad_fn is not None:
            for name in dir(out.grad_fn):
                if name.startswith("_saved_"):
                    val = getattr(out.grad_fn, name)
                    if isinstance(val, torch.Tensor):
                        saved[name] = {"shape": list(val.shape), "stride": list(val.stride()),
                                       "dtype": str(val.dtype), "device": str(val.device)}
                    elif isinstance(val, (int, float, bool, str)) or val is None:
                        saved[name] = val
        record["saved"] = saved
        if c["grad"]:
            g = torch.randn_like(out)
            torch.cuda.synchronize()
            start = trace_len()
            out.backward(g)
            torch.cuda.synchronize()
            record["backward"] = trace_since(start)
            del g
        start = trace_len()
        del out
        record["del_out"] = trace_since(start)
    except Exception as e:  # a forced backend that cannot run these inputs
        record["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return record


def main():
    torch.cuda.init()
    torch.manual_seed(0)
    a = torch.randn(64, 64, device="cuda")
    (a @ a).sum().item()  # cuBLAS loaded and its workspace made before any case
    torch.cuda.memory._record_memory_history(max_entries=2_000_000, context=None, stacks="python")
    records = []
    for c in cases():
        records.append(run_case(c))
        torch.cuda.empty_cache()
    env = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(0),
        "capability": list(torch.cuda.get_device_capability(0)),
        "flash_enabled": torch.backends.cuda.flash_sdp_enabled(),
        "mem_efficient_enabled": torch.backends.cuda.mem_efficient_sdp_enabled(),
        "cudnn_sdp_enabled": torch.backends.cuda.cudnn_sdp_enabled(),
        "math_enabled": torch.backends.cuda.math_sdp_enabled(),
    }
    with open(sys.argv[1], "w") as f:
        json.dump({"recorded_with": env, "records": records}, f)
    print(len(records), "cases;", sum("error" in r for r in records), "errors")


if __name__ == "__main__":
    main()
