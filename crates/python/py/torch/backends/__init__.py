"""torch.backends: the switches of the CUDA and cuDNN backends that decide kernels (and so memory)."""

from torch.backends import cuda, cudnn  # noqa: F401
