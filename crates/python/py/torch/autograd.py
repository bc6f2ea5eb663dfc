"""torch.autograd's grad modes: no_grad, enable_grad, inference_mode, set_grad_enabled.

Each is a context manager and a decorator, as in PyTorch; entering pushes the mode, leaving
restores what was there (also when the body raises).
"""

import functools
import sys

_C = sys.modules["torch._C"]


class _GradMode:
    """A grad mode usable as `with torch.no_grad():` and as `@torch.no_grad()`."""

    _mode = None

    def _args(self):
        return (self._mode,)

    def __enter__(self):
        _C._grad_enter(*self._args())
        return None

    def __exit__(self, exc_type, exc, tb):
        _C._grad_exit()
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            with self.__class__(*self._init_args()):
                return function(*args, **kwargs)

        return run

    def _init_args(self):
        return ()

    def clone(self):
        return self.__class__(*self._init_args())


class no_grad(_GradMode):
    """Ops inside record no graph: results have requires_grad=False and save nothing."""

    _mode = "no_grad"


class enable_grad(_GradMode):
    """Ops inside record graphs again, also within no_grad."""

    _mode = "enable_grad"


class inference_mode(_GradMode):
    """No graphs, and tensors made inside are inference tensors."""

    _mode = "inference_mode"

    def __init__(self, mode=True):
        self._on = mode

    def _args(self):
        return ("inference_mode",) if self._on else ("enable_grad",)

    def _init_args(self):
        return (self._on,)


class set_grad_enabled(_GradMode):
    """Grad on or off; as a function call it switches at once, as in PyTorch."""

    def __init__(self, mode):
        self._on = bool(mode)
        _C._grad_enter("set_enabled", self._on)

    def _args(self):
        return ("set_enabled", self._on)

    def __enter__(self):
        # The mode was switched by __init__, as PyTorch's set_grad_enabled does.
        return None

    def _init_args(self):
        return (self._on,)


def is_grad_enabled():
    return _C._is_grad_enabled()


def is_inference_mode_enabled():
    return _C._is_inference_mode_enabled()


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """One backward pass from every tensor of `tensors` at once, each from its gradient in
    `grad_tensors` (None: ones, for a one-element tensor), as PyTorch's engine runs them."""
    import torch

    if create_graph:
        raise NotImplementedError(
            "torchlet: torch.autograd.backward(create_graph=True) (a graph of the gradients, for a "
            "second derivative) is not supported yet"
        )
    tensors = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    elif isinstance(grad_tensors, torch.Tensor):
        grad_tensors = (grad_tensors,)
    else:
        grad_tensors = tuple(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grad_tensors)} gradients")
    if inputs is None:
        _C._backward_many(tensors, grad_tensors, bool(retain_graph))
    else:
        inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        _C._backward_to(tensors, grad_tensors, inputs, bool(retain_graph))
    torch._tensor._BACKWARD_PASSES[0] += 1


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, as a tuple: one pass that runs only
    the nodes leading to the inputs and leaves every `.grad` as it was (PyTorch's engine with
    `inputs`, Note [a pass with inputs] in torchlet's autograd)."""
    import torch

    if create_graph:
        raise NotImplementedError(
            "torchlet: torch.autograd.grad(create_graph=True) (a graph of the gradients, for a "
            "second derivative) is not supported yet; compute first derivatives only"
        )
    if is_grads_batched:
        raise NotImplementedError("torchlet: torch.autograd.grad(is_grads_batched=True) is not supported yet")
    outputs = (outputs,) if isinstance(outputs, torch.Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif isinstance(grad_outputs, torch.Tensor):
        grad_outputs = (grad_outputs,)
    else:
        grad_outputs = tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} and {len(outputs)}")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.")
    result = _C._autograd_grad(outputs, grad_outputs, inputs, bool(retain_graph), bool(allow_unused))
    if materialize_grads:
        result = tuple(torch.zeros_like(x) if g is None else g for g, x in zip(result, inputs))
    return result


class FunctionCtx:
    """The `ctx` of an autograd.Function: what forward keeps for backward."""

    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    def mark_non_differentiable(self, *tensors):
        raise NotImplementedError("torchlet: ctx.mark_non_differentiable is not supported yet")

    def mark_dirty(self, *tensors):
        raise NotImplementedError("torchlet: ctx.mark_dirty (an in-place autograd.Function) is not supported yet")


class Function:
    """torch.autograd.Function: `forward` runs without recording, and one node named
    `<Class>Backward` makes its outputs; backward calls the class's `backward(ctx, *grads)`.
    Outputs that are inputs come back as views of them, as PyTorch returns them."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        import torch

        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
        separate_setup = cls.setup_context is not Function.setup_context
        with no_grad():
            out = cls.forward(*args, **kwargs) if separate_setup else cls.forward(ctx, *args, **kwargs)
        if separate_setup:
            cls.setup_context(ctx, args, out)
        inputs = [(i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        if not is_grad_enabled() or not any(a.requires_grad for _, a in inputs):
            return out
        outs = out if isinstance(out, tuple) else (out,)
        tensor_outs = [i for i, o in enumerate(outs) if isinstance(o, torch.Tensor)]
        # Counts and shapes only: the node must not hold its inputs or outputs.
        specs = [(tuple(outs[i].shape), outs[i].dtype, outs[i].device) for i in tensor_outs]
        input_slots = [i for i, _ in inputs]
        out_count, arg_count = len(outs), len(args)

        def backward(grads):
            full = [None] * out_count
            for k, i in enumerate(tensor_outs):
                g = grads[k]
                if g is None and ctx.materialize_grads:
                    shape, dtype, device = specs[k]
                    g = torch.zeros(shape, dtype=dtype, device=device)
                full[i] = g
            result = cls.backward(ctx, *full)
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) < arg_count:
                raise RuntimeError(
                    f"function {cls.__name__}Backward returned an incorrect number of gradients "
                    f"(expected {arg_count}, got {len(result)})"
                )
            return [result[i] for i in input_slots]

        made = _C._function_apply(
            cls.__name__ + "Backward", backward, [a for _, a in inputs], [outs[i] for i in tensor_outs]
        )
        del inputs
        results = list(outs)
        for k, i in enumerate(tensor_outs):
            results[i] = made[k]
        return tuple(results) if isinstance(out, tuple) else results[0]


class _ExecutionEngine:
    """Variable._execution_engine: callbacks at the end of the running backward pass."""

    @staticmethod
    def queue_callback(callback):
        _C._queue_callback(callback)


class Variable:
    """torch.autograd.Variable, for `Variable._execution_engine.queue_callback`."""

    _execution_engine = _ExecutionEngine()


class _unsafe_preserve_version_counter:
    """Writes inside leave the tensors' version counters as they were: autograd does not see them
    (FSDP2 refills unsharded parameters that backward saved)."""

    def __init__(self, tensors):
        import torch

        self._tensors = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)

    def __enter__(self):
        self._versions = [_C._version(t) for t in self._tensors]

    def __exit__(self, *exc):
        for t, version in zip(self._tensors, self._versions):
            _C._set_version(t, version)
        return False
