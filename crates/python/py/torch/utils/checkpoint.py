"""torch.utils.checkpoint: activation checkpointing, both of PyTorch's variants.

Non-reentrant (`use_reentrant=False`, PyTorch's recommended one): while the function runs, what its
ops save for backward is not kept; backward runs the function again to remake it, stopping early
once everything needed is back. Reentrant (`use_reentrant=True`): PyTorch's `CheckpointFunction`,
an autograd.Function that runs the function under no_grad and keeps only its tensor inputs; its
backward runs the whole function again with grad on and a backward pass of its own inside the
outer one. Both replay the RNG state of the forward (`preserve_rng_state`), so dropout draws the
same mask again; the state lives on the host, as PyTorch's does, and takes no GPU memory.
"""
import functools
import warnings

import torch

from .. import _C

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction"]


_NO_USE_REENTRANT = (
    "torch.utils.{where}: the use_reentrant parameter should be passed explicitly. Starting in "
    "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
    "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
    "the two variants."
)


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


def checkpoint(function=None, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, preserve_rng_state=True,
               early_stop=True, **kwargs):
    """`function(*args, **kwargs)` without keeping its activations: backward runs it again."""
    if function is None and not args:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        return functools.partial(
            _Checkpointed, use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state,
            context_fn=context_fn, determinism_check=determinism_check, debug=debug,
        )
    if use_reentrant is None:
        # PyTorch 2.11 warns and runs the reentrant variant (its message says 2.9 would refuse).
        warnings.warn(_NO_USE_REENTRANT.format(where="checkpoint"), stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if context_fn is not noop_context_fn:
        raise NotImplementedError("torchlet: checkpoint(context_fn=...) is not supported yet")
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    return _C._checkpoint(_replaying(lambda: function(*args, **kwargs), preserve_rng_state))


class _Checkpointed:
    """`checkpoint(use_reentrant=…)(function)`: the function, checkpointed at every call."""

    def __init__(self, function, **checkpoint_kwargs):
        self.function = function
        self.checkpoint_kwargs = checkpoint_kwargs

    def __call__(self, *args, **kwargs):
        return checkpoint(self.function, *args, **self.checkpoint_kwargs, **kwargs)


def _replaying(run, preserve_rng_state):
    """`run` whose later calls (backward's recomputations) draw what the first call drew."""
    if not preserve_rng_state:
        return run
    state = torch.random.get_rng_state()
    calls = [0]

    def call():
        calls[0] += 1
        if calls[0] == 1:
            return run()
        with torch.random.fork_rng():
            torch.random.set_rng_state(state)
            return run()

    return call


def _check_backward_validity(inputs):
    if not any(isinstance(inp, torch.Tensor) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")


def _detach_variable(inputs):
    out = []
    for inp in inputs:
        if not isinstance(inp, torch.Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


class CheckpointFunction(torch.autograd.Function):
    """PyTorch's reentrant checkpoint, statement for statement, so that what it holds and when it
    lets go is what PyTorch's holds: the tensor inputs (saved), then in backward the recomputed
    graph, the inner pass's gradients of the detached inputs, and the recomputed outputs until
    backward returns."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        _check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.autocast = _autocast_state()
        if preserve_rng_state:
            ctx.fwd_rng_state = torch.random.get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, torch.Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with torch.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        inputs = list(ctx.inputs)
        tensor_indices = ctx.tensor_indices
        tensors = ctx.saved_tensors
        for i, idx in enumerate(tensor_indices):
            inputs[idx] = tensors[i]
        with torch.random.fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                torch.random.set_rng_state(ctx.fwd_rng_state)
            detached_inputs = _detach_variable(tuple(inputs))
            with torch.enable_grad(), _autocast_as(ctx.autocast):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], torch.Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        torch.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, torch.Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


def _autocast_state():
    """Whether CUDA autocast is on and in which dtype, for the recomputation to run the same."""
    enabled = torch.is_autocast_enabled("cuda")
    return (enabled, torch.get_autocast_dtype("cuda") if enabled else None)


def _autocast_as(state):
    enabled, dtype = state
    return torch.autocast("cuda", dtype=dtype, enabled=enabled)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint `segments - 1` equal runs of a sequential model's modules; the last runs as is."""
    if use_reentrant is None:
        warnings.warn(_NO_USE_REENTRANT.format(where="checkpoint_sequential"), stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if isinstance(functions, torch.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(use_reentrant=use_reentrant, preserve_rng_state=preserve)(
            run_function(start, end, functions)
        )(input)
    return run_function(end + 1, len(functions) - 1, functions)(input)
