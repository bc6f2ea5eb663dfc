//! GPU benchmarks on the real device, compared with PyTorch's figures from the same run
//! (`.gpu/torch_anchor.py`): `x * 2` bandwidth, sgemm 4096³, `randn(1000, 1000)`, and the
//! first-use start-up. Prints a note and measures nothing without a GPU.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use torchlet::alloc::RawMemory;
use torchlet::device::cuda::layout::View;
use torchlet::device::cuda::{self, CudaDevice, CudaMemory, Elem};

/// Time `iters` runs of `f`, waiting for the device at the end (launches are asynchronous).
fn timed(dev: &CudaDevice, iters: u64, mut f: impl FnMut()) -> Duration {
    dev.ctx.synchronize().unwrap();
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    dev.ctx.synchronize().unwrap();
    t.elapsed()
}

fn kernels(c: &mut Criterion) {
    if !cuda::is_available() {
        eprintln!(
            "gpu bench: no CUDA device ({})",
            cuda::unavailable_reason().unwrap_or_default()
        );
        return;
    }
    let t = Instant::now();
    let dev = CudaDevice::get(0).unwrap();
    dev.preload_kernels().unwrap();
    eprintln!("gpu bench: context + kernel load {:?}", t.elapsed());
    let mut mem = CudaMemory::new(0).unwrap();
    let gpu = dev.gpu();

    // x * 2 over 2^28 float32: read + write = 8 bytes per element.
    let n = 1usize << 28;
    let (x, y) = (mem.allocate(n * 4).unwrap(), mem.allocate(n * 4).unwrap());
    let shape = [n];
    let st = [1usize];
    let vx = View {
        ptr: x,
        elem: Elem::F32,
        shape: &shape,
        strides: &st,
        offset: 0,
    };
    let vy = View {
        ptr: y,
        elem: Elem::F32,
        shape: &shape,
        strides: &st,
        offset: 0,
    };
    dev.rng.fill(&gpu, &vx, true, 1).unwrap();
    let mut g = c.benchmark_group("gpu");
    g.throughput(Throughput::Bytes(8 * n as u64));
    g.bench_function("scale_2p28_f32", |b| {
        b.iter_custom(|iters| {
            timed(&dev, iters, || {
                gpu.binary_scalar("mul", Elem::F32, &vx, 2.0, 2, false, &vy)
                    .unwrap()
            })
        })
    });
    mem.free(x, n * 4).unwrap();
    mem.free(y, n * 4).unwrap();

    // sgemm 4096³ without TF32.
    let m = 4096usize;
    let (a, b_, out, ws) = (
        mem.allocate(m * m * 4).unwrap(),
        mem.allocate(m * m * 4).unwrap(),
        mem.allocate(m * m * 4).unwrap(),
        mem.allocate(32 << 20).unwrap(),
    );
    let shape = [1, m, m];
    let st = [m * m, m, 1];
    let va = View {
        ptr: a,
        elem: Elem::F32,
        shape: &shape,
        strides: &st,
        offset: 0,
    };
    let vb = View { ptr: b_, ..va };
    let vo = View { ptr: out, ..va };
    dev.rng.fill(&gpu, &va, true, 2).unwrap();
    dev.rng.fill(&gpu, &vb, true, 3).unwrap();
    g.throughput(Throughput::Elements(2 * (m * m * m) as u64));
    g.bench_function("sgemm_4096", |b| {
        b.iter_custom(|iters| {
            timed(&dev, iters, || {
                dev.blas.matmul(&gpu, &va, &vb, &vo, &|_| Ok(ws)).unwrap()
            })
        })
    });

    // randn(1000, 1000) into an existing buffer (the allocator's cost is measured elsewhere).
    let shape = [1000usize * 1000];
    let st = [1usize];
    let vr = View {
        ptr: out,
        elem: Elem::F32,
        shape: &shape,
        strides: &st,
        offset: 0,
    };
    g.throughput(Throughput::Elements(1_000_000));
    g.bench_function("randn_1000x1000_fill", |b| {
        b.iter_custom(|iters| timed(&dev, iters, || dev.rng.fill(&gpu, &vr, true, 5).unwrap()))
    });

    // A 10x10 op: launch overhead.
    let shape = [100usize];
    let vs = View {
        ptr: out,
        elem: Elem::F32,
        shape: &shape,
        strides: &st,
        offset: 0,
    };
    let vd = View { ptr: a, ..vs };
    g.throughput(Throughput::Elements(1));
    g.bench_function("small_op_10x10_kernel", |b| {
        b.iter_custom(|iters| {
            timed(&dev, iters, || {
                gpu.binary_scalar("mul", Elem::F32, &vs, 2.0, 2, false, &vd)
                    .unwrap()
            })
        })
    });
    g.finish();
    for p in [a, b_, out] {
        mem.free(p, m * m * 4).unwrap();
    }
    mem.free(ws, 32 << 20).unwrap();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(20);
    targets = kernels
}
criterion_main!(benches);
