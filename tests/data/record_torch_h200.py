"""Records tests/data/torch-h200.json: PyTorch's memory figures for the article's four methods.

tests/front_ends/scripts.rs and tests/jupyter/test_notebook.py compare torchlet's output with the four
`article_method_*` sections and `autograd_saved_tensors`; `performance` is for reading only.
Run on a machine with a CUDA GPU and PyTorch (recorded with PyTorch 2.11 on one H200):
    python3 tests/data/record_torch_h200.py > tests/data/torch-h200.json
"""
import json
import time

t_import = time.perf_counter()
import torch  # noqa: E402  (timed on purpose)

t_import = time.perf_counter() - t_import


def figures():
    """allocated and reserved bytes once the GPU has finished."""
    torch.cuda.synchronize()
    return {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved()}


def clean():
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() == 0, "every method starts from an empty cache"


def method_1_del():
    steps = {}
    x = torch.randn(1000, 1000).cuda()
    steps["x = randn(1000,1000).cuda()"] = figures()
    x = x.cpu()
    steps["x = x.cpu()"] = figures()
    del x
    steps["del x"] = figures()
    torch.cuda.empty_cache()
    steps["empty_cache()"] = figures()
    return steps


def method_2_empty_cache_while_x_alive():
    steps = {}
    x = torch.randn(1000, 1000).cuda()
    steps["x = randn(1000,1000).cuda()"] = figures()
    torch.cuda.empty_cache()
    steps["empty_cache()"] = figures()
    del x
    return steps


def method_3_no_grad():
    x = torch.randn(1000, 1000).cuda()
    with torch.no_grad():
        y = x + 1
    return {
        "x = randn(1000,1000).cuda(); no_grad { y = x + 1 }": figures(),
        "y.requires_grad": y.requires_grad,
    }


def method_4_del_and_empty_cache():
    steps = {}
    x = torch.randn(1000, 1000).cuda()
    temp = x * 2
    steps["x = randn(1000,1000).cuda(); temp = x * 2"] = figures()
    del temp
    steps["del temp"] = figures()
    torch.cuda.empty_cache()
    steps["empty_cache()"] = figures()
    del x
    return steps


def saved_tensors():
    """Extra bytes a graph keeps alive while its result lives, with and without grad mode."""
    w = torch.randn(1000, 1000, device="cuda", requires_grad=True)
    base = torch.cuda.memory_allocated()
    h = (w * 2).exp().relu().sum()
    with_grad = torch.cuda.memory_allocated() - base
    del h
    with torch.no_grad():
        h = (w * 2).exp().relu().sum()
    without = torch.cuda.memory_allocated() - base
    return {
        "w requires_grad on cuda, h = (w*2).exp().relu().sum(): extra allocated bytes while h lives": with_grad,
        "same under no_grad": without,
    }


def seconds_per_call(fn, k):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / k


def empty_del_us():
    """torch.empty then del from Python, a cache hit every time, microseconds per pair."""
    out = {}
    for n in (128, 1_000_000, 50_000_000):
        for _ in range(100):
            t = torch.empty(n, device="cuda")
            del t
        k = 20000
        t0 = time.perf_counter()
        for _ in range(k):
            t = torch.empty(n, device="cuda")
            del t
        out[f"{n * 4} B"] = round((time.perf_counter() - t0) / k * 1e6, 2)
    return out


def performance():
    small = torch.randn(10, 10, device="cuda")
    big = torch.randn(1 << 28, device="cuda")
    scale = seconds_per_call(lambda: big * 2, 50)
    del big
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    sgemm = seconds_per_call(lambda: a @ b, 20)
    return {
        "import torch, seconds": round(t_import, 2),
        "torch.empty(n, device='cuda') then del, cache hit, microseconds per pair from Python": empty_del_us(),
        "small op (10x10 tensor, x*2 then +1) microseconds per op, eager":
            round(seconds_per_call(lambda: small * 2 + 1, 20000) * 1e6 / 2, 2),
        "x * 2 over 2^28 float32, GB/s counting read+write": round(8 * (1 << 28) / scale / 1e9),
        "sgemm 4096^3 float32 without TF32, TFLOP/s": round(2 * 4096**3 / sgemm / 1e12, 1),
        "randn(1000,1000, device='cuda'), microseconds":
            round(seconds_per_call(lambda: torch.randn(1000, 1000, device="cuda"), 1000) * 1e6, 1),
        "randn(1000,1000).cuda(), microseconds":
            round(seconds_per_call(lambda: torch.randn(1000, 1000).cuda(), 200) * 1e6, 1),
    }


def main():
    res = {
        "_what": f"PyTorch {torch.__version__} on one {torch.cuda.get_device_name(0)} "
                 f"(CUDA {torch.version.cuda}). Memory values in bytes from "
                 "torch.cuda.memory_allocated()/memory_reserved(); 'x' is randn(1000,1000) float32.",
    }
    for name, method in [
        ("article_method_1_del", method_1_del),
        ("article_method_2_empty_cache_while_x_alive", method_2_empty_cache_while_x_alive),
        ("article_method_3_no_grad", method_3_no_grad),
        ("article_method_4_del_and_empty_cache", method_4_del_and_empty_cache),
        ("autograd_saved_tensors", saved_tensors),
    ]:
        clean()
        res[name] = method()
    clean()
    res["performance"] = performance()
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
