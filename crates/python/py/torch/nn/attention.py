"""torch.nn.attention: SDPBackend and sdpa_kernel, which choose scaled_dot_product_attention's kernels."""

import contextlib

import torch

_C = torch._C


class SDPBackend:
    """One of scaled_dot_product_attention's implementations, as PyTorch's enum names it."""

    __slots__ = ("name", "value")

    def __init__(self, name, value):
        self.name = name
        self.value = value

    def __repr__(self):
        return f"<SDPBackend.{self.name}: {self.value}>"

    def __eq__(self, other):
        return isinstance(other, SDPBackend) and other.value == self.value

    def __hash__(self):
        return hash(self.value)


SDPBackend.ERROR = SDPBackend("ERROR", -1)
SDPBackend.MATH = SDPBackend("MATH", 0)
SDPBackend.FLASH_ATTENTION = SDPBackend("FLASH_ATTENTION", 1)
SDPBackend.EFFICIENT_ATTENTION = SDPBackend("EFFICIENT_ATTENTION", 2)
SDPBackend.CUDNN_ATTENTION = SDPBackend("CUDNN_ATTENTION", 3)

_SWITCHABLE = ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Allow only `backends` (one or a list) inside the block; the previous switches come back after."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    wanted = set()
    for b in backends:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel takes SDPBackend values, not {type(b).__name__}")
        wanted.add(b.name)
    before = {name: _C._sdp_enabled(name) for name in _SWITCHABLE}
    try:
        for name in _SWITCHABLE:
            _C._set_sdp_enabled(name, name in wanted)
        yield
    finally:
        for name, on in before.items():
            _C._set_sdp_enabled(name, on)
