"""Ask the CUDA driver where it places allocations: the evidence for the simulated GPU's placement.

    python3 tests/data/record_driver_placement.py tests/data/driver_placement.json

Each experiment runs in a fresh process (a fresh primary context, so a fresh address space) and calls
the driver through ctypes: cuMemAlloc/cuMemFree of the sizes the caching allocator asks for (2 MiB
small segments, 20 MiB large ones, bigger ones rounded to 2 MiB), cuMemAddressReserve as expandable
segments do, and, with `torch` first, the same after PyTorch has made its context. OUT.json maps each
experiment to its operations and the addresses the driver gave.
"""

import ctypes
import json
import random
import subprocess
import sys
import time

MIB = 1 << 20


class Driver:
    """The few driver calls the experiments make."""

    def __init__(self, with_torch):
        if with_torch:
            import torch

            torch.cuda.init()
            torch.zeros(1, device="cuda")
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.check(self.cu.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        self.check(self.cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    @staticmethod
    def check(rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed with CUresult {rc}")

    def alloc(self, size):
        p = ctypes.c_uint64()
        rc = self.cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size))
        return p.value if rc == 0 else -rc

    def free(self, ptr):
        return self.cu.cuMemFree_v2(ctypes.c_uint64(ptr))

    def reserve(self, size, align=0):
        p = ctypes.c_uint64()
        rc = self.cu.cuMemAddressReserve(
            ctypes.byref(p), ctypes.c_size_t(size), ctypes.c_size_t(align), ctypes.c_uint64(0), ctypes.c_uint64(0)
        )
        return p.value if rc == 0 else -rc

    def unreserve(self, ptr, size):
        return self.cu.cuMemAddressFree(ctypes.c_uint64(ptr), ctypes.c_size_t(size))

    def free_bytes(self):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self.check(self.cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
        return free.value

    def load_module(self, global_bytes):
        """cuModuleLoadData of a PTX module with one empty kernel and a global array, as NVRTC's are."""
        ptx = PTX.replace("GLOBAL_BYTES", str(max(global_bytes, 4))).encode() + b"\0"
        m = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(m), ctypes.c_char_p(ptx)), "cuModuleLoadData")
        f = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(f), m, b"k"), "cuModuleGetFunction")
        return m.value


PTX = """
.version 8.0
.target sm_90
.address_size 64
.global .align 4 .b8 buf[GLOBAL_BYTES];
.visible .entry k() { ret; }
"""


def find_lib(stem):
    """libSTEM.so from the CUDA wheels PyTorch brings (or the system's)."""
    import glob
    import os
    import site

    roots = site.getsitepackages() + [site.getusersitepackages()]
    for root in roots:
        for pattern in (f"{root}/nvidia/**/lib{stem}.so*", f"{root}/torch/lib/lib{stem}.so*"):
            hits = sorted(glob.glob(pattern, recursive=True))
            if hits:
                return ctypes.CDLL(hits[-1])
    return ctypes.CDLL(f"lib{stem}.so")


class Libraries:
    """cuBLAS and cuRAND handles, made as torchlet makes them (their own driver allocations)."""

    def __init__(self):
        self.blas = find_lib("cublas")
        self.rand = find_lib("curand")
        self.handles = {}

    def blas_create(self, ident):
        h = ctypes.c_void_p()
        rc = self.blas.cublasCreate_v2(ctypes.byref(h))
        self.handles[ident] = h
        return rc

    def blas_destroy(self, ident):
        return self.blas.cublasDestroy_v2(self.handles.pop(ident))

    def rand_create(self, ident, drv):
        g = ctypes.c_void_p()
        rc = self.rand.curandCreateGenerator(ctypes.byref(g), 161)  # CURAND_RNG_PSEUDO_PHILOX4_32_10
        if rc:
            return rc
        buf = drv.alloc(1 << 20)
        rc = self.rand.curandGenerateNormal(g, ctypes.c_uint64(buf), ctypes.c_size_t(1 << 18), ctypes.c_float(0), ctypes.c_float(1))
        drv.cu.cuCtxSynchronize()
        self.handles[ident] = (g, buf)
        return rc

    def rand_destroy(self, ident, drv):
        g, buf = self.handles.pop(ident)
        rc = self.rand.curandDestroyGenerator(g)
        drv.free(buf)
        return rc


def run_ops(drv, ops):
    """ops: ["a", id, size] allocate, ["f", id] free, ["r", id, size] reserve, ["u", id] unreserve,
    ["m", id, bytes] load a module with a global of bytes, ["b"/"B", id] create/destroy a cuBLAS
    handle, ["g"/"G", id] create (and draw from)/destroy a cuRAND generator.
    Returns [[op, id, size, addr-or-rc, free bytes after], ...]."""
    live, out, libs = {}, [], None
    for op in ops:
        kind, ident = op[0], op[1]
        if kind in "bBgG" and libs is None:
            libs = Libraries()
        if kind == "m":
            out.append(["m", ident, op[2], drv.load_module(op[2]), drv.free_bytes()])
        elif kind == "b":
            out.append(["b", ident, 0, libs.blas_create(ident), drv.free_bytes()])
        elif kind == "B":
            out.append(["B", ident, 0, libs.blas_destroy(ident), drv.free_bytes()])
        elif kind == "g":
            out.append(["g", ident, 0, libs.rand_create(ident, drv), drv.free_bytes()])
        elif kind == "G":
            out.append(["G", ident, 0, libs.rand_destroy(ident, drv), drv.free_bytes()])
        elif kind == "a":
            addr = drv.alloc(op[2])
            live[ident] = (addr, op[2])
            out.append(["a", ident, op[2], addr])
        elif kind == "r":
            addr = drv.reserve(op[2])
            live[ident] = (addr, op[2])
            out.append(["r", ident, op[2], addr])
        elif kind == "f":
            addr, size = live.pop(ident)
            out.append(["f", ident, size, drv.free(addr)])
        elif kind == "u":
            addr, size = live.pop(ident)
            out.append(["u", ident, size, drv.unreserve(addr, size)])
    return out


def seq(*sizes):
    return [["a", i, s] for i, s in enumerate(sizes)]


def random_workload(seed, n_ops, sizes, free_p):
    rng = random.Random(seed)
    ops, live, next_id = [], [], 0
    for _ in range(n_ops):
        if live and rng.random() < free_p:
            ident = live.pop(rng.randrange(len(live)))
            ops.append(["f", ident])
        else:
            ops.append(["a", next_id, rng.choice(sizes)])
            live.append(next_id)
            next_id += 1
    return ops


def experiments():
    big = [2 * MIB * k for k in range(11, 120)]
    small_then = []
    for k in range(1, 41):
        small_then += [2 * MIB * k, 2 * MIB]
    frees = seq(*([20 * MIB] * 10)) + [["f", 3], ["f", 6], ["a", 10, 20 * MIB], ["a", 11, 20 * MIB], ["a", 12, 20 * MIB]]
    frees2 = seq(*([2 * MIB] * 10)) + [["f", 2], ["f", 5], ["a", 10, 2 * MIB], ["a", 11, 4 * MIB], ["a", 12, 2 * MIB]]
    frees3 = seq(*([20 * MIB] * 6)) + [["f", 1], ["f", 2], ["a", 10, 2 * MIB], ["a", 11, 2 * MIB], ["a", 12, 30 * MIB], ["a", 13, 8 * MIB]]
    allfree = seq(20 * MIB, 2 * MIB, 40 * MIB, 2 * MIB, 100 * MIB) + [["f", i] for i in range(5)] + [
        ["a", 10 + i, s] for i, s in enumerate([2 * MIB, 20 * MIB, 2 * MIB, 100 * MIB, 40 * MIB])
    ]
    tiny = seq(4096, 2 * MIB, 65536, 2 * MIB, 512, 1 * MIB, 2 * MIB, 3 * MIB, 2 * MIB, 256 * 1024, 20 * MIB, 2 * MIB)
    mixed = seq(2 * MIB, 20 * MIB, 2 * MIB, 20 * MIB, 2 * MIB, 64 * MIB, 2 * MIB, 2 * MIB, 200 * MIB, 2 * MIB, 1024 * MIB, 2 * MIB, 20 * MIB)
    reserve = seq(2 * MIB, 20 * MIB) + [["r", 10, 64 * MIB], ["a", 2, 2 * MIB], ["r", 11, 140 * 1024 * MIB], ["a", 3, 20 * MIB], ["u", 10], ["a", 4, 20 * MIB], ["a", 5, 64 * MIB]]
    exps = {
        "twos": seq(*([2 * MIB] * 40)),
        "twenties": seq(*([20 * MIB] * 20)),
        "growing_then_two": small_then,
        "mixed": mixed,
        "tiny": tiny,
        "free_twenties": frees,
        "free_twos": frees2,
        "free_twenties_then_small": frees3,
        "free_all_then_again": allfree,
        "reserve": reserve,
        "scratch": seq(2 * MIB, 65536, 2 * MIB) + [["f", 1], ["a", 3, 131072], ["a", 4, 2 * MIB], ["f", 3], ["a", 5, 4 * MIB], ["a", 6, 2 * MIB], ["a", 7, 2 * MIB], ["f", 5], ["a", 8, 20 * MIB], ["a", 9, 2 * MIB], ["a", 10, 2 * MIB]],
        "interleave": [["a", 0, 2 * MIB], ["m", 100, 4], ["a", 1, 2 * MIB], ["m", 101, 1 << 20], ["a", 2, 2 * MIB], ["b", 102], ["a", 3, 2 * MIB], ["a", 4, 20 * MIB], ["g", 103], ["a", 5, 2 * MIB], ["a", 6, 20 * MIB], ["m", 104, 4], ["a", 7, 2 * MIB], ["G", 103], ["a", 8, 2 * MIB], ["B", 102], ["a", 9, 2 * MIB], ["a", 10, 20 * MIB], ["b", 105], ["a", 11, 2 * MIB]],
    }
    for seed in range(4):
        exps[f"random_{seed}"] = random_workload(seed, 400, [2 * MIB] * 6 + [20 * MIB] * 3 + big, 0.4)
    for seed in range(2):
        exps[f"random_small_{seed}"] = random_workload(100 + seed, 300, [2 * MIB], 0.45)
    return exps


def child(name, with_torch):
    drv = Driver(with_torch)
    out = run_ops(drv, experiments()[name])
    print(json.dumps(out))


def main():
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3] == "torch")
        return
    results, t0 = {}, time.time()
    for name in experiments():
        for mode in ("bare", "torch"):
            if mode == "torch" and not (name in ("twos", "mixed", "tiny", "free_twenties", "random_0")):
                continue
            done = subprocess.run([sys.executable, __file__, "--child", name, mode], capture_output=True, text=True, timeout=120)
            key = f"{name}/{mode}"
            if done.returncode == 0:
                results[key] = json.loads(done.stdout)
            else:
                results[key] = {"error": done.stderr[-2000:]}
            print(f"{key}: {'ok' if done.returncode == 0 else 'FAILED'} ({time.time() - t0:.1f} s)", flush=True)
            # Written after each experiment, so that a run cut short still brings back the rest.
            with open(sys.argv[1], "w") as f:
                json.dump(results, f)


if __name__ == "__main__":
    main()
