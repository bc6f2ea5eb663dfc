"""torch.random: the generators' state, saved and put back (`get_rng_state`, `fork_rng`).

torchlet's generators draw no numbers PyTorch's would, so a state is an opaque object rather than
PyTorch's byte tensor: it can be kept and set back, which is what checkpointing and `fork_rng` do.
The CPU's and the GPUs' generators are saved and restored together. The state lives on the host
and takes no GPU memory, as PyTorch's does.
"""
import contextlib
import sys

_C = sys.modules["torch._C"]

__all__ = ["fork_rng", "get_rng_state", "set_rng_state", "manual_seed"]


class _RngState:
    """Every generator's state at one moment (`torch.get_rng_state()`)."""

    def __init__(self):
        self._id = _C._rng_snapshot()

    def __repr__(self):
        return "<torchlet RNG state: opaque; pass it to torch.set_rng_state>"

    def __del__(self):
        _C._rng_release(self._id)


def get_rng_state():
    """The generators' state now, to hand back to `set_rng_state`."""
    return _RngState()


def set_rng_state(new_state):
    """Put the generators back as `get_rng_state()` found them."""
    if not isinstance(new_state, _RngState):
        raise TypeError(
            "torchlet: set_rng_state takes a state that torch.get_rng_state() returned "
            f"(torchlet's states are opaque), got {type(new_state).__name__}"
        )
    _C._rng_restore(new_state._id)


def manual_seed(seed):
    import torch

    torch.manual_seed(seed)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Inside, draw as you like: leaving puts the generators back as they were on entry."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
