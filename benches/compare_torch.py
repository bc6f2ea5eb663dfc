"""Ratios of torchlet's criterion results to PyTorch's, for RESULTS.md.

    python3 benches/compare_torch.py CRITERION_DIR GROUP TORCH.json

Reads each `CRITERION_DIR/GROUP/NAME/new/{estimates,benchmark}.json` (mean time, bytes moved) and
prints NAME, torchlet's GB/s, PyTorch's (from TORCH.json, keyed by NAME) and their ratio.
"""
import json
import os
import sys


def main():
    root, group, torch_path = sys.argv[1:4]
    torch = json.load(open(torch_path))
    print(f"{'workload':32} {'torchlet GB/s':>14} {'PyTorch GB/s':>13} {'ratio':>6}")
    for name in torch:
        d = os.path.join(root, group, name, "new")
        if not os.path.isdir(d):
            continue
        mean_ns = json.load(open(os.path.join(d, "estimates.json")))["mean"]["point_estimate"]
        nbytes = json.load(open(os.path.join(d, "benchmark.json")))["throughput"]["Bytes"]
        ours = nbytes / mean_ns
        print(f"{name:32} {ours:14.1f} {torch[name]:13.1f} {ours / torch[name]:6.2f}")


if __name__ == "__main__":
    main()
