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
    Mish,
    NLLLoss,
    Buffer,
    CrossEntropyLoss,
    Dropout,
    ELU,
    Embedding,
    Flatten,
    GroupNorm,
    Hardswish,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    Module,
    ModuleDict,
    ModuleList,
    MultiheadAttention,
    MSELoss,
    Parameter,
    ParameterList,
    ReLU,
    RMSNorm,
    Sequential,
    Upsample,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)

from torch.nn import utils  # noqa: E402,F401
from torch.nn import parallel  # noqa: E402,F401
