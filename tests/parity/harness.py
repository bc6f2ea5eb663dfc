"""checkpoint(label) for the PyTorch side of the memory-event parity corpus (see README.md)."""

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


def checkpoint(label):
    """Record the allocator's figures here, the number of events so far and the caller's line."""
    caller = sys._getframe(1)
    CHECKPOINTS.append(
        {
            "label": label,
            "line": caller.f_lineno,
            "events": len(trace_events()),
            "memory_allocated": torch.cuda.memory_allocated(),
            "memory_reserved": torch.cuda.memory_reserved(),
            "memory_stats": dict(torch.cuda.memory_stats()),
        }
    )
