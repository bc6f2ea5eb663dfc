"""torch.nn.functional: the model ops, with PyTorch's signatures."""

import sys

_C = sys.modules["torch._C"]


def linear(input, weight, bias=None):
    return _C._linear(input, weight, bias)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def silu(input, inplace=False):
    return input.silu()


def gelu(input, approximate="none"):
    return _C._unary("gelu", input, approximate)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return input.log_softmax(dim, dtype=dtype)


def dropout(input, p=0.5, training=True, inplace=False):
    if inplace:
        raise NotImplementedError("torchlet: dropout(inplace=True) is not supported yet")
    return _C._dropout(input, p, training)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _C._layer_norm(input, tuple(normalized_shape), weight, bias, eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if max_norm is not None or sparse:
        raise NotImplementedError("torchlet: embedding(max_norm=..., sparse=True) is not supported yet")
    return _C._embedding(input, weight)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    if weight is not None or reduction != "mean" or label_smoothing != 0.0:
        raise NotImplementedError(
            "torchlet: cross_entropy supports the defaults only (no weight, reduction='mean', no label smoothing)"
        )
    if ignore_index != -100 and _C._holds_int(target, ignore_index):
        # The allocations do not depend on ignore_index; the value would, so say so rather than
        # count the ignored targets.
        raise NotImplementedError(
            f"torchlet: cross_entropy with targets equal to ignore_index={ignore_index} is not supported yet"
        )
    return _C._cross_entropy(input, target)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if reduction != "mean":
        raise NotImplementedError("torchlet: mse_loss supports reduction='mean' only")
    return _C._mse_loss(input, target)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    return _C._sdpa(query, key, value, attn_mask, float(dropout_p), bool(is_causal),
                    None if scale is None else float(scale), bool(enable_gqa))
