"""What sort, topk, cumsum, multinomial and embedding backward allocate inside the op, over a sweep
of shapes and dtypes: the caching allocator's events from the op's call to its return.

    python3 tests/data/record_scratch_sizes.py OUT.json            # under PyTorch, on a GPU
    torchlet --simulate-cuda python tests/data/record_scratch_sizes.py --check tests/data/scratch_sizes.json

CUB's temporary storage (radix sort, scan, scan by key) is sized by tile counts no header states;
these recorded sizes are where torchlet's formulas come from (Note [CUB temporary storage] in
crates/core/src/device/cub_scratch.rs). `--check` runs the same cases and prints each one whose
events differ from the file's, then how many matched.
"""

import json
import sys

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int64": torch.int64}


def events():
    trace = torch.cuda.memory._snapshot()["device_traces"][0]
    return [[e["action"], e["size"]] for e in trace if e["action"] in ("alloc", "free_completed")]


def tensor(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape, device="cuda", dtype=dtype)
    return torch.randint(0, 1 << 30, shape, device="cuda", dtype=dtype)


def specs():
    """(op, shape, dtype, kwargs) of every case, in the recorded order."""
    out = []
    for dtype in ("float32", "float16", "int64"):
        for shape in [(5000,), (50257,), (1_000_000,), (4097,), (4096,), (2, 4097), (4, 50257), (8, 10000),
                      (32, 32000), (127, 5000), (128, 5000), (1000, 5000), (64, 1000), (3, 2048), (16, 128256)]:
            out.append(("sort", shape, dtype, {}))
    out.append(("sort", (4, 50257), "float32", {"descending": True}))
    out.append(("sort", (50257, 4), "float32", {"dim": 0}))
    for dtype in ("float32", "float16", "bfloat16"):
        for shape, k in [((50257,), 50), ((4, 50257), 50), ((1, 50257), 1), ((32, 32000), 50), ((64, 128256), 50),
                         ((1, 1_000_000), 10), ((200, 3000), 10), ((16, 1000), 10), ((4, 50257), 1000),
                         ((4, 50257), 2049), ((8, 152064), 20), ((1000, 4096), 8), ((4096, 512), 2), ((2, 30000), 40)]:
            out.append(("topk", shape, dtype, {"k": k}))
    out.append(("topk", (4, 50257), "float32", {"k": 50, "sorted": False}))
    out.append(("topk", (4, 50257), "float32", {"k": 50, "largest": False}))
    for shape, dim in [((1000,), 0), ((10000,), 0), ((100000,), 0), ((1_000_000,), 0), ((10_000_000,), 0),
                       ((4, 50257), -1), ((50257, 4), 0), ((4, 50257), 0), ((1, 50257), -1)]:
        for dtype in ("float32", "float16"):
            out.append(("cumsum", shape, dtype, {"dim": dim}))
    for shape, n, repl in [((4, 50257), 1, False), ((4, 50257), 5, False), ((4, 50257), 5, True),
                           ((50257,), 1, False), ((50257,), 10, True), ((4, 100), 3, True), ((32, 32000), 1, True)]:
        out.append(("multinomial", shape, "float32", {"num_samples": n, "replacement": repl}))
    for n, vocab in [(3072, 50257), (3073, 50257), (4096, 50257), (16384, 50257), (65536, 50257),
                     (8192, 128256), (8192, 1000)]:
        out.append(("embedding_backward", (n, 64), "float32", {"vocab": vocab}))
    return out


def run_case(op, shape, dtype, kw):
    """The events the op made (its result included), once its inputs exist."""
    if op == "embedding_backward":
        w = torch.randn(kw["vocab"], shape[1], device="cuda", requires_grad=True)
        idx = torch.randint(0, kw["vocab"], (shape[0],), device="cuda")
        y = torch.nn.functional.embedding(idx, w)
        g = torch.ones_like(y)
        before = len(events())
        y.backward(g)
        return events()[before:]
    x = tensor(shape, DTYPES[dtype])
    if op == "multinomial":
        x = x.abs()
    torch.cuda.synchronize()
    before = len(events())
    r = getattr(torch, op)(x, **kw)
    torch.cuda.synchronize()
    made = events()[before:]
    del r, x
    return made


def main():
    torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    if sys.argv[1] == "--check":
        recorded = json.load(open(sys.argv[2]))["cases"]
        skip = set(sys.argv[3:])
        matched = 0
        for case in recorded:
            if case["op"] in skip:
                continue
            made = run_case(case["op"], tuple(case["shape"]), case["dtype"], case["kwargs"])
            if made == case["events"]:
                matched += 1
            else:
                print("differs:", case["op"], case["shape"], case["dtype"], case["kwargs"])
                print("  PyTorch: ", case["events"])
                print("  here:    ", made)
        print(matched, "cases equal")
        return
    cases = [{"op": op, "shape": list(shape), "dtype": dtype, "kwargs": kw, "events": run_case(op, shape, dtype, kw)}
             for op, shape, dtype, kw in specs()]
    result = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
              "cases": cases}
    json.dump(result, open(sys.argv[1], "w"), indent=1)
    print(len(cases), "cases")


if __name__ == "__main__":
    main()
