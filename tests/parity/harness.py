"""checkpoint(label) for the PyTorch side of the memory-event parity corpus (see README.md)."""

import os
import sys

import torch

# Trace actions left out of the recorded events: free_requested always precedes its free_completed,
# and snapshot marks a call to _snapshot() (each checkpoint makes one), not an allocator event.
SKIPPED_ACTIONS = ("free_requested", "snapshot")

# The checkpoints of the program being recorded, in order; record.py reads and resets this list.
CHECKPOINTS = []


def trace_events():
    """Device 0's trace entries so far, oldest first, without SKIPPED_ACTIONS."""
    traces = torch.cuda.memory._snapshot()["device_traces"]
    entries = traces[0] if traces else []
    return [e for e in entries if e["action"] not in SKIPPED_ACTIONS]


# Set by `record.py --addrs`: each checkpoint also keeps the segments' addresses and their blocks.
SEGMENTS_ENV = "TORCHLET_PARITY_SEGMENTS"

# A block's state in a checkpoint's segment list: allocated, free, or freed but still in use by a stream.
STATE_CODES = {"active_allocated": "a", "inactive": "i", "active_pending_free": "p"}


def segments():
    """Device 0's segments in address order: address, size, pool and blocks as [size, state code]."""
    out = []
    for seg in torch.cuda.memory._snapshot()["segments"]:
        if seg.get("device", 0) != 0:
            continue
        out.append(
            {
                "address": seg["address"],
                "total_size": seg["total_size"],
                "pool": seg["segment_type"],
                "blocks": [[b["size"], STATE_CODES.get(b["state"], b["state"])] for b in seg["blocks"]],
            }
        )
    return sorted(out, key=lambda s: s["address"])


def checkpoint(label):
    """Record the allocator's figures here, the number of events so far and the caller's line."""
    caller = sys._getframe(1)
    record = {
        "label": label,
        "line": caller.f_lineno,
        "events": len(trace_events()),
        "memory_allocated": torch.cuda.memory_allocated(),
        "memory_reserved": torch.cuda.memory_reserved(),
        "memory_stats": dict(torch.cuda.memory_stats()),
    }
    if os.environ.get(SEGMENTS_ENV) and torch.cuda.is_initialized():
        record["segments"] = segments()
    CHECKPOINTS.append(record)
