"""PyTorch's side of benches/gpu.rs's `gpu` group, on the same GPU in the same run.

    python3 benches/ops_torch.py [OUT.json]

`x * 2` over 2^28 float32 (GB/s read and written), sgemm 4096³ float32 without TF32 (ms), and a
pair of ops on a 10×10 float32 tensor (`x * 2 + 1`, ms a pair: the per-op overhead). Names match
the bench's, so benches/compare_torch.py pairs them.
"""
import json
import sys

import torch

from model_ops_torch import bench as seconds  # mean seconds of one call over k, after a warm-up


def main():
    res = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    x = torch.randn(1 << 28, device="cuda")
    res["scale_2p28_f32_GBps"] = 8 * (1 << 28) / seconds(lambda: x * 2, 50) / 1e9
    del x
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    res["sgemm_4096_ms"] = seconds(lambda: a @ b, 20) * 1e3
    del a, b
    small = torch.randn(10, 10, device="cuda")
    res["small_op_10x10_pair_ms"] = seconds(lambda: small * 2 + 1, 20000) * 1e3
    print(json.dumps(res, indent=1))
    if len(sys.argv) > 1:
        json.dump(res, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
