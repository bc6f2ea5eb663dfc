"""torch.cuda: devices and the caching allocator's memory API, over torchlet's allocator."""

import sys

import torch

_C = sys.modules["torch._C"]

from torch.cuda import memory  # noqa: E402
from torch.cuda.memory import (  # noqa: E402,F401
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)

from torch.cuda.streams import (  # noqa: E402,F401
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

OutOfMemoryError = torch.OutOfMemoryError


def _index(device):
    """A CUDA device index from None (the current one), an int, "cuda:1" or torch.device."""
    if device is None:
        return None
    if isinstance(device, int):
        return device
    d = torch.device(device)
    return d.index


def is_available():
    return _C._cuda_is_available()


def is_initialized():
    return _C._cuda_is_available()


def init():
    return None


def device_count():
    return _C._cuda_device_count()


def current_device():
    return _C._cuda_current_device()


def set_device(device):
    _C._cuda_set_device(_index(device))


def synchronize(device=None):
    _C._cuda_synchronize(_index(device))


def get_device_name(device=None):
    return _C._cuda_device_name(_index(device))


def is_bf16_supported(including_emulation=True):
    return True


class device:
    """`with torch.cuda.device(1):` makes cuda:1 the current device inside."""

    def __init__(self, device):
        self._index = _index(device)
        self._previous = None

    def __enter__(self):
        self._previous = current_device()
        if self._index is not None:
            set_device(self._index)

    def __exit__(self, *exc):
        set_device(self._previous)
        return False


def manual_seed(seed):
    torch.manual_seed(seed)


manual_seed_all = manual_seed


def get_rng_state(device="cuda"):
    """The generators' state (torchlet saves the CPU's and the GPUs' together: see torch.random)."""
    return torch.random.get_rng_state()


def set_rng_state(new_state, device="cuda"):
    torch.random.set_rng_state(new_state)


def get_rng_state_all():
    return [get_rng_state()]


def set_rng_state_all(new_states):
    for state in new_states:
        set_rng_state(state)


class amp:
    """torch.cuda.amp.autocast, the older spelling of torch.autocast("cuda")."""

    @staticmethod
    def autocast(enabled=True, dtype=None, cache_enabled=True):
        return torch.autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
