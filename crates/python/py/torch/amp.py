"""torch.amp / torch.autocast: mixed precision regions, as a context manager and a decorator."""

import functools
import sys

_C = sys.modules["torch._C"]


class autocast:
    """Ops inside run in float16 (CUDA) or bfloat16 (CPU) where PyTorch's autocast policy says."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=True):
        import torch

        self.device_type = device_type
        self.fast_dtype = dtype
        self._dtype = torch._dtype_name(dtype)
        self._enabled = enabled
        self._cache_enabled = cache_enabled

    def __enter__(self):
        _C._autocast_enter(self.device_type, self._dtype, self._enabled, self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc, tb):
        _C._autocast_exit()
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled, self._cache_enabled):
                return function(*args, **kwargs)

        return run


class GradScaler:
    """torch.amp.GradScaler: not offered yet; making one says so."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        raise NotImplementedError("torchlet: GradScaler is not supported yet")


def is_autocast_available(device_type):
    return device_type in ("cuda", "cpu")
