"""Record the model zoo's peaks at real sizes under PyTorch (run on the GPU machine): one fresh process per run.

    python3 tests/data/record_zoo_peaks.py OUT.jsonl

Each run is `models/train.py MODEL SETTINGS` with the real libraries (torchvision, transformers, peft); its
last line (the peaks as JSON) is one line of OUT.jsonl. tests/data/zoo_peaks.jsonl is its output, and
`torchlet fit models/train.py MODEL SETTINGS` must give the same peaks (tests/memory/zoo.rs).
"""

import json
import subprocess
import sys
from pathlib import Path

TRAIN = Path(__file__).resolve().parents[2] / "models" / "train.py"
RUNS = [
    ["resnet50", "batch=64", "precision=float32"],
    ["resnet50", "batch=64", "precision=autocast"],
    ["vit_b_16", "batch=64", "precision=float32"],
    ["gpt2", "batch=8", "seq=1024"],
    ["llama3-8b-lora", "batch=1", "seq=2048", "ckpt=0"],
    ["llama3-8b-lora", "batch=1", "seq=2048", "ckpt=1"],
    ["unet", "batch=128", "precision=float32"],  # models/unet.py under PyTorch too: no library has it
    ["unet", "batch=128", "precision=autocast"],
]


def main():
    out = open(sys.argv[1], "w")
    for run in RUNS:
        done = subprocess.run([sys.executable, str(TRAIN), *run], capture_output=True, text=True, timeout=300)
        last = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
        if done.returncode != 0 or not last:
            print("FAILED", run, done.stderr[-2000:], flush=True)
            continue
        record = json.loads(last[0])
        out.write(json.dumps(record) + "\n")
        out.flush()
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
