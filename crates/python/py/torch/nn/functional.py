"""torch.nn.functional: the model ops, with PyTorch's signatures."""

import sys
import warnings

_C = sys.modules["torch._C"]


def linear(input, weight, bias=None):
    return _C._linear(input, weight, bias)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def silu(input, inplace=False):
    _out_of_place("silu", inplace)
    return input.silu()


def gelu(input, approximate="none"):
    return _C._unary("gelu", input, approximate)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _out_of_place("leaky_relu", inplace)
    return _C._activation("leaky_relu", input, float(negative_slope), 0.0)


def elu(input, alpha=1.0, inplace=False):
    _out_of_place("elu", inplace)
    return _C._activation("elu", input, float(alpha), 0.0)


def softplus(input, beta=1.0, threshold=20.0):
    return _C._activation("softplus", input, float(beta), float(threshold))


def mish(input, inplace=False):
    _out_of_place("mish", inplace)
    return _C._activation("mish", input, 0.0, 0.0)


def hardswish(input, inplace=False):
    _out_of_place("hardswish", inplace)
    return _C._activation("hardswish", input, 0.0, 0.0)


def _out_of_place(name, inplace):
    if inplace:
        raise NotImplementedError(f"torchlet: {name}(inplace=True) is not supported yet; leave inplace=False")


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


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    input, weight, bias = _autocast_fp32(input, weight, bias)
    return _C._group_norm(input, num_groups, weight, bias, eps)


def _autocast_fp32(*tensors):
    """PyTorch's autocast `fp32` policy, for the ops on its CUDA list (AT_FORALL_FP32 in
    aten/src/ATen/autocast_mode.h) that torchlet's engine list (crates/core/src/tensor/autocast.rs)
    lacks: group_norm, upsample_nearest2d, upsample_bilinear2d. Under CUDA autocast each float16 or
    bfloat16 CUDA tensor becomes a float32 copy (a plain `to`, ToCopyBackward0 in the graph; only casts
    to the low dtype are cached), made last to first as C++ evaluates the wrapper's `cached_cast`
    arguments; the rest pass as they are. The op itself is on no engine list, so nothing casts again."""
    torch = sys.modules["torch"]
    if not _C._is_autocast_enabled("cuda"):
        return tensors
    low = (torch.float16, torch.bfloat16)
    cast = [t if t is None or not t.is_cuda or t.dtype not in low else _C._to(t, None, "float32")
            for t in reversed(tensors)]
    return tuple(reversed(cast))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _C._rms_norm(input, tuple(normalized_shape), weight, eps)


def pad(input, pad, mode="constant", value=None):
    if mode != "constant":
        raise NotImplementedError(f"torchlet: F.pad with mode={mode!r} is not supported yet (only 'constant')")
    return _C._constant_pad(input, [int(p) for p in pad], 0.0 if value is None else float(value))


_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """F.interpolate as PyTorch resolves size and scale_factor; 4-D nearest and bilinear run."""
    if mode in _INTERPOLATING:
        align_corners = False if align_corners is None else align_corners
    elif align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please provide "
                    "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            output_size = [int(s) for s in size]
        else:
            output_size = [int(size) for _ in range(dim)]
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {scale_factor}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                    "(s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor) for _ in range(dim)]
        output_size = [int(input.shape[i + 2] * scale_factors[i]) for i in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor:
        scale_factors = None
    if antialias:
        raise NotImplementedError("torchlet: F.interpolate(antialias=True) is not supported yet")
    if input.dim() != 4 or mode not in ("nearest", "bilinear"):
        raise NotImplementedError(
            f"torchlet: F.interpolate supports 4-D input in 'nearest' and 'bilinear' modes; got "
            f"{input.dim()}-D input with mode={mode!r}")
    (input,) = _autocast_fp32(input)
    return _C._upsample2d(input, tuple(output_size), None if scale_factors is None else tuple(scale_factors),
                          mode, bool(align_corners))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if max_norm is not None or sparse:
        raise NotImplementedError("torchlet: embedding(max_norm=..., sparse=True) is not supported yet")
    return _C._embedding(input, weight)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    if weight is not None:
        raise NotImplementedError("torchlet: cross_entropy(weight=...) is not supported yet")
    return _C._cross_entropy(input, target, int(ignore_index), _reduction(size_average, reduce, reduction),
                             float(label_smoothing))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """PyTorch's normalize: input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)."""
    if out is not None:
        raise NotImplementedError("torchlet: F.normalize(..., out=...) is not supported yet")
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom


def one_hot(tensor, num_classes=-1):
    """PyTorch's one_hot: int64 zeros with a trailing dim of num_classes, 1 scattered at each index
    (the largest index plus one when num_classes is -1, read from the tensor)."""
    torch = sys.modules["torch"]
    if tensor.dtype is not torch.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1
    ret = torch.zeros(*tensor.shape, num_classes, dtype=torch.int64, device=tensor.device)
    return ret.scatter_(-1, tensor.unsqueeze(-1), 1)


def _reduction(size_average, reduce, reduction):
    """The reduction the legacy size_average/reduce flags ask for, as PyTorch's _Reduction reads them."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _same_size(name, input, target):
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
            "This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None:
        raise NotImplementedError("torchlet: mse_loss(weight=...) is not supported yet")
    _same_size("mse_loss", input, target)
    return _C._mse_loss(input, target, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None:
        raise NotImplementedError("torchlet: l1_loss(weight=...) is not supported yet")
    _same_size("l1_loss", input, target)
    return _C._l1_loss(input, target, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _same_size("smooth_l1_loss", input, target)
    return _C._smooth_l1_loss(input, target, _reduction(size_average, reduce, reduction), float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if weight is not None:
        raise NotImplementedError("torchlet: huber_loss(weight=...) is not supported yet")
    _same_size("huber_loss", input, target)
    return _C._huber_loss(input, target, reduction, float(delta))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
            "is deprecated. Please ensure they have the same size.")
    if weight is not None and weight.shape != input.shape:
        weight = weight.expand(input.shape)
    return _C._binary_cross_entropy(input, target, weight, _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    return _C._binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                               _reduction(size_average, reduce, reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size."
            "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
            "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    enum = "sum" if reduction == "batchmean" else reduction
    reduced = _C._kl_div(input, target, enum, bool(log_target))
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    return _C._sdpa(query, key, value, attn_mask, float(dropout_p), bool(is_causal),
                    None if scale is None else float(scale), bool(enable_gqa))


def _ntuple(v, name, n):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) == 1:
        return (v[0],) * n
    if len(v) != n or not all(isinstance(i, int) for i in v):
        raise TypeError(f"{name} must be an int or a tuple of {('two', 'three')[n - 2]} ints, got {v!r}")
    return v


def _pair(v, name):
    return _ntuple(v, name, 2)


def _triple(v, name):
    return _ntuple(v, name, 3)


def _conv_padding(padding, weight, dilation, dims):
    """PyTorch's padding strings: 'valid' is none, 'same' keeps the size (symmetric only)."""
    if not isinstance(padding, str):
        return padding
    if padding == "valid":
        return 0
    if padding != "same":
        raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
    kernel = weight.shape[-dims:]
    dil = (dilation,) * dims if isinstance(dilation, int) else tuple(dilation)
    total = [d * (k - 1) for d, k in zip(dil, kernel)]
    if any(t % 2 for t in total):
        raise NotImplementedError(
            "torchlet: padding='same' with an even effective kernel size pads unevenly; "
            "pad the input with F.pad and use padding=0")
    return tuple(t // 2 for t in total) if dims > 1 else total[0] // 2


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    padding = _conv_padding(padding, weight, dilation, 2)
    return _C._conv2d(input, weight, bias, _pair(stride, "stride"), _pair(padding, "padding"),
                      _pair(dilation, "dilation"), int(groups))


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    padding = _conv_padding(padding, weight, dilation, 3)
    return _C._conv3d(input, weight, bias, _triple(stride, "stride"), _triple(padding, "padding"),
                      _triple(dilation, "dilation"), int(groups))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    padding = _conv_padding(padding, weight, dilation, 1)
    one = lambda v: v if isinstance(v, int) else tuple(v)[0]
    return _C._conv1d(input, weight, bias, one(stride), one(padding), one(dilation), int(groups))


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _C._conv_transpose2d(input, weight, bias, _pair(stride, "stride"), _pair(padding, "padding"),
                                _pair(output_padding, "output_padding"), int(groups), _pair(dilation, "dilation"))


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    one = lambda v: v[0] if isinstance(v, (tuple, list)) else v  # noqa: E731
    return _C._conv_transpose1d(input, weight, bias, one(stride), one(padding), one(output_padding), int(groups),
                                one(dilation))


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _C._conv_transpose3d(input, weight, bias, _triple(stride, "stride"), _triple(padding, "padding"),
                                _triple(output_padding, "output_padding"), int(groups),
                                _triple(dilation, "dilation"))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return _C._im2col(input, _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation"),
                      _pair(padding, "padding"), _pair(stride, "stride"))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _C._col2im(input, _pair(output_size, "output_size"), _pair(kernel_size, "kernel_size"),
                      _pair(dilation, "dilation"), _pair(padding, "padding"), _pair(stride, "stride"))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == () or stride == [] else _pair(stride, "stride")
    return _C._max_pool2d(input, kernel, stride, _pair(padding, "padding"), _pair(dilation, "dilation"),
                          bool(ceil_mode), bool(return_indices))


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == () or stride == [] else _pair(stride, "stride")
    return _C._avg_pool2d(input, kernel, stride, _pair(padding, "padding"), bool(ceil_mode),
                          bool(count_include_pad), divisor_override)


def adaptive_avg_pool2d(input, output_size):
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    # None keeps the input's size along that axis, as PyTorch's does.
    size = tuple(g if s is None else s for s, g in zip(size, input.shape[-2:]))
    return _C._adaptive_avg_pool2d(input, _pair(size, "output_size"))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    return _C._batch_norm(input, running_mean, running_var, weight, bias, bool(training),
                          0.0 if momentum is None else float(momentum), float(eps))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    if weight is not None:
        raise NotImplementedError("torchlet: nll_loss(weight=...) is not supported yet")
    return _C._nll_loss(input, target, int(ignore_index), _reduction(size_average, reduce, reduction))


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask as the float one it stands for (-inf where True); a float mask as it is."""
    if mask is None:
        return None
    import torch

    if mask.dtype == torch.bool:
        return torch.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    return mask


def _in_projection_packed(q, k, v, w, b=None):
    """Project q, k and v with the packed [3E, E] weight, as PyTorch 2.11 does: self-attention
    makes one product and one contiguous [3, …] copy of it."""
    import torch

    E = q.size(-1)
    if k is v and q is k:
        proj = linear(q, w, b)
        proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return proj[0], proj[1], proj[2]
    if k is v:
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = linear(q, w_q, b_q)
        kv_proj = linear(k, w_kv, b_kv)
        kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return q_proj, kv_proj[0], kv_proj[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """nn.MultiheadAttention's computation, op for op as PyTorch 2.11 runs it: with weights, the
    explicit bmm, softmax and bmm; without, scaled_dot_product_attention."""
    import math

    import torch

    unsupported = [name for name, given in [
        ("bias_k/bias_v", bias_k is not None or bias_v is not None),
        ("add_zero_attn", add_zero_attn), ("use_separate_proj_weight", use_separate_proj_weight),
        ("static_k/static_v", static_k is not None or static_v is not None),
        ("key_padding_mask", key_padding_mask is not None)] if given]
    if unsupported:
        raise NotImplementedError(
            f"torchlet: multi_head_attention_forward with {', '.join(unsupported)} is not "
            "supported yet; leave it out")
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
    q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None and attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should "
                               f"be {(tgt_len, src_len)}.")
        attn_mask = attn_mask.unsqueeze(0)
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if not training:
        dropout_p = 0.0
    if need_weights:
        _, _, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        if attn_mask is not None:
            raise NotImplementedError(
                "torchlet: nn.MultiheadAttention with an attn_mask and need_weights=True (a "
                "baddbmm) is not supported yet; pass need_weights=False")
        weights = torch.bmm(q_scaled, k.transpose(-2, -1))
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        attn_output = torch.bmm(weights, v)
        attn_output = attn_output.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            attn_output = attn_output.squeeze(1)
            weights = weights.squeeze(0)
        return attn_output, weights
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    attn_output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    attn_output = attn_output.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
    attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
    attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
    if not is_batched:
        attn_output = attn_output.squeeze(1)
    return attn_output, None
