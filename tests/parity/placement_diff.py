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
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

DRIVER = """
import json, sys, torch
sys.argv = [{program!r}]
sys.path.insert(0, {folder!r})
torch.cuda.memory._record_memory_history(max_entries=10_000_000)
program_globals = {{"__name__": "__main__", "__file__": {program!r}}}
exec(compile(open({program!r}).read(), {program!r}, "exec"), program_globals)
trace = torch.cuda.memory._snapshot()["device_traces"][0]
kept = [e for e in trace if e["action"] not in ("free_requested", "snapshot")]
json.dump([[e["action"], e["size"], e["addr"]] for e in kept], open({out!r}, "w"))
"""


def torchlet_events(binary, name):
    """[action, size, addr] of each of torchlet's events for NAME.py on the simulated GPU."""
    program = str(HERE / f"{name}.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "events.json")
        driver = DRIVER.format(program=program, folder=str(HERE), out=out)
        env = dict(os.environ, TORCHLET_SIMULATE_CUDA="80GiB")
        done = subprocess.run([binary, "python", "-c", driver], capture_output=True, text=True, env=env)
        if not os.path.exists(out):
            sys.exit(f"{name}.py failed under torchlet:\n{done.stderr}")
        return json.load(open(out))


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
    a, b = placed(theirs), placed(torchlet_events(args.torchlet, args.name))
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
