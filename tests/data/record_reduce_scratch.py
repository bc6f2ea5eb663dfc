"""Records PyTorch's allocator events during CUDA reductions, for tests/tensors/reduce_scratch.rs.

On the GPU machine: python3 tests/data/record_reduce_scratch.py OUT.json
One row per case: op (sum, mean, amax, max/min over everything, max_dim/min_dim = values and
indices, argmax, argmin), dtype, shape, layout, dim (None: everything; an int; a list), keepdim,
the input's strides and storage offset, the outputs' shapes, and every allocator event of the op
call as [action, requested bytes] (free_requested left out).
The device command line holds 2000 characters, so it ran as `python3 -c` of this source with
docstrings and comments stripped and local names shortened, raw-deflated and base85-encoded:
the same program.
"""
import json
import sys

import torch


def make(shape, dt, layout):
    """An input of `shape`: contiguous, t (transposed 2-D), slice (every other column),
    offset (one element into its storage) or permute (3-D, dims 0 and 1 swapped)."""
    n = 1
    for s in shape:
        n *= s
    base, view = {
        "contiguous": lambda: (shape, lambda x: x),
        "t": lambda: (shape[::-1], lambda x: x.t()),
        "slice": lambda: ((*shape[:-1], 2 * shape[-1]), lambda x: x[..., ::2]),
        "offset": lambda: ((n + 1,), lambda x: x[1:].view(shape)),
        "permute": lambda: ((*shape[1::-1], *shape[2:]), lambda x: x.permute(1, 0, 2)),
    }[layout]()
    # Integers in [-1000, 1000), mostly-true bools, normal floats.
    return view((torch.randn(base, device="cuda") * 1000).to(getattr(torch, dt)))


def call(op, x, dim, keepdim):
    if op in ("max", "min"):  # everything, values only
        return getattr(x, op)()
    if op in ("max_dim", "min_dim"):
        return getattr(torch, op[:3])(x, dim, keepdim)
    f = getattr(x, op)  # sum, mean, amax, argmax, argmin
    return f() if dim is None else f(dim, keepdim)


def events(op, x, dim, keepdim):
    """The allocator events of one call, and the shapes of what it returns."""
    trace = lambda: torch.cuda.memory._snapshot()["device_traces"][0]
    torch.cuda.synchronize()
    n0 = len(trace())
    out = call(op, x, dim, keepdim)
    torch.cuda.synchronize()
    outs = out if isinstance(out, tuple) else (out,)
    return [[e["action"], e["size"]] for e in trace()[n0:] if e["action"] != "free_requested"], [
        list(o.shape) for o in outs]


def specs(s):
    """'sum:float32 mean:float16' -> [('sum', 'float32'), ('mean', 'float16')]."""
    return [w.split(":") for w in s.split()]


FEW_FULL = specs("sum:float32 sum:float16 mean:float32 max:float32 amax:float32 argmax:float32")
FEW_DIM = specs("sum:float32 sum:float16 mean:float32 amax:float32 max_dim:float32 argmax:float32")
FULL = FEW_FULL + specs("sum:int64 mean:float16 max:float16 min:float32 argmax:float16 argmin:float32")
DIM = FEW_DIM + specs("sum:int64 mean:float16 amax:float16 max_dim:float16 min_dim:float32"
                      " argmax:float16 argmin:float32")
OTHER = specs("sum:float64 sum:bfloat16 sum:int32 sum:bool amax:int64 argmax:float64")
M = 1 << 20


def cases():
    out = []

    def add(ops, shape, dims, layout="contiguous", keepdim=False):
        out.extend(dict(op=op, dtype=dt, shape=shape, layout=layout, dim=d, keepdim=keepdim)
                   for d in dims for op, dt in ops)

    for shape in [[1], [7], [1000], [4097], [131072], [M], [16 * M], [16 * M + 3]]:
        add(FULL, shape, [None])
        add(FEW_DIM, shape, [0])
    for shape in [[4097, 3], [3, 4097], [1000, 1000], [4096, 4096], [4096, 1], [64, 8192], [2, M]]:
        add(FEW_FULL, shape, [None])
        add(DIM, shape, [0, 1])
        if shape in ([4096, 4096], [4097, 3]):
            add(specs("sum:float32 max_dim:float32 argmax:float32"), shape, [0, 1], "contiguous", True)
    for shape in [[3, 5, 7], [64, 64, 64], [8, 512, 1024], [2, 4096, 4096]]:
        add(FEW_FULL, shape, [None])
        add(FEW_DIM + specs("max_dim:float16 argmax:float16"), shape, [0, 1, 2])
    for layout, shape in [("t", [4097, 3]), ("t", [3, 4097]), ("t", [1000, 1000]), ("t", [4096, 4096]),
                          ("slice", [4096, 2048]), ("offset", [4096, 4096]), ("offset", [16 * M]),
                          ("permute", [2, 4096, 4096])]:
        add(FEW_FULL, shape, [None], layout)
        add(FEW_DIM, shape, range(len(shape)), layout)
    for shape, dims in [([2, 4096, 4096], [0, 2]), ([2, 4096, 4096], [0, 1]), ([2, 4096, 4096], [1, 2]),
                        ([64, 64, 64], [0, 2]), ([8, 512, 1024], [0, 2]), ([3, 5, 7], [0, 2])]:
        add(FEW_DIM[:4], shape, [dims])
        add(FEW_DIM[:1], shape, [dims], "contiguous", True)
    add(OTHER, [16 * M], [None])
    add(OTHER + specs("max_dim:float64 max_dim:int64"), [4096, 4096], [0, 1])
    add(FEW_FULL, [], [None])
    add(FEW_DIM, [], [0])
    add(FEW_DIM[:3], [0, 3], [None, 0])
    return out


def main():
    p = torch.cuda.get_device_properties(0)
    torch.cuda.memory._record_memory_history(context=None, max_entries=1 << 20)
    rows = []
    for c in cases():
        row = dict(c)
        try:
            x = make(c["shape"], c["dtype"], c["layout"])
            row.update(strides=x.stride(), storage_offset=x.storage_offset())
            row["events"], row["out_shapes"] = events(c["op"], x, c["dim"], c["keepdim"])
        except Exception as e:  # a case PyTorch refuses is recorded, not fatal
            row["error"] = repr(e)
        rows.append(row)
    head = dict(torch=torch.__version__, device=p.name, multi_processor_count=p.multi_processor_count,
                max_threads_per_multi_processor=p.max_threads_per_multi_processor)
    with open(sys.argv[1], "w") as f:  # one case a line, for readable diffs
        f.write(json.dumps(head)[:-1] + ',"cases":[\n' + ",\n".join(map(json.dumps, rows)) + "\n]}\n")


if __name__ == "__main__":
    main()
