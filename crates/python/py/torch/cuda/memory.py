"""torch.cuda.memory: the caching allocator's figures, statistics, history and snapshots."""

import pickle
import sys

_C = sys.modules["torch._C"]


def _index(device):
    import torch.cuda

    return torch.cuda._index(device)


def memory_allocated(device=None):
    return _C._memory_allocated(_index(device))


def max_memory_allocated(device=None):
    return _C._max_memory_allocated(_index(device))


def memory_reserved(device=None):
    return _C._memory_reserved(_index(device))


def max_memory_reserved(device=None):
    return _C._max_memory_reserved(_index(device))


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def memory_stats(device=None):
    return _C._memory_stats(_index(device))


def memory_stats_as_nested_dict(device=None):
    nested = {}
    for key, value in memory_stats(device).items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return nested


def memory_summary(device=None, abbreviated=False):
    return _C._memory_summary(_index(device), abbreviated)


def reset_peak_memory_stats(device=None):
    _C._reset_peak_memory_stats(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats


def reset_accumulated_memory_stats(device=None):
    _C._reset_accumulated_memory_stats(_index(device))


def empty_cache():
    _C._empty_cache()


def mem_get_info(device=None):
    return _C._mem_get_info(_index(device))


def set_per_process_memory_fraction(fraction, device=None):
    _C._set_per_process_memory_fraction(fraction, _index(device))


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None, clear_history=False, compile_context=False,
                           global_record_annotations=False):
    if enabled is True:
        enabled = "all"
    elif enabled is False:
        enabled = None
    max_entries = min(max_entries, 2**62)
    _C._record_memory_history(enabled, max_entries)


def _snapshot(device=None):
    return _C._snapshot()


def _dump_snapshot(filename="dump_snapshot.pickle"):
    snapshot = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)
