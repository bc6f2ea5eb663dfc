"""Issue 17's table from one device call: torchlet's criterion results beside PyTorch's.

    python3 benches/gpu_table.py CRITERION_DIR OPS_TORCH.json MODEL_OPS_TORCH.json

Prints the Markdown table benches/RESULTS.md keeps: `x * 2` and `sum()` over 2^28 float32 and
`softmax(1)` over 4096² float32 in GB/s (ratio torchlet ÷ PyTorch, higher is better), then the
10×10 op, the MLP step and the transformer block step in time (ratio torchlet's time over
PyTorch's, lower is better). The JSON files are benches/ops_torch.py's and
benches/model_ops_torch.py's. A row whose bench did not run says so.
"""
import json
import sys

from compare_torch import mean_ns

# (label, criterion group, bench name, PyTorch key, unit)
ROWS = [
    ("`x * 2`, 2^28 float32", "gpu", "scale_2p28_f32", "scale_2p28_f32_GBps", "GB/s"),
    ("`sum()` of 2^28 float32", "gpu_model_ops", "sum_2p28_f32", "sum_2p28_f32_GBps", "GB/s"),
    ("`softmax(1)` of 4096×4096 float32", "gpu_model_ops", "softmax_4096x4096_f32",
     "softmax_4096x4096_f32_GBps", "GB/s"),
    ("10×10 `x * 2 + 1`, per op (time)", "gpu", "small_op_10x10_pair", "small_op_10x10_pair_ms", "µs/op"),
    ("MLP step of `scripts/05` (time)", "gpu_model_ops", "mlp_step", "mlp_step_ms", "ms"),
    ("transformer block training step (time)", "gpu_model_ops", "transformer_block_step",
     "transformer_block_step_ms", "ms"),
]


def row(root, torch, group, name, key, unit):
    """torchlet's figure, PyTorch's and the ratio, as the table prints them (None: not measured)."""
    ns, nbytes = mean_ns(root, group, name)
    if ns is None or key not in torch:
        return None
    theirs = torch[key]
    if unit == "GB/s":
        ours = nbytes / ns
        return f"{ours:.0f} GB/s", f"{theirs:.0f} GB/s", f"{ours / theirs:.2f}"
    ours_ms = ns / 1e6
    ratio = f"{ours_ms / theirs:.2f}× the time"
    if unit == "µs/op":  # the bench times a pair of ops
        return f"{ours_ms * 500:.2f} µs", f"{theirs * 500:.2f} µs", ratio
    return f"{ours_ms:.3f} ms", f"{theirs:.3f} ms", ratio


def main():
    root, ops_path, model_path = sys.argv[1:4]
    torch = {**json.load(open(ops_path)), **json.load(open(model_path))}
    print("| workload | torchlet | PyTorch | ratio |")
    print("|---|---|---|---|")
    for label, group, name, key, unit in ROWS:
        cells = row(root, torch, group, name, key, unit) or ("not measured",) * 3
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
