"""Records tests/data/torch_repr.json: how PyTorch prints each case below (tests/tensors/printing.rs compares).

Run on a machine with a CUDA GPU and PyTorch (recorded with PyTorch 2.11 on an H200):
    python3 tests/data/record_torch_repr.py > tests/data/torch_repr.json
"""
import json
import torch

cases = {
 "mixed_sign": torch.tensor([[1.0, -0.5]]),
 "int_valued_float": torch.tensor([1., 2., 3.]),
 "int64": torch.tensor([1, 2, 3]),
 "negative_ints": torch.tensor([-1, 10, 100]),
 "bool": torch.tensor([True, False]),
 "small_sci": torch.tensor([1e-5, 1.0]),
 "big_int_sci": torch.tensor([1e10, 1.0]),
 "ratio_sci": torch.tensor([123456.789, 0.5]),
 "zeros": torch.zeros(3),
 "with_zero": torch.tensor([1.5, 0.0]),
 "neg_zero": torch.tensor([-0.0, 1.25]),
 "scalar_float": torch.tensor(3.5),
 "scalar_int_float": torch.tensor(3.),
 "scalar_int": torch.tensor(2),
 "empty": torch.zeros(0),
 "empty_2d": torch.zeros(2, 0),
 "empty_int": torch.zeros(0, dtype=torch.int64),
 "float16": torch.tensor([0.1, 0.2], dtype=torch.float16),
 "bfloat16": torch.tensor([0.1, 0.2, 3.0], dtype=torch.bfloat16),
 "float64": torch.tensor([1.0, 2.5], dtype=torch.float64),
 "int32": torch.tensor([1, 2], dtype=torch.int32),
 "uint8": torch.tensor([1, 255], dtype=torch.uint8),
 "nonfinite": torch.tensor([float('nan'), float('inf'), -float('inf'), 1.5]),
 "nonfinite_int_mode": torch.tensor([float('nan'), 2.0]),
 "wrapped_line": torch.arange(30.) / 7,
 "three_d": torch.arange(24.).reshape(2, 3, 4),
 "summarized_1d": torch.arange(2000.),
 "summarized_int_2d": torch.arange(1200).reshape(40, 30),
 "summarized_float_2d": torch.arange(1100.).reshape(11, 100) / 3,
 "summarized_3d": torch.arange(2 * 600.).reshape(12, 10, 10),
 "linspace": torch.linspace(0, 1, 5),
 "eye_int": torch.eye(3, dtype=torch.int64),
}
out = {k: repr(v) for k, v in cases.items()}
x = torch.ones(2, requires_grad=True)
out["requires_grad"] = repr(x)
out["grad_fn"] = repr(x * 2)
out["sum_grad_fn"] = repr((x * 2).sum())
w = torch.tensor([[1.12345678] * 7], requires_grad=True)
out["suffix_wraps"] = repr(w.cuda() * 3)
out["cuda"] = repr(torch.tensor([1., 2.]).cuda())
out["cuda_half"] = repr(torch.tensor([1., 2.5]).cuda().half())
out["cuda_long_row"] = repr((torch.arange(12.) / 3).cuda())
out["cuda_empty"] = repr(torch.zeros(0, device="cuda"))
out["cuda1_like"] = repr(torch.tensor([1.0]).cuda().requires_grad_())
with torch.no_grad():
    out["no_grad_result"] = repr(x * 2)
# exact rounding cases Python decides
out["round_half"] = repr(torch.tensor([0.00005, 0.12345, 2.5], dtype=torch.float64))
print(json.dumps(out, indent=1))
