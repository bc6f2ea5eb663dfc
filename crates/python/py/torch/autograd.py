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


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
    for t in tensors:
        t.backward(retain_graph=retain_graph, create_graph=create_graph)
