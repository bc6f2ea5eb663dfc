"""torch.linalg: vector_norm over a whole tensor (what gradient clipping takes)."""

import sys

_C = sys.modules["torch._C"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    if dim is not None or keepdim or dtype is not None or out is not None:
        raise NotImplementedError(
            "torchlet: torch.linalg.vector_norm supports the norm of the whole tensor only "
            "(no dim, keepdim, dtype or out)")
    return _C._vector_norm(x, float(ord))
