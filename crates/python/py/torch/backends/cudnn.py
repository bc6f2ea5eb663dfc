"""torch.backends.cudnn: the settings PyTorch programs set; torchlet keeps PyTorch's defaults' behaviour."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return True


def version():
    """The cuDNN version torchlet's SDPA figures were measured with (PyTorch 2.11's wheel)."""
    return 91900
