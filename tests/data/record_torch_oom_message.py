"""Records tests/data/torch-oom-message.txt: PyTorch's out-of-memory message for a 200 GiB request.

The request is the process's only CUDA work, so nothing is allocated or reserved when it fails
(tests/alloc/oom.rs rebuilds the same situation on a simulated H200 and compares the text).
Run on a machine with a CUDA GPU and PyTorch (recorded with PyTorch 2.11 on one H200):
    python3 tests/data/record_torch_oom_message.py > tests/data/torch-oom-message.txt
"""
import sys

import torch

try:
    torch.empty(200 * 1024**3 // 4, device="cuda")
except torch.OutOfMemoryError as e:
    sys.stdout.write(str(e))  # no trailing newline, as recorded
else:
    sys.exit("a 200 GiB allocation succeeded: this GPU is too large for the recorded message")
