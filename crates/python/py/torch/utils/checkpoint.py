"""torch.utils.checkpoint: activation checkpointing is not offered in torchlet's Python yet."""


def checkpoint(function, *args, use_reentrant=None, **kwargs):
    raise NotImplementedError(
        "torchlet: torch.utils.checkpoint.checkpoint is not supported in Python programs yet "
        "(the Rhai language has checkpoint(f, args…))"
    )
