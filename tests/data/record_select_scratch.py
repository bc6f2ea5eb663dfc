"""What nonzero and masked_scatter_ allocate inside the op, over a sweep of mask sizes and
densities: the caching allocator's events from the op's call to its return (run on a GPU).

    python3 tests/data/record_select_scratch.py OUT.json

nonzero counts the mask (a 4-byte count, CUB's reduce scratch), makes its [count, ndim] output and
fills it with CUB's flagged select (its scratch); masked_scatter_ makes an int64 prefix sum of the
mask and runs CUB's exclusive sum (its scratch). The scratch sizes are CUB's tile counts, which no
header states: tests/data/select_scratch.json is where torchlet's formulas for them come from
(Note [CUB temporary storage] in crates/core/src/device/cub_scratch.rs).
"""

import json
import sys

import torch


def events():
    trace = torch.cuda.memory._snapshot()["device_traces"][0]
    return [[e["action"], e["size"]] for e in trace if e["action"] in ("alloc", "free_completed")]


def run(op, n, every):
    mask = (torch.arange(n, device="cuda") % every) == 0
    src = torch.zeros(n, device="cuda")
    x = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    before = len(events())
    r = torch.nonzero(mask) if op == "nonzero" else x.masked_scatter_(mask, src)
    torch.cuda.synchronize()
    made = events()[before:]
    del r
    return {"op": op, "n": n, "every": every, "count": int(mask.sum()), "events": made}


def main():
    torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    cases = []
    for op in ("nonzero", "masked_scatter_"):
        for n in (64, 4096, 4097, 16384, 65536, 262144, 1_000_000, 1 << 22, 1 << 24, 50_000_000):
            for every in (1, 3, 1000):
                cases.append(run(op, n, every))
    result = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
              "cases": cases}
    json.dump(result, open(sys.argv[1], "w"), indent=1)
    print(len(cases), "cases")


if __name__ == "__main__":
    main()
