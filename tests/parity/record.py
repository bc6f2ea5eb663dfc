"""Record PyTorch's allocator history for the parity corpus: one fresh process per NAME.py (see README.md).

    python3 tests/parity/record.py [NAME ...] [--out DIR] [--combined FILE]
    python3 tests/parity/record.py --split FILE [--out DIR]

Without NAME, every NAME.py beside this file that has a NAME.rhai is recorded. Each record goes to
DIR/NAME.json (default tests/data/torch_traces); --combined also writes one file mapping NAME to its
record (handy when only a few files can be carried back from the GPU machine), and --split turns such
a file back into DIR/NAME.json files. --addrs keeps each event's addr and stream and each checkpoint's
segments (their addresses and blocks, harness.segments()); they are left out otherwise. --frames keeps
each event's innermost Python frames, libraries' included (see which line of a library's model made it).
"""

import argparse
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "data" / "torch_traces"
MAX_ENTRIES = 1_000_000
CHILD_TIMEOUT_S = 240
NOT_PROGRAMS = {"harness", "record", "compare"}


def corpus_names():
    """Every NAME with both NAME.py and NAME.rhai here, and every Python-only py_NAME.py, sorted."""
    return sorted(
        p.stem
        for p in HERE.glob("*.py")
        if p.stem not in NOT_PROGRAMS and (p.with_suffix(".rhai").exists() or p.stem.startswith("py_"))
    )


def site_of(frames, program, lines):
    """(line, code) of the innermost frame in the program, or (None, None) when no frame is there."""
    # Frames come innermost first; should a build list them outermost first, this recorder's own frame
    # (which calls the program) comes before the program's, and the list is read the other way round.
    names = [os.path.abspath(f["filename"]) for f in frames]
    me = os.path.abspath(__file__)
    if me in names and program in names and names.index(me) < names.index(program):
        frames = frames[::-1]
    for frame in frames:
        if os.path.abspath(frame["filename"]) == program:
            line = frame["line"]
            code = lines[line - 1].strip() if 0 < line <= len(lines) else None
            return line, code
    return None, None


# Set by `record.py --frames`: each event also keeps its innermost Python frames (file:line function),
# libraries' included, to see which line of a library's model made it.
FRAMES_ENV = "TORCHLET_PARITY_FRAMES"


def library_frames(frames, keep=6):
    """The innermost `keep` frames as "file:line function", the file's last two path parts."""
    out = []
    for f in frames:
        if len(out) == keep:
            break
        if f["filename"].endswith("nn/modules/module.py"):
            continue  # Module.__call__'s wrappers
        path = "/".join(Path(f["filename"]).parts[-2:])
        out.append(f"{path}:{f['line']} {f['name']}")
    return out


def leaving_autocast(frames):
    """Whether the innermost frame is `torch.autocast.__exit__`: the free drops a cached cast, in
    the order of a hash map (Note [autocast cache order] in tests/memory/parity.rs), wherever the
    block is (in a library's backward, there is no program line to name it)."""
    return bool(frames) and frames[0]["filename"].endswith("amp/autocast_mode.py") and \
        frames[0]["name"] == "__exit__"


def context_of(lines):
    """The trace context a program asks for with `# record-context: NAME` (default "all").

    Under context="all", PyTorch 2.11 fails inside a checkpointed recomputation with
    `SystemError: error return without exception set` while it gathers the Python stack of a free;
    context="alloc" keeps the stacks of allocations only, which is all the comparison reads.
    """
    for line in lines:
        if line.startswith("# record-context:"):
            return line.split(":", 1)[1].strip()
    return "all"


def record_one(name):
    """Run NAME.py under memory-history recording in this process and return its record."""
    import torch

    import harness

    program = str(HERE / f"{name}.py")
    lines = Path(program).read_text().splitlines()
    torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES, context=context_of(lines), stacks="python")
    program_globals = runpy.run_path(program, run_name="__main__")
    # The final snapshot comes while program_globals still holds the program's variables.
    raw = torch.cuda.memory._snapshot()["device_traces"]
    torch.cuda.memory._record_memory_history(enabled=None)
    entries = raw[0] if raw else []
    if len(entries) >= MAX_ENTRIES:
        raise RuntimeError(f"the trace ring buffer ({MAX_ENTRIES} entries) overflowed")
    events = []
    for e in entries:
        if e["action"] in harness.SKIPPED_ACTIONS:
            continue
        line, code = site_of(e.get("frames", []), os.path.abspath(program), lines)
        event = {
            "action": e["action"],
            "size": e["size"],
            "line": line,
            "code": code,
            "addr": e.get("addr", e.get("device_free")),
            "stream": e.get("stream"),
        }
        if leaving_autocast(e.get("frames", [])):
            event["autocast_exit"] = True
        if os.environ.get(FRAMES_ENV):
            event["frames"] = library_frames(e.get("frames", []))
        events.append(event)
    del program_globals
    return {
        "program": f"{name}.py",
        "recorded_with": {
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0),
            "cuda": torch.version.cuda,
        },
        "events": events,
        "checkpoints": harness.CHECKPOINTS,
    }


def stream_ordinals(events):
    """Each event's stream as the order it first appeared in (0 for the default stream), so that
    handles (addresses of CUDA streams) compare across processes."""
    order = {0: 0, None: 0}
    for e in events:
        order.setdefault(e.get("stream"), len(order) - 1)
    return [order[e.get("stream")] for e in events]


def without_addrs(record):
    """The record in the README's format: events without addr, the stream as its ordinal where it is
    not the default one, checkpoints without segments."""
    events = []
    for e, stream in zip(record["events"], stream_ordinals(record["events"])):
        event = {k: e[k] for k in ("action", "size", "line", "code")}
        if e.get("autocast_exit"):
            event["autocast_exit"] = True
        if stream:
            event["stream"] = stream
        events.append(event)
    checkpoints = [{k: v for k, v in c.items() if k != "segments"} for c in record["checkpoints"]]
    return {**record, "events": events, "checkpoints": checkpoints}


def write_record(out_dir, name, record, keep_addrs):
    """Write DIR/NAME.json, one event per line so that diffs stay readable."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if not keep_addrs:
        record = without_addrs(record)
    head = {k: v for k, v in record.items() if k not in ("events", "checkpoints")}
    parts = [json.dumps(head)[:-1]]
    parts.append(',\n"events": [\n' + ",\n".join(json.dumps(e) for e in record["events"]) + "\n]")
    parts.append(',\n"checkpoints": [\n' + ",\n".join(json.dumps(c) for c in record["checkpoints"]) + "\n]\n}\n")
    (out_dir / f"{name}.json").write_text("".join(parts))


def run_child(name, result_path):
    """Record NAME in a fresh Python process: a fresh allocator, and no cuBLAS workspace yet."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--child-result", str(result_path)]
    try:
        done = subprocess.run(cmd, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"timed out after {CHILD_TIMEOUT_S} s"
    if done.returncode != 0:
        return f"exit status {done.returncode}"
    return None


def record_all(names, out_dir, combined, keep_addrs):
    """Record each name in turn; return the names that failed."""
    failed, records = [], {}
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            t0 = time.time()
            result_path = Path(tmp) / f"{name}.json"
            problem = run_child(name, result_path)
            if problem is None:
                record = json.loads(result_path.read_text())
                records[name] = record
                if out_dir is not None:
                    write_record(out_dir, name, record, keep_addrs)
                print(
                    f"ok     {name}: {len(record['events'])} events, {len(record['checkpoints'])} checkpoints,"
                    f" {time.time() - t0:.1f} s",
                    flush=True,
                )
            else:
                failed.append(name)
                print(f"FAILED {name}: {problem}", flush=True)
    if combined is not None:
        Path(combined).parent.mkdir(parents=True, exist_ok=True)
        Path(combined).write_text(json.dumps(records))
    print(f"recorded {len(records)} of {len(names)} programs in {time.time() - start:.1f} s", flush=True)
    return failed


def split(combined, out_dir, keep_addrs):
    """Turn a --combined file back into DIR/NAME.json files."""
    records = json.loads(Path(combined).read_text())
    for name, record in sorted(records.items()):
        write_record(out_dir, name, record, keep_addrs)
        print(f"wrote {out_dir / (name + '.json')}: {len(record['events'])} events")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", metavar="NAME", help="programs to record (default: all pairs)")
    p.add_argument("--out", type=Path, help=f"output folder (default {DEFAULT_OUT})")
    p.add_argument("--combined", help="also write one JSON file mapping NAME to its record")
    p.add_argument("--split", metavar="FILE", help="write DIR/NAME.json from a --combined file, then stop")
    p.add_argument("--addrs", action="store_true", help="keep each event's addr and stream")
    p.add_argument("--frames", action="store_true", help="keep each event's innermost Python frames")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-result", help=argparse.SUPPRESS)
    return p.parse_args()


def main():
    args = parse_args()
    if args.child:
        try:
            record = record_one(args.child)
        except BaseException:
            traceback.print_exc()
            return 1
        Path(args.child_result).write_text(json.dumps(record))
        return 0
    out_dir = args.out if args.out is not None else DEFAULT_OUT
    if args.addrs:
        # Read by harness.checkpoint in each child.
        os.environ["TORCHLET_PARITY_SEGMENTS"] = "1"
    if args.frames:
        os.environ[FRAMES_ENV] = "1"
    if args.split:
        split(args.split, out_dir, args.addrs)
        return 0
    known = corpus_names()
    names = args.names or known
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"no program (NAME.py with NAME.rhai, or py_NAME.py, in {HERE}) for: {', '.join(unknown)}", file=sys.stderr)
        return 2
    failed = record_all(names, out_dir, args.combined, args.addrs)
    if failed:
        print(f"{len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
