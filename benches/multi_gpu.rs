//! Two real GPUs: device-to-device copy bandwidth (1 GiB, peer-to-peer) and NCCL all_reduce of
//! 1 GiB of float32, to set beside PyTorch's figures from `benches/multi_gpu_torch.py` run in the
//! same call. Prints a note and measures nothing with fewer than two GPUs or without NCCL.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use torchlet_alloc::RawMemory;
use torchlet_core::device::cuda::{self, nccl, peer, CudaDevice, CudaMemory};
use torchlet_core::tensor::DType;

/// 1 GiB, the size both sides measure.
const BYTES: usize = 1 << 30;

/// Time `iters` runs of `f` on both devices, waiting for both at the end.
fn timed(devs: &[std::sync::Arc<CudaDevice>], iters: u64, mut f: impl FnMut()) -> Duration {
    devs.iter().for_each(|d| d.ctx.synchronize().unwrap());
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    devs.iter().for_each(|d| d.ctx.synchronize().unwrap());
    t.elapsed()
}

fn two_gpus(c: &mut Criterion) {
    if cuda::device_count() < 2 {
        eprintln!(
            "multi_gpu bench: needs two CUDA devices, found {} ({})",
            cuda::device_count(),
            cuda::unavailable_reason().unwrap_or_else(|| "one GPU only".into())
        );
        return;
    }
    let devs = [CudaDevice::get(0).unwrap(), CudaDevice::get(1).unwrap()];
    let mut mem = [CudaMemory::new(0).unwrap(), CudaMemory::new(1).unwrap()];
    let bufs: Vec<u64> = mem.iter_mut().map(|m| m.allocate(BYTES).unwrap()).collect();
    eprintln!(
        "multi_gpu bench: peer access cuda:0 -> cuda:1 {}, cuda:1 -> cuda:0 {}",
        peer::enable_peer_access(0, 1).unwrap(),
        peer::enable_peer_access(1, 0).unwrap()
    );

    let mut g = c.benchmark_group("multi_gpu");
    g.throughput(Throughput::Bytes(BYTES as u64));
    g.sample_size(10);
    g.bench_function("copy_cuda0_to_cuda1_1GiB", |b| {
        b.iter_custom(|iters| {
            timed(&devs, iters, || {
                peer::copy(0, bufs[0], 1, bufs[1], BYTES).unwrap()
            })
        })
    });
    match nccl::check() {
        Err(why) => eprintln!("multi_gpu bench: all_reduce not measured: {why}"),
        Ok(()) => {
            let count = BYTES / DType::F32.size();
            // Bus bandwidth for n ranks is algbw * 2(n-1)/n, which is algbw itself for two.
            g.bench_function("all_reduce_sum_1GiB_f32_2gpus", |b| {
                b.iter_custom(|iters| {
                    timed(&devs, iters, || {
                        nccl::all_reduce(&[0, 1], &bufs, DType::F32, count, nccl::NcclOp::Sum)
                            .unwrap()
                    })
                })
            });
        }
    }
    g.finish();
    for (m, &p) in mem.iter_mut().zip(&bufs) {
        m.free(p, BYTES).unwrap();
    }
}

criterion_group!(benches, two_gpus);
criterion_main!(benches);
