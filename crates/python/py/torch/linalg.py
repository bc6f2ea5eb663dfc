"""torch.linalg: vector_norm, over a whole tensor (what gradient clipping takes) or over dims."""

import sys

_C = sys.modules["torch._C"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    if dtype is not None or out is not None:
        raise NotImplementedError("torchlet: torch.linalg.vector_norm(..., dtype=..., out=...) is not supported yet")
    if dim is None and not keepdim and not x.requires_grad:
        return _C._vector_norm(x, float(ord))
    dims = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    return _C._norm_over(x, float(ord), dims, keepdim)
