"""torch.nn: Module, Parameter and the layers, with functional and init."""

from torch.nn import functional  # noqa: F401
from torch.nn import init  # noqa: F401
from torch.nn.modules import (  # noqa: F401
    GELU,
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    MaxPool2d,
    NLLLoss,
    Buffer,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    Linear,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    Parameter,
    ParameterList,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)


class utils:
    """torch.nn.utils: clip_grad_norm_ is not offered yet."""

    @staticmethod
    def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
        raise NotImplementedError("torchlet: torch.nn.utils.clip_grad_norm_ is not supported yet")
