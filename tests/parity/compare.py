"""Run a parity program under torchlet and show where its allocator events first differ from PyTorch's.

    python3 tests/parity/compare.py NAME [--torchlet BIN] [--frames FILE] [--context N] [--real-gpu]

A tool for working on a program, beside the tests (tests/memory/parity_python.rs): it runs
tests/parity/NAME.py with `torchlet --simulate-cuda 80GiB python`, compares its events with
tests/data/torch_traces/NAME.json and prints the events around the first difference, side by side. With
--frames, the file written by `record.py --frames --combined` (or that file's NAME entry) gives PyTorch's
Python frames for each event: which line of a library's model made it.
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
source = open({program!r}).read()
program_globals = {{"__name__": "__main__", "__file__": {program!r}}}
exec(compile(source, {program!r}, "exec"), program_globals)
# The snapshot comes while program_globals still holds the program's variables, as record.py's does.
trace = torch.cuda.memory._snapshot()["device_traces"][0]
kept = [e for e in trace if e["action"] not in ("free_requested", "snapshot")]
order = {{0: 0}}
for e in kept:
    order.setdefault(e["stream"], len(order))
events = [[e["action"], e["size"], {third}] for e in kept]
json.dump(events, open({out!r}, "w"))
"""


def torchlet_events(binary, name, real_gpu=False, third='order[e["stream"]]'):
    """(events, stderr) of NAME.py under torchlet: [action, size, third] each, `third` the
    event's stream ordinal unless another expression of the event `e` is given (`e["addr"]`)."""
    program = str(HERE / f"{name}.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "events.json")
        driver = DRIVER.format(program=program, folder=str(HERE), out=out, third=third)
        env = dict(os.environ) if real_gpu else dict(os.environ, TORCHLET_SIMULATE_CUDA="80GiB")
        done = subprocess.run([binary, "python", "-c", driver], capture_output=True, text=True, env=env)
        if not os.path.exists(out):
            return None, done.stdout + done.stderr
        return json.load(open(out)), done.stderr


def sort_cache_frees(torch, theirs, ours):
    """Note [autocast cache order] (tests/memory/parity.rs), as the tests apply it: a run of frees
    PyTorch made leaving an autocast block (its cached casts, in a hash map's order) is compared as
    a set, each side's run sorted where torchlet has frees there too."""
    i = 0
    while i < len(theirs):
        end = i
        while end < len(theirs) and torch[end]["action"] == "free_completed" and \
                (torch[end].get("autocast_exit") or
                 (torch[end].get("code") or "").lstrip().startswith("with torch.autocast")):
            end += 1
        if end - i > 1 and end <= len(ours) and all(e[0] == "free_completed" for e in ours[i:end]):
            theirs[i:end] = sorted(theirs[i:end])
            ours[i:end] = sorted(ours[i:end])
        i = max(end, i + 1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name")
    p.add_argument("--torchlet", default=str(REPO / "target" / "debug" / "torchlet"))
    p.add_argument("--frames", help="record.py --frames output with PyTorch's frames")
    p.add_argument("--context", type=int, default=8)
    p.add_argument("--real-gpu", action="store_true", help="run torchlet on the real GPU, not a simulated one")
    args = p.parse_args()
    torch = json.load(open(REPO / "tests" / "data" / "torch_traces" / f"{args.name}.json"))["events"]
    frames = None
    if args.frames:
        doc = json.load(open(args.frames))
        frames = [e.get("frames", []) for e in doc.get(args.name, doc)["events"]]
    ours, stderr = torchlet_events(args.torchlet, args.name, args.real_gpu)
    if ours is None:
        print(f"{args.name}.py failed under torchlet:\n{stderr}")
        return 1
    # Each event as [action, size, stream ordinal] (record.py's "stream", 0 where it has none).
    theirs = [[e["action"], e["size"], e.get("stream", 0)] for e in torch]
    sort_cache_frees(torch, theirs, ours)
    first = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b), None)
    if first is None and len(theirs) == len(ours):
        print(f"{args.name}: all {len(ours)} events equal")
        return 0
    first = min(len(theirs), len(ours)) if first is None else first
    print(f"{args.name}: first difference at event {first} (PyTorch {len(theirs)} events, torchlet {len(ours)})")
    for i in range(max(0, first - args.context), first + args.context):
        a = theirs[i] if i < len(theirs) else ["", "", 0]
        b = ours[i] if i < len(ours) else ["", "", 0]
        mark = "  " if a == b else "!!"
        where = " | ".join(frames[i][:3]) if frames and i < len(frames) else ""
        on = lambda e: f"s{e[2]}" if e[2] else "  "
        print(f"{mark} {i:5} {a[0]:>14} {a[1]:>10} {on(a)}   {b[0]:>14} {b[1]:>10} {on(b)}   {where}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
