"""torch.optim: SGD, Adam, AdamW, RMSprop and Adagrad with param_groups, each group stepped by torchlet's engine
as PyTorch's foreach implementation steps it (the default on CUDA); `lr_scheduler` changes the
groups' lr between steps."""

import sys

import torch

_C = sys.modules["torch._C"]


class Optimizer:
    """The base of torchlet's optimizers: param_groups, state, step and zero_grad."""

    _kind = None

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.param_groups = []
        self._native = []
        params = list(params)
        if len(params) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, torch.Tensor) else list(params)
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)
        self._native.append(_C._optimizer_new(self._kind, group["params"], self._options(group)))

    def _options(self, group):
        return {k: v for k, v in group.items() if k != "params"}

    @property
    def state(self):
        state = {}
        for group, native in zip(self.param_groups, self._native):
            for i, p in enumerate(group["params"]):
                entry = _C._optimizer_state(native, i)
                if entry:
                    state[p] = entry
        return state

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            for group, native in zip(self.param_groups, self._native):
                _C._optimizer_step(native, self._options(group))
        return loss

    def zero_grad(self, set_to_none=True):
        for native in self._native:
            _C._optimizer_zero_grad(native, set_to_none)

    def state_dict(self):
        """PyTorch's packed form: each parameter as its index over all groups, the state's own
        tensors (no copies), and each group's settings."""
        ids, groups = {}, []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                ids.setdefault(id(p), len(ids))
            packed["params"] = [ids[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {ids[id(p)]: dict(entry) for p, entry in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        raise NotImplementedError(
            "torchlet: optimizer.load_state_dict() is not supported yet; start the optimizer fresh "
            "(its state is made at its first step(), as PyTorch makes it)"
        )

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


class SGD(Optimizer):
    _kind = "SGD"

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)


class Adam(Optimizer):
    _kind = "Adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        foreach=foreach, maximize=maximize, capturable=capturable,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)


class AdamW(Optimizer):
    _kind = "AdamW"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        foreach=foreach, maximize=maximize, capturable=capturable,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)


class RMSprop(Optimizer):
    _kind = "RMSprop"

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)


class Adagrad(Optimizer):
    """Adagrad: its sums are made here, for every parameter, as PyTorch's __init__ makes them."""

    _kind = "Adagrad"

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)


from torch.optim import lr_scheduler  # noqa: E402  (PyTorch imports it here too)
