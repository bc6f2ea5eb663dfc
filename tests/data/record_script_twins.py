"""Record what PyTorch prints for the script twins (tests/data/script_twins/*.py) on a GPU.

    python3 tests/data/record_script_twins.py > tests/data/torch-scripts-h200.json

Each twin runs in a fresh process; its `after LABEL: allocated=A reserved=R peak=P` lines become
{"LABEL": {"allocated": A, "reserved": R, "peak": P}} under the script's name, with the GPU's name
and PyTorch's version, so tests/front_ends/scripts.rs can compare torchlet's lines with them.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import torch

LINE = re.compile(r"^after (.+): allocated=(\d+) reserved=(\d+) peak=(\d+)$")
TWINS = Path(__file__).resolve().parent / "script_twins"


def figures(twin):
    """The figures one twin prints, by label."""
    run = subprocess.run([sys.executable, str(twin)], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{twin.name} failed:\n{run.stdout}\n{run.stderr}")
    out = run.stdout
    found = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            label, *numbers = m.groups()
            found[label] = dict(zip(("allocated", "reserved", "peak"), map(int, numbers)))
    return found


def main():
    record = {
        "recorded_with": {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)},
        "scripts": {t.stem: figures(t) for t in sorted(TWINS.glob("[0-9]*.py"))},
    }
    json.dump(record, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
