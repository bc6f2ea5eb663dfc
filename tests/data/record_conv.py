"""Record what convolutions, pooling and batch norm allocate on the GPU (run on the H200).

    python3 tests/data/record_conv.py OUT.json [OP,OP…]

For each case it runs forward then backward (with a gradient made beforehand) under PyTorch's defaults
(cudnn.benchmark=False, deterministic=False) and writes the allocator's trace entries of each phase as
[action, size]: the output, cuDNN's workspaces, the saved indices and statistics, the gradients. The
first convolution's cuDNN start-up is made before any case, so every case sees a warm library.
tests/data/torch_conv.json is its output, and tests/data/torch_conv3d.json that of the ops
`conv3d,conv_transpose3d`. With a list of ops (conv2d, max_pool2d, …) it records those only:
tests/tensors/conv.rs runs this file under torchlet for the ops torchlet has.
"""

import json
import sys

import torch
import torch.nn.functional as F

SKIPPED = ("free_requested", "snapshot")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
ONLY = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None


def wanted(op):
    return ONLY is None or op in ONLY


def trace_len():
    traces = torch.cuda.memory._snapshot()["device_traces"]
    return len(traces[0]) if traces else 0


def trace_since(start):
    traces = torch.cuda.memory._snapshot()["device_traces"]
    entries = traces[0][start:] if traces else []
    return [[e["action"], e["size"]] for e in entries if e["action"] not in SKIPPED]


def resnet_conv_shapes(n, size, bottleneck, layers):
    """The distinct convolutions of torchvision's ResNet on n images of size x size, as conv_cases lists them."""
    shapes = [(n, 3, size, size, 64, 7, 2, 3, 1)]
    hw, inplanes = size // 4, 64
    expansion = 4 if bottleneck else 1
    for stage, blocks in enumerate(layers):
        planes = 64 * 2**stage
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            out_hw = hw // stride
            if bottleneck:
                shapes += [(n, inplanes, hw, hw, planes, 1, 1, 0, 1), (n, planes, hw, hw, planes, 3, stride, 1, 1),
                           (n, planes, out_hw, out_hw, planes * 4, 1, 1, 0, 1)]
            else:
                shapes += [(n, inplanes, hw, hw, planes, 3, stride, 1, 1), (n, planes, out_hw, out_hw, planes, 3, 1, 1, 1)]
            if block == 0 and (stride != 1 or inplanes != planes * expansion):
                shapes.append((n, inplanes, hw, hw, planes * expansion, 1, stride, 0, 1))
            inplanes, hw = planes * expansion, out_hw
    return list(dict.fromkeys(shapes))


def zoo_conv_shapes():
    """The convolutions of the model zoo's parity programs and of its real-size runs (models/train.py)."""
    return (
        resnet_conv_shapes(4, 64, False, [2, 2, 2, 2])      # tests/parity/py_zoo_resnet.py: resnet18
        + resnet_conv_shapes(2, 64, True, [3, 4, 6, 3])     # and resnet50
        + resnet_conv_shapes(64, 224, True, [3, 4, 6, 3])   # models/train.py resnet50 batch=64
        + [(4, 3, 32, 32, 64, 8, 8, 0, 1)]                  # tests/parity/py_zoo_vit.py's patches
        + unet_conv_shapes()
    )


def unet_conv_shapes():
    """models/unet.py's convolutions: tests/parity/py_zoo_unet.py (batch 2) and train.py unet batch=128."""
    small = [(2, 3, 16, 16, 32, 3, 1, 1, 1), (2, 32, 16, 16, 32, 3, 1, 1, 1), (2, 32, 17, 17, 32, 3, 2, 0, 1),
             (2, 32, 8, 8, 64, 3, 1, 1, 1), (2, 64, 8, 8, 64, 3, 1, 1, 1), (2, 32, 8, 8, 64, 1, 1, 0, 1),
             (2, 64, 8, 8, 64, 1, 1, 0, 1), (2, 128, 8, 8, 64, 3, 1, 1, 1), (2, 128, 8, 8, 64, 1, 1, 0, 1),
             (2, 96, 8, 8, 64, 3, 1, 1, 1), (2, 96, 8, 8, 64, 1, 1, 0, 1), (2, 64, 16, 16, 64, 3, 1, 1, 1),
             (2, 96, 16, 16, 32, 3, 1, 1, 1), (2, 96, 16, 16, 32, 1, 1, 0, 1), (2, 64, 16, 16, 32, 3, 1, 1, 1),
             (2, 64, 16, 16, 32, 1, 1, 0, 1), (2, 32, 16, 16, 3, 3, 1, 1, 1)]
    real = [(128, 3, 32, 32, 128, 3, 1, 1, 1), (128, 128, 32, 32, 128, 3, 1, 1, 1),
            (128, 128, 33, 33, 128, 3, 2, 0, 1), (128, 128, 16, 16, 256, 3, 1, 1, 1),
            (128, 256, 16, 16, 256, 3, 1, 1, 1), (128, 128, 16, 16, 256, 1, 1, 0, 1),
            (128, 256, 16, 16, 256, 1, 1, 0, 1), (128, 256, 17, 17, 256, 3, 2, 0, 1),
            (128, 256, 8, 8, 256, 3, 1, 1, 1), (128, 256, 9, 9, 256, 3, 2, 0, 1), (128, 256, 4, 4, 256, 3, 1, 1, 1),
            (128, 256, 4, 4, 256, 1, 1, 0, 1), (128, 512, 4, 4, 256, 3, 1, 1, 1), (128, 512, 4, 4, 256, 1, 1, 0, 1),
            (128, 512, 8, 8, 256, 3, 1, 1, 1), (128, 512, 8, 8, 256, 1, 1, 0, 1), (128, 512, 16, 16, 256, 3, 1, 1, 1),
            (128, 512, 16, 16, 256, 1, 1, 0, 1), (128, 384, 16, 16, 256, 3, 1, 1, 1),
            (128, 384, 16, 16, 256, 1, 1, 0, 1), (128, 256, 32, 32, 256, 3, 1, 1, 1),
            (128, 384, 32, 32, 128, 3, 1, 1, 1), (128, 384, 32, 32, 128, 1, 1, 0, 1),
            (128, 256, 32, 32, 128, 3, 1, 1, 1), (128, 256, 32, 32, 128, 1, 1, 0, 1), (128, 128, 32, 32, 3, 3, 1, 1, 1)]
    return small + real


def conv_cases():
    out = []
    if not wanted("conv2d"):
        return out
    # (N, C, H, W, K, R, stride, padding, groups)
    shapes = [
        (64, 3, 224, 224, 64, 7, 2, 3, 1),
        (64, 64, 56, 56, 64, 1, 1, 0, 1),
        (64, 64, 56, 56, 64, 3, 1, 1, 1),
        (64, 64, 56, 56, 256, 1, 1, 0, 1),
        (64, 256, 56, 56, 128, 1, 1, 0, 1),
        (64, 128, 56, 56, 128, 3, 2, 1, 1),
        (64, 512, 28, 28, 256, 1, 1, 0, 1),
        (64, 256, 14, 14, 256, 3, 1, 1, 1),
        (64, 512, 7, 7, 512, 3, 1, 1, 1),
        (64, 3, 224, 224, 768, 16, 16, 0, 1),
        (8, 1, 28, 28, 32, 3, 1, 0, 1),
        (8, 32, 26, 26, 64, 3, 1, 0, 1),
        (16, 128, 32, 32, 128, 3, 1, 1, 32),
        (4, 64, 64, 64, 64, 3, 1, 1, 64),
        # pytorch/examples' MNIST network at its batch size (tests/parity/py_mnist_cnn.py)
        (64, 1, 28, 28, 32, 3, 1, 0, 1),
        (64, 32, 26, 26, 64, 3, 1, 0, 1),
        # the ResNet-style parity program (tests/parity/py_resnet_block.py)
        (8, 3, 64, 64, 16, 7, 2, 3, 1),
        (8, 16, 16, 16, 16, 3, 1, 1, 1),
        (8, 16, 16, 16, 32, 3, 2, 1, 1),
        (8, 32, 8, 8, 32, 3, 1, 1, 1),
        (8, 16, 16, 16, 32, 1, 2, 0, 1),
        # the UNet parity program (tests/parity/py_unet_block.py)
        (4, 6, 32, 32, 32, 3, 1, 1, 1),
        (4, 32, 32, 32, 32, 3, 1, 1, 1),
        (4, 32, 33, 33, 32, 3, 2, 0, 1),
        (4, 32, 16, 16, 32, 3, 1, 1, 1),
        (4, 64, 32, 32, 32, 3, 1, 1, 1),
        (4, 64, 32, 32, 32, 1, 1, 0, 1),
        (4, 32, 32, 32, 3, 3, 1, 1, 1),
    ]
    shapes += [z for z in zoo_conv_shapes() if z not in shapes]
    for dtype in DTYPES:
        for s in shapes:
            out.append(dict(op="conv2d", dtype=dtype, shape=s, channels_last=False))
        out.append(dict(op="conv2d", dtype=dtype, shape=shapes[2], channels_last=True))
    return out


def conv3d_cases():
    """3-d convolutions (`conv3d`) and transposed ones (`conv_transpose3d`): the parity programs',
    a 3-d UNet's and a video ResNet's (R3D-18 at 16 frames of 112x112), in each dtype."""
    # (N, C, D, H, W, K, kernel, stride, padding, dilation, groups); kernel etc. per axis or one int
    plain = [
        (2, 1, 32, 32, 32, 16, 3, 1, 1, 1, 1),  # tests/parity/py_conv3d.py
        (2, 16, 32, 32, 32, 32, 2, 2, 0, 1, 1),
        (2, 32, 32, 32, 32, 2, 1, 1, 0, 1, 1),
        (2, 3, 8, 56, 56, 64, (3, 7, 7), (1, 2, 2), (1, 3, 3), 1, 1),
        (1, 8, 12, 12, 12, 8, 3, 1, 2, 2, 2),
        (2, 4, 16, 32, 32, 16, 3, 1, 1, 1, 1),  # tests/parity/pending/py_conv_more.py
        (1, 1, 64, 64, 64, 32, 3, 1, 1, 1, 1),  # a 3-d UNet
        (1, 32, 64, 64, 64, 32, 3, 1, 1, 1, 1),
        (1, 32, 64, 64, 64, 64, 2, 2, 0, 1, 1),
        (1, 64, 32, 32, 32, 64, 3, 1, 1, 1, 1),
        (1, 64, 32, 32, 32, 128, 3, 1, 1, 1, 1),
        (1, 128, 16, 16, 16, 128, 3, 1, 1, 1, 1),
        (1, 128, 16, 16, 16, 256, 3, 1, 1, 1, 1),
        (8, 3, 16, 112, 112, 64, (3, 7, 7), (1, 2, 2), (1, 3, 3), 1, 1),  # R3D-18
        (8, 64, 16, 56, 56, 64, 3, 1, 1, 1, 1),
        (8, 64, 16, 56, 56, 128, 3, 2, 1, 1, 1),
        (8, 64, 16, 56, 56, 128, 1, 2, 0, 1, 1),
        (8, 128, 8, 28, 28, 128, 3, 1, 1, 1, 1),
        (8, 128, 8, 28, 28, 256, 3, 2, 1, 1, 1),
        (8, 256, 4, 14, 14, 256, 3, 1, 1, 1, 1),
    ]
    # (N, C, D, H, W, K, kernel, stride, padding, output_padding, groups): the weight is [C, K, ...]
    transposed = [
        (2, 32, 16, 16, 16, 16, 2, 2, 0, 0, 1),  # tests/parity/py_conv3d.py
        (1, 256, 8, 8, 8, 128, 2, 2, 0, 0, 1),  # a 3-d UNet's up-sampling
        (1, 128, 16, 16, 16, 64, 2, 2, 0, 0, 1),
        (1, 64, 16, 16, 16, 32, 3, 2, 1, 1, 1),
    ]
    out = []
    for dtype in DTYPES:
        if wanted("conv3d"):
            out += [dict(op="conv3d", dtype=dtype, shape=s) for s in plain]
        if wanted("conv_transpose3d"):
            out += [dict(op="conv_transpose3d", dtype=dtype, shape=s) for s in transposed]
    return out


def triple(v):
    return tuple(v) if isinstance(v, tuple) else (v, v, v)


def run_conv3d(c):
    dt = DTYPES[c["dtype"]]
    N, C, D, H, W, K, kernel, stride, pad, extra, groups = c["shape"]
    x = torch.randn(N, C, D, H, W, device="cuda", dtype=dt, requires_grad=True)
    if c["op"] == "conv3d":
        w = torch.randn(K, C // groups, *triple(kernel), device="cuda", dtype=dt, requires_grad=True)
        run = lambda b: F.conv3d(x, w, b, stride=stride, padding=pad, dilation=extra, groups=groups)
    else:
        w = torch.randn(C, K // groups, *triple(kernel), device="cuda", dtype=dt, requires_grad=True)
        run = lambda b: F.conv_transpose3d(x, w, b, stride=stride, padding=pad, output_padding=extra,
                                           groups=groups)
    b = torch.randn(K, device="cuda", dtype=dt, requires_grad=True)
    torch.cuda.synchronize()
    return forward_backward(c, lambda: run(b))


def forward_backward(case, fn):
    """The trace entries of `fn()` and of its backward (from a gradient made in between)."""
    rec = {"case": case}
    start = trace_len()
    y = fn()
    torch.cuda.synchronize()
    rec["forward"] = trace_since(start)
    rec["out"] = {"shape": list(y.shape), "stride": list(y.stride())}
    g = torch.randn_like(y)
    torch.cuda.synchronize()
    start = trace_len()
    y.backward(g)
    torch.cuda.synchronize()
    rec["backward"] = trace_since(start)
    return rec


def run_conv(c):
    dt = DTYPES[c["dtype"]]
    N, C, H, W, K, R, stride, pad, groups = c["shape"]
    x = torch.randn(N, C, H, W, device="cuda", dtype=dt, requires_grad=True)
    w = torch.randn(K, C // groups, R, R, device="cuda", dtype=dt, requires_grad=True)
    b = torch.randn(K, device="cuda", dtype=dt, requires_grad=True)
    if c["channels_last"]:
        x = x.detach().to(memory_format=torch.channels_last).requires_grad_()
        w = w.detach().to(memory_format=torch.channels_last).requires_grad_()
    torch.cuda.synchronize()
    return forward_backward(c, lambda: F.conv2d(x, w, b, stride=stride, padding=pad, groups=groups))


def run_other(name, fn, *shape_dtype):
    if not wanted(name):
        return None
    shape, dtype = shape_dtype
    x = torch.randn(*shape, device="cuda", dtype=DTYPES[dtype], requires_grad=True)
    torch.cuda.synchronize()
    return forward_backward({"op": name, "shape": list(shape), "dtype": dtype}, lambda: fn(x))


def other_cases():
    recs = []
    for dtype in DTYPES:
        shape = (64, 64, 112, 112)
        recs.append(run_other("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, 1), shape, dtype))
        recs.append(run_other("avg_pool2d", lambda x: F.avg_pool2d(x, 2), shape, dtype))
        recs.append(run_other("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, 1), (64, 2048, 7, 7), dtype))
        if wanted("batch_norm_train"):
            bn = torch.nn.BatchNorm2d(64).cuda().to(DTYPES[dtype] if dtype == "float32" else torch.float32)
            recs.append(run_other("batch_norm_train", lambda x: bn(x), (64, 64, 56, 56), dtype))
        if wanted("group_norm"):
            gn = torch.nn.GroupNorm(32, 128).cuda().to(DTYPES[dtype])
            recs.append(run_other("group_norm", lambda x: gn(x), (16, 128, 32, 32), dtype))
        recs.append(run_other("interpolate_nearest", lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), (8, 64, 32, 32), dtype))
        recs.append(run_other("interpolate_bilinear", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), (8, 64, 32, 32), dtype))
        recs.append(run_other("rms_norm", lambda x: F.rms_norm(x, (1024,)), (8, 512, 1024), dtype))
        if wanted("rms_norm_weight"):
            rn = torch.nn.RMSNorm(1024).cuda().to(DTYPES[dtype])
            recs.append(run_other("rms_norm_weight", lambda x: rn(x), (8, 512, 1024), dtype))
        recs.append(run_other("pad", lambda x: F.pad(x, (0, 1, 0, 1)), (8, 64, 32, 32), dtype))
    return recs


def main():
    torch.cuda.init()
    x = torch.randn(8, 64, 56, 56, device="cuda")
    w = torch.randn(64, 64, 3, 3, device="cuda")
    F.conv2d(x, w, padding=1)
    torch.cuda.synchronize()  # cuDNN loaded before recording
    del x, w
    torch.cuda.memory._record_memory_history(max_entries=2_000_000, context=None, stacks="python")
    records = []
    for c in conv_cases() + conv3d_cases():
        try:
            records.append(run_conv3d(c) if c["op"] != "conv2d" else run_conv(c))
        except Exception as e:
            records.append({"case": c, "error": f"{type(e).__name__}: {e}"})
        torch.cuda.empty_cache()
    for r in other_cases():
        if r is not None:
            records.append(r)
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(0)}
    with open(sys.argv[1], "w") as f:
        json.dump({"recorded_with": env, "records": records}, f)
    print(len(records), "cases")


if __name__ == "__main__":
    main()
