"""Where torchlet first puts a block somewhere else than PyTorch did: each event's address as its
segment (the how-many-th segment_alloc) and its offset in it, compared event by event.

    python3 tests/parity/placement_diff.py NAME [--trace FILE] [--torchlet BIN] [--context N]

A tool beside compare.py, for PLACEMENT_UNREPRODUCED (tests/common/mod.rs): compare.py says whether
the events are PyTorch's; this says whether each one took the same block. It runs
tests/parity/NAME.py on the simulated GPU and reads PyTorch's addresses from --trace (default
tests/data/placement/NAME.json, written by `record.py --addrs`). It also prints the segments'
addresses in PyTorch's recording, MiB below the highest, in the order they were allocated: the
driver's placement, which decides which of two equal free blocks best fit takes.
"""

import argparse
import json
import sys

from compare import REPO, torchlet_events


def placed(events):
    """Each event as (action, size, (segment ordinal, offset)), the segment the address lies in."""
    live, out, count = [], [], 0
    for action, size, addr in events:
        if action == "segment_alloc":
            live.append((addr, size, count))
            count += 1
        where = next(((n, addr - a) for a, s, n in live if a <= addr < a + s), None)
        if action == "segment_free":
            live = [seg for seg in live if seg[0] != addr]
        out.append((action, size, where))
    return out


def segment_addresses(events):
    """(ordinal, MiB, MiB below the highest) of each segment_alloc in PyTorch's recording."""
    segments = [(size, addr) for action, size, addr in events if action == "segment_alloc"]
    top = max(addr for _, addr in segments)
    return [(n, size >> 20, (top - addr) >> 20) for n, (size, addr) in enumerate(segments)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name")
    p.add_argument("--trace", help="PyTorch's recording with addresses")
    p.add_argument("--torchlet", default=str(REPO / "target" / "debug" / "torchlet"))
    p.add_argument("--context", type=int, default=8)
    args = p.parse_args()
    trace = args.trace or REPO / "tests" / "data" / "placement" / f"{args.name}.json"
    theirs = [[e["action"], e["size"], e["addr"]] for e in json.load(open(trace))["events"]]
    print("PyTorch's segments (ordinal, MiB, MiB below the highest):", segment_addresses(theirs))
    ours, stderr = torchlet_events(args.torchlet, args.name, third='e["addr"]')
    if ours is None:
        sys.exit(f"{args.name}.py failed under torchlet:\n{stderr}")
    a, b = placed(theirs), placed(ours)
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if first is None:
        print(f"{args.name}: every block where PyTorch put it ({min(len(a), len(b))} events)")
        return 0
    print(f"{args.name}: event {first} takes another block (PyTorch, then torchlet: segment, offset)")
    for i in range(max(0, first - args.context), min(len(a), len(b), first + args.context)):
        mark = "  " if a[i] == b[i] else "!!"
        print(f"{mark} {i:5} {a[i][0]:>14} {a[i][1]:>10} {str(a[i][2]):>18}   {str(b[i][2]):>18}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
