"""Ratios of torchlet's criterion results to PyTorch's, for RESULTS.md.

    python3 benches/compare_torch.py CRITERION_DIR GROUP TORCH.json

Reads each `CRITERION_DIR/GROUP/NAME/new/{estimates,benchmark}.json` (mean time, bytes moved) and
prints NAME, torchlet's figure, PyTorch's (from TORCH.json) and their ratio. TORCH.json keys a
throughput in GB/s as `NAME` (sweep_torch.py) or `NAME_GBps`, and a time as `NAME_ms`
(model_ops_torch.py); a time's ratio is torchlet's time over PyTorch's, so below 1.0 is faster.
"""
import json
import os
import sys


def mean_ns(root, group, name):
    """Criterion's mean time of `name` in ns, and its bytes a run (None without a throughput)."""
    d = os.path.join(root, group, name, "new")
    if not os.path.isdir(d):
        return None, None
    mean = json.load(open(os.path.join(d, "estimates.json")))["mean"]["point_estimate"]
    throughput = json.load(open(os.path.join(d, "benchmark.json"))).get("throughput") or {}
    return mean, throughput.get("Bytes")


def main():
    root, group, torch_path = sys.argv[1:4]
    torch = json.load(open(torch_path))
    print(f"{'workload':32} {'torchlet':>14} {'PyTorch':>13} {'ratio':>6}")
    for key, theirs in torch.items():
        if not isinstance(theirs, (int, float)):
            continue
        if key.endswith("_ms"):
            name = key[: -len("_ms")]
            ns, _ = mean_ns(root, group, name)
            if ns is not None:
                ours = ns / 1e6
                print(f"{name + ' (ms)':32} {ours:14.3f} {theirs:13.3f} {ours / theirs:6.2f}")
            continue
        name = key[: -len("_GBps")] if key.endswith("_GBps") else key
        ns, nbytes = mean_ns(root, group, name)
        if ns is not None and nbytes:
            ours = nbytes / ns
            print(f"{name + ' (GB/s)':32} {ours:14.1f} {theirs:13.1f} {ours / theirs:6.2f}")


if __name__ == "__main__":
    main()
