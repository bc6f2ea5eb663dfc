"""torch.utils.checkpoint: activation checkpointing, as PyTorch's non-reentrant checkpoint runs it.

While the function runs, what its ops save for backward is not kept; backward runs the function
again to remake it. torchlet runs the non-reentrant variant (use_reentrant=False, PyTorch's
recommended one); the RNG state PyTorch stashes with preserve_rng_state lives on the host, and
its determinism check records metadata only, so neither changes GPU memory.
"""
from .. import _C

__all__ = ["checkpoint"]


def noop_context_fn():
    return _NoopContexts()


class _NoopContexts:
    def __iter__(self):
        return iter((_Nothing(), _Nothing()))


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, preserve_rng_state=True, **kwargs):
    """`function(*args, **kwargs)` without keeping its activations: backward runs it again."""
    if use_reentrant is None:
        raise ValueError(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "torchlet runs use_reentrant=False (PyTorch's recommended mode): pass use_reentrant=False"
        )
    if use_reentrant:
        raise NotImplementedError(
            "torchlet: torch.utils.checkpoint with use_reentrant=True is not supported yet; "
            "pass use_reentrant=False (PyTorch's recommended mode)"
        )
    if context_fn is not noop_context_fn:
        raise NotImplementedError("torchlet: checkpoint(context_fn=...) is not supported yet")
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    return _C._checkpoint(lambda: function(*args, **kwargs))
