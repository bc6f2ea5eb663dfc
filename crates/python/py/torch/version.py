"""torch.version: the PyTorch and CUDA whose memory behaviour torchlet reproduces."""

__version__ = "2.11.0+torchlet"
# PyTorch 2.11's CUDA 13.0 wheel, which every recorded figure in torchlet comes from.
cuda = "13.0"
hip = None
git_version = "torchlet"
