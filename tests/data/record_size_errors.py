"""PyTorch's errors for shapes whose sizes overflow int64, as JSON: [{"case", "device", "error"}].

Each case is a torchlet expression (the key the test uses) and the same call in PyTorch.
Run from the repository root: python3 tests/data/record_size_errors.py > tests/data/torch_size_errors.json
"""

import json

import torch

CASES = [
    ('empty([1 << 62, 4], #{device: "DEV"})', lambda d: torch.empty([1 << 62, 4], device=d)),
    ('zeros([1 << 40, 1 << 40], #{device: "DEV"})', lambda d: torch.zeros([1 << 40, 1 << 40], device=d)),
    ('empty([0, 1 << 62, 1 << 62], #{device: "DEV"})', lambda d: torch.empty([0, 1 << 62, 1 << 62], device=d)),
    ('ones(4, #{device: "DEV"}).reshape([1 << 62, 1 << 62, -1])', lambda d: torch.ones(4, device=d).reshape([1 << 62, 1 << 62, -1])),
    ('ones(2, #{device: "DEV"}).reshape([1 << 32, 1 << 32])', lambda d: torch.ones(2, device=d).reshape([1 << 32, 1 << 32])),
]


def main():
    out = []
    for case, make in CASES:
        for device in ("cpu", "cuda"):
            try:
                t = make(device)
                error = f"no error: shape {list(t.shape)}"
            except Exception as e:  # noqa: BLE001 - the message is what is recorded
                error = f"{type(e).__name__}: {str(e).splitlines()[0]}"
            out.append({"case": case, "device": device, "error": error})
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "cases": out}, indent=1))


main()
