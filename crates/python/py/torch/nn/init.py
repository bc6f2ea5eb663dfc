"""torch.nn.init: in-place initialisation, under no_grad, allocating nothing (as PyTorch's)."""

import math
import sys

import torch

_C = sys.modules["torch._C"]


def _fans(tensor):
    dims = tensor.dim()
    if dims < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for d in tensor.shape[2:]:
        receptive *= d
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def calculate_gain(nonlinearity, param=None):
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with torch.no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with torch.no_grad():
        return tensor.normal_(mean, std)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    # PyTorch's inverse-CDF draw, in place: uniform over the bounds' CDF values, erfinv, scale.
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    low, high = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
    with torch.no_grad():
        tensor.uniform_(2 * low - 1, 2 * high - 1)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor


def constant_(tensor, val):
    with torch.no_grad():
        return _C._fill_(tensor, val)


def zeros_(tensor):
    with torch.no_grad():
        return _C._zero_(tensor)


def ones_(tensor):
    with torch.no_grad():
        return _C._fill_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0)
