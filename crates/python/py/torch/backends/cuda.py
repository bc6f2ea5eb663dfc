"""torch.backends.cuda: scaled_dot_product_attention's backend switches, and matmul's settings."""

import contextlib

import torch

_C = torch._C


class _Matmul:
    """`torch.backends.cuda.matmul`: precision settings, kept (they change no allocation)."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _Matmul()


def enable_flash_sdp(enabled):
    _C._set_sdp_enabled("FLASH_ATTENTION", bool(enabled))


def flash_sdp_enabled():
    return _C._sdp_enabled("FLASH_ATTENTION")


def enable_mem_efficient_sdp(enabled):
    _C._set_sdp_enabled("EFFICIENT_ATTENTION", bool(enabled))


def mem_efficient_sdp_enabled():
    return _C._sdp_enabled("EFFICIENT_ATTENTION")


def enable_math_sdp(enabled):
    _C._set_sdp_enabled("MATH", bool(enabled))


def math_sdp_enabled():
    return _C._sdp_enabled("MATH")


def enable_cudnn_sdp(enabled):
    _C._set_sdp_enabled("CUDNN_ATTENTION", bool(enabled))


def cudnn_sdp_enabled():
    return _C._sdp_enabled("CUDNN_ATTENTION")


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """The deprecated form of torch.nn.attention.sdpa_kernel: each backend on or off in the block."""
    names = ("FLASH_ATTENTION", "MATH", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
    wanted = (enable_flash, enable_math, enable_mem_efficient, enable_cudnn)
    before = {name: _C._sdp_enabled(name) for name in names}
    try:
        for name, on in zip(names, wanted):
            _C._set_sdp_enabled(name, bool(on))
        yield
    finally:
        for name, on in before.items():
            _C._set_sdp_enabled(name, on)
