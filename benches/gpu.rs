//! GPU benchmarks on the real device, run beside PyTorch in the same GPU run so RESULTS.md can give
//! ratios: `x * 2` over 2^28 float32, sgemm 4096³ and a 10×10 op beside `benches/ops_torch.py`,
//! `randn(1000, 1000)` on the GPU, a script-level `empty` + `del` pair and the random fill kernels;
//! layer_norm, gelu and softmax over 4096×4096 float32, float16 and bfloat16, `sum()` of 2^28
//! float32, a transformer block's training step and the MLP step of script 05 beside
//! `benches/model_ops_torch.py`; and the size, dtype and layout sweep beside
//! `benches/sweep_torch.py`. `benches/gpu_measure.sh` runs them all in one device call. Without a
//! GPU it says so and measures nothing.

use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use torchlet_core::device::cuda::{self, CudaDevice};
use torchlet_core::device::{self, Device, Operand};
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};
use torchlet_session::Session;

fn sync() {
    device::synchronize(0).expect("synchronize");
}

/// Time `iters` runs of `f`, waiting for the device at the end (launches are asynchronous).
fn timed(iters: u64, mut f: impl FnMut()) -> Duration {
    sync();
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    sync();
    t.elapsed()
}

/// Time `op` under `name` in `g`, after one untimed call: an op's first call on a fresh machine
/// compiles its kernels (NVRTC, hundreds of milliseconds), and a warm-up that ends inside that
/// call leaves criterion planning ten iterations, one of them cold.
fn bench_op(g: &mut BenchmarkGroup<'_, WallTime>, name: impl Into<String>, mut op: impl FnMut()) {
    op();
    sync();
    g.bench_function(name.into(), |b| b.iter_custom(|n| timed(n, &mut op)));
}

fn on_cuda() -> TensorOptions {
    TensorOptions {
        device: Device::Cuda(0),
        ..TensorOptions::default()
    }
}

fn tensor_ops(c: &mut Criterion) {
    let mut g = c.benchmark_group("gpu");
    let x = Tensor::randn(&[1 << 28], &on_cuda()).unwrap();
    g.throughput(Throughput::Bytes(8 << 28));
    bench_op(&mut g, "scale_2p28_f32", || {
        drop(x.mul_scalar(Scalar::Float(2.0)).unwrap())
    });
    drop(x);
    let a = Tensor::randn(&[4096, 4096], &on_cuda()).unwrap();
    let bm = Tensor::randn(&[4096, 4096], &on_cuda()).unwrap();
    g.throughput(Throughput::Elements(2 * 4096u64.pow(3)));
    bench_op(&mut g, "sgemm_4096", || drop(a.matmul(&bm).unwrap()));
    drop((a, bm));
    g.throughput(Throughput::Elements(1_000_000));
    bench_op(&mut g, "randn_1000x1000_cuda", || {
        drop(Tensor::randn(&[1000, 1000], &on_cuda()).unwrap())
    });
    let s = Tensor::randn(&[10, 10], &on_cuda()).unwrap();
    g.throughput(Throughput::Elements(2));
    bench_op(&mut g, "small_op_10x10_pair", || {
        let y = s.mul_scalar(Scalar::Float(2.0)).unwrap();
        drop(y.add_scalar(Scalar::Float(1.0)).unwrap());
    });
    g.finish();
}

fn script_level(c: &mut Criterion) {
    let mut g = c.benchmark_group("gpu_script");
    let (mut session, _out) = Session::captured("<bench>");
    let mut run = |code: String| {
        let outcome = session.execute(&code);
        assert!(outcome.error.is_none(), "{code}: {:?}", outcome.error);
        outcome.elapsed
    };
    run("let s = randn(10, 10, #{device: \"cuda\"});".into());
    for bytes in [512usize, 4_000_000, 200_000_000] {
        g.bench_function(format!("empty_del_pair_{bytes}B"), |b| {
            b.iter_custom(|n| {
                run(format!(
                    "for i in 0..{n} {{ let t = empty({}, #{{device: \"cuda\"}}); del t; }}",
                    bytes / 4
                ))
            })
        });
    }
    g.throughput(Throughput::Elements(2));
    g.bench_function("small_op_10x10_pair", |b| {
        b.iter_custom(|n| {
            run(format!(
                "for i in 0..{n} {{ let y = s * 2 + 1; }} cuda::synchronize();"
            ))
        })
    });
    g.finish();
}

fn random_kernels(c: &mut Criterion) {
    let dev = CudaDevice::get(0).unwrap();
    let t = Tensor::empty(&[1000, 1000], &on_cuda()).unwrap();
    let layout = torchlet_alloc::types::Layout::contiguous(&[1_000_000]);
    let v = Operand {
        ptr: t.data_ptr(),
        dtype: DType::F32,
        layout: &layout,
    };
    let mut g = c.benchmark_group("gpu_random");
    g.throughput(Throughput::Elements(1_000_000));
    let mut seed = 0;
    bench_op(&mut g, "curand_normal_1e6", || {
        seed += 1;
        dev.rng.fill(&dev.gpu(), &v, true, seed).unwrap()
    });
    bench_op(&mut g, "philox_normal_1e6", || {
        seed += 1;
        dev.gpu().philox(&v, seed, 0, true).unwrap()
    });
    g.finish();
}

/// The model ops of `benches/model_ops_torch.py`, on 4096×4096 float32, float16 and bfloat16
/// (bytes read and written), and `sum()` of 2^28 float32 (bytes read).
fn model_ops(c: &mut Criterion) {
    let mut g = c.benchmark_group("gpu_model_ops");
    for (dtype, tag) in [
        (DType::F32, "f32"),
        (DType::F16, "f16"),
        (DType::BF16, "bf16"),
    ] {
        let make = |shape: &[usize]| {
            Tensor::randn(shape, &on_cuda())
                .and_then(|t| t.to_dtype(dtype))
                .unwrap()
        };
        let (x, w, b) = (make(&[4096, 4096]), make(&[4096]), make(&[4096]));
        g.throughput(Throughput::Bytes(2 * dtype.size() as u64 * 4096 * 4096));
        bench_op(&mut g, format!("layer_norm_4096x4096_{tag}"), || {
            drop(x.layer_norm(&[4096], Some(&w), Some(&b), 1e-5).unwrap())
        });
        bench_op(&mut g, format!("gelu_4096x4096_{tag}"), || {
            drop(x.gelu("none").unwrap())
        });
        bench_op(&mut g, format!("softmax_4096x4096_{tag}"), || {
            drop(x.softmax(1).unwrap())
        });
    }
    let x = Tensor::randn(&[1 << 28], &on_cuda()).unwrap();
    g.throughput(Throughput::Bytes(4 << 28));
    bench_op(&mut g, "sum_2p28_f32", || drop(x.sum(None, false).unwrap()));
    drop(x);
    // One training step of scripts/10_transformer_block.rhai's block (forward, backward, AdamW).
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/10_transformer_block.rhai"
    ))
    .unwrap();
    let (setup, _) = script
        .split_once("for step in 0..3 {")
        .expect("the script's loop");
    let body = script.split_once("for step in 0..3 {").unwrap().1;
    let step = body
        .split_once("    report(`forward")
        .unwrap()
        .0
        .replace("enabled: step == 2", "enabled: false")
        + "loss.backward(); opt.step(); opt.zero_grad();";
    let (mut s, _) = Session::captured("<bench>");
    assert!(s.execute(setup).error.is_none());
    g.throughput(Throughput::Elements(1));
    bench_op(&mut g, "transformer_block_step", || {
        assert!(s.execute(&step).error.is_none())
    });
    // One step of scripts/05_training_loop.rhai's loop: the 2-64-1 MLP's forward, backward, SGD
    // update under no_grad and `loss.item()`, which waits for the device as the script does.
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/05_training_loop.rhai"
    ))
    .unwrap();
    let setup = script
        .split_once("let lr = 0.1;")
        .expect("the script's setup")
        .0;
    let step = "let loss = mse_loss(forward(x, w1, b1, w2, b2), y); loss.backward();
        no_grad { w1.sub_(w1.grad * 0.1); b1.sub_(b1.grad * 0.1); w2.sub_(w2.grad * 0.1); b2.sub_(b2.grad * 0.1); }
        w1.grad = (); b1.grad = (); w2.grad = (); b2.grad = (); loss.item();";
    let (mut s, _) = Session::captured("<bench>");
    assert!(s.execute(setup).error.is_none());
    bench_op(&mut g, "mlp_step", || {
        assert!(s.execute(step).error.is_none())
    });
    g.finish();
}

/// Issue 17's sweep, beside `benches/sweep_torch.py`: `x * 2`, a transposed copy (the strided
/// path), `sum()` and `softmax(1)` over rows of 1024, for float32, float16 and bfloat16 from 2^10 to
/// 2^28 elements (bytes read and written).
fn sweep(c: &mut Criterion) {
    let mut g = c.benchmark_group("gpu_sweep");
    for (dtype, tag) in [
        (DType::F32, "f32"),
        (DType::F16, "f16"),
        (DType::BF16, "bf16"),
    ] {
        for k in [10u32, 16, 20, 24, 28] {
            let n = 1usize << k;
            let x = Tensor::randn(&[n], &on_cuda())
                .and_then(|t| t.to_dtype(dtype))
                .unwrap();
            let bytes = (n * dtype.size()) as u64;
            let square = x.view(&[1 << (k / 2), 1 << (k - k / 2)]).unwrap();
            let rows = x.view(&[(n / 1024) as isize, 1024]).unwrap();
            g.throughput(Throughput::Bytes(2 * bytes));
            bench_op(&mut g, format!("scale_{tag}_2p{k}"), || {
                drop(x.mul_scalar(Scalar::Float(2.0)).unwrap())
            });
            bench_op(&mut g, format!("transpose_copy_{tag}_2p{k}"), || {
                drop(square.t().unwrap().contiguous().unwrap())
            });
            bench_op(&mut g, format!("softmax_{tag}_2p{k}"), || {
                drop(rows.softmax(1).unwrap())
            });
            g.throughput(Throughput::Bytes(bytes));
            bench_op(&mut g, format!("sum_{tag}_2p{k}"), || {
                drop(x.sum(None, false).unwrap())
            });
        }
    }
    g.finish();
}

fn all(c: &mut Criterion) {
    device::init(None).unwrap();
    if !cuda::is_available() {
        eprintln!(
            "gpu bench: no CUDA device ({})",
            cuda::unavailable_reason().unwrap_or_default()
        );
        return;
    }
    let t = Instant::now();
    drop(
        Tensor::randn(&[10, 10], &TensorOptions::default())
            .unwrap()
            .to_device(Device::Cuda(0))
            .unwrap(),
    );
    eprintln!(
        "gpu bench: first .cuda() in this process took {:?}",
        t.elapsed()
    );
    tensor_ops(c);
    script_level(c);
    random_kernels(c);
    model_ops(c);
    sweep(c);
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1)).sample_size(10);
    targets = all
}
criterion_main!(benches);
