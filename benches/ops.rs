//! Op speed: dispatch overhead on a 10×10 tensor, elementwise bandwidth on 2^24 floats, 1024³ matmul,
//! and an allocate/free round trip through the simulated GPU's caching allocator.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use torchlet_core::device::{self, Device};
use torchlet_core::tensor::{Scalar, Tensor, TensorOptions};

fn dispatch(c: &mut Criterion) {
    let x = Tensor::randn(&[10, 10], &TensorOptions::default()).unwrap();
    let y = Tensor::randn(&[10, 10], &TensorOptions::default()).unwrap();
    let mut g = c.benchmark_group("dispatch_10x10_cpu");
    g.bench_function("mul_scalar", |b| {
        b.iter(|| black_box(&x).mul_scalar(Scalar::Int(2)).unwrap())
    });
    g.bench_function("add", |b| {
        b.iter(|| black_box(&x).add(black_box(&y)).unwrap())
    });
    g.bench_function("sum", |b| {
        b.iter(|| black_box(&x).sum(None, false).unwrap())
    });
    g.finish();
}

fn elementwise(c: &mut Criterion) {
    let n = 1 << 24;
    let x = Tensor::randn(&[n], &TensorOptions::default()).unwrap();
    let y = Tensor::randn(&[n], &TensorOptions::default()).unwrap();
    let mut g = c.benchmark_group("elementwise_2^24_f32_cpu");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    // Bytes moved: one read and one write per element (two reads for add).
    g.throughput(Throughput::Bytes(2 * 4 * n as u64));
    g.bench_function("mul_scalar_ in place", |b| {
        b.iter(|| x.mul_scalar_(Scalar::Float(1.0)).unwrap())
    });
    g.bench_function("mul_scalar (new output)", |b| {
        b.iter(|| x.mul_scalar(Scalar::Int(2)).unwrap())
    });
    g.throughput(Throughput::Bytes(3 * 4 * n as u64));
    g.bench_function("add (new output)", |b| b.iter(|| x.add(&y).unwrap()));
    g.finish();
}

fn matmul(c: &mut Criterion) {
    let a = Tensor::randn(&[1024, 1024], &TensorOptions::default()).unwrap();
    let b = Tensor::randn(&[1024, 1024], &TensorOptions::default()).unwrap();
    let mut g = c.benchmark_group("matmul_1024_f32_cpu");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements(2 * 1024 * 1024 * 1024));
    g.bench_function("matmul", |bench| bench.iter(|| a.matmul(&b).unwrap()));
    g.finish();
}

fn simulated_alloc(c: &mut Criterion) {
    device::init(Some("16GiB")).unwrap();
    let opts = TensorOptions::default().device(Device::Cuda(0));
    drop(Tensor::empty(&[1000, 1000], &opts).unwrap());
    c.bench_function("empty_then_drop_1000x1000_simulated_gpu", |b| {
        b.iter(|| drop(black_box(Tensor::empty(&[1000, 1000], &opts).unwrap())))
    });
}

criterion_group!(benches, dispatch, elementwise, matmul, simulated_alloc);
criterion_main!(benches);
