"""torch.nn.utils: gradient clipping as PyTorch 2.11 writes it (the foreach norms on the GPU)."""

import types
import warnings

import torch

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _group_by_device_and_dtype(tensors):
    """{(device, dtype): [tensor, ...]} in first-seen order, as _group_tensors_by_device_and_dtype."""
    groups = {}
    for t in tensors:
        groups.setdefault((str(t.device), t.dtype), []).append(t)
    return groups


def _has_foreach_support(tensors, device):
    return device.startswith("cuda") and all(t is None or type(t) is torch.Tensor or isinstance(t, torch.Tensor)
                                             for t in tensors)


@torch.no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    if isinstance(tensors, torch.Tensor):
        tensors = [tensors]
    else:
        tensors = list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return torch.tensor(0.0)
    first_device = tensors[0].device
    grouped_tensors = _group_by_device_and_dtype(tensors)
    norms = []
    for (device, _), device_tensors in grouped_tensors.items():
        if (foreach is None and _has_foreach_support(device_tensors, device)) or foreach:
            norms.extend(torch._foreach_norm(device_tensors, norm_type))
        else:
            norms.extend([torch.linalg.vector_norm(g, norm_type) for g in device_tensors])
    total_norm = torch.linalg.vector_norm(torch.stack([norm.to(first_device) for norm in norms]), norm_type)
    if error_if_nonfinite and (total_norm.isnan().item() or total_norm.isinf().item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot "
            "be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`")
    return total_norm


@torch.no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    grouped_grads = _group_by_device_and_dtype(grads)
    clip_coef = max_norm / (total_norm + 1e-6)
    clip_coef_clamped = torch.clamp(clip_coef, max=1.0)
    for (device, _), device_grads in grouped_grads.items():
        torch._foreach_mul_(device_grads, clip_coef_clamped.to(device))


@torch.no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@torch.no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    for g in grads:
        g.clamp_(min=-clip_value, max=clip_value)
