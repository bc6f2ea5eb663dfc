//! The real CUDA backend's pieces on the GPU: availability, raw memory and expandable segments,
//! every kernel family against a host reference, cuBLAS and cuRAND. The GPU tests are ignored unless
//! built with `--features gpu-tests`; availability is checked on every machine.
use crate::common;

use half::{bf16, f16};
use torchlet_alloc::types::{DType, Layout};
use torchlet_alloc::{RawError, RawMemory};
use torchlet_core::device::cuda::{self, CudaDevice, CudaMemory};
use torchlet_core::device::{Operand, ReduceOp};

use common::real_gpu as on_gpu;

/// Fail without the real GPU, and share it with the other tests (`alone_as_is` in tests/common).
fn require_real_gpu() {
    common::require_real_gpu();
    common::shares_gpu_as_is();
}

/// A device buffer with a row-major shape, held in one raw segment.
struct Buf {
    ptr: u64,
    elem: DType,
    layout: Layout,
}

impl Buf {
    fn view(&self) -> Operand<'_> {
        Operand {
            ptr: self.ptr,
            dtype: self.elem,
            layout: &self.layout,
        }
    }
}

fn strides_of(shape: &[usize]) -> Vec<usize> {
    torchlet_alloc::types::contiguous_strides(shape)
}

fn encode(vals: &[f64], elem: DType) -> Vec<u8> {
    let mut out = Vec::new();
    for &v in vals {
        match elem {
            DType::F32 => out.extend((v as f32).to_le_bytes()),
            DType::F64 => out.extend(v.to_le_bytes()),
            DType::F16 => out.extend(f16::from_f64(v).to_le_bytes()),
            DType::BF16 => out.extend(bf16::from_f64(v).to_le_bytes()),
            DType::I64 => out.extend((v as i64).to_le_bytes()),
            DType::I32 => out.extend((v as i32).to_le_bytes()),
            DType::U8 => out.push(v as u8),
            DType::Bool => out.push((v != 0.0) as u8),
        }
    }
    out
}

fn decode(bytes: &[u8], elem: DType) -> Vec<f64> {
    bytes
        .chunks(elem.size())
        .map(|c| match elem {
            DType::F32 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::F64 => f64::from_le_bytes(c.try_into().unwrap()),
            DType::F16 => f16::from_le_bytes(c.try_into().unwrap()).to_f64(),
            DType::BF16 => bf16::from_le_bytes(c.try_into().unwrap()).to_f64(),
            DType::I64 => i64::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::I32 => i32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::U8 | DType::Bool => c[0] as f64,
        })
        .collect()
}

struct Gpu {
    dev: std::sync::Arc<CudaDevice>,
    mem: CudaMemory,
    live: Vec<u64>,
}

impl Gpu {
    fn new() -> Self {
        Gpu {
            dev: CudaDevice::get(0).expect("cuda:0"),
            mem: CudaMemory::new(0).expect("memory"),
            live: Vec::new(),
        }
    }
    fn alloc(&mut self, elem: DType, shape: &[usize]) -> Buf {
        let n: usize = shape.iter().product();
        let ptr = self
            .mem
            .allocate((n * elem.size()).max(512))
            .expect("allocate");
        self.live.push(ptr);
        Buf {
            ptr,
            elem,
            layout: Layout::contiguous(shape),
        }
    }
    fn up(&mut self, vals: &[f64], elem: DType, shape: &[usize]) -> Buf {
        let b = self.alloc(elem, shape);
        self.dev
            .write_bytes(b.ptr, &encode(vals, elem))
            .expect("upload");
        b
    }
    /// Elements of a (possibly strided) buffer in row-major order.
    fn down(&self, b: &Buf) -> Vec<f64> {
        let span = b.layout.offset
            + b.layout
                .shape
                .iter()
                .zip(&b.layout.strides)
                .map(|(s, t)| (s.max(&1) - 1) * t)
                .sum::<usize>()
            + 1;
        let mut bytes = vec![0u8; span * b.elem.size()];
        self.dev.read_bytes(b.ptr, &mut bytes).expect("download");
        let all = decode(&bytes, b.elem);
        let n: usize = b.layout.shape.iter().product();
        (0..n)
            .map(|mut i| {
                let mut off = b.layout.offset;
                for d in (0..b.layout.shape.len()).rev() {
                    off += (i % b.layout.shape[d]) * b.layout.strides[d];
                    i /= b.layout.shape[d];
                }
                all[off]
            })
            .collect()
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        for p in self.live.drain(..) {
            let _ = self.mem.free(p, 0);
        }
    }
}

/// Deterministic non-zero test values in about [-3, 3].
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((x >> 33) as f64 / (1u64 << 31) as f64) * 6.0 - 3.0;
            if v.abs() < 0.05 {
                0.5
            } else {
                v
            }
        })
        .collect()
}

fn tol(elem: DType) -> f64 {
    match elem {
        DType::F64 => 1e-12,
        DType::F32 => 1e-5,
        DType::BF16 => 1e-2,
        _ => 2e-3,
    }
}

fn assert_close(got: &[f64], want: &[f64], rtol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rtol * (1.0 + w.abs());
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// `v` rounded to what `elem` can hold.
fn round(v: f64, elem: DType) -> f64 {
    decode(&encode(&[v], elem), elem)[0]
}

#[test]
fn availability_is_reported_clearly() {
    // Decided by the driver, so this runs on every machine: with a GPU, without a driver, and with
    // a driver but no usable device.
    common::shares_gpu_as_is();
    if on_gpu() || cuda::is_available() {
        assert!(cuda::is_available(), "{:?}", cuda::unavailable_reason());
        assert!(cuda::device_count() >= 1);
        let info = &cuda::devices().unwrap()[0];
        assert!(!info.name.is_empty());
        assert!(info.capability.0 >= 5, "{:?}", info.capability);
        eprintln!(
            "cuda:0 = {} sm_{}{} ({} SMs)",
            info.name, info.capability.0, info.capability.1, info.sm_count
        );
    } else if !unsafe { cudarc::driver::sys::is_culib_present() } {
        assert!(!cuda::is_available());
        let reason = cuda::unavailable_reason().expect("a reason");
        assert!(reason.contains("libcuda"), "{reason}");
        assert!(reason.contains("tried libcuda.so"), "{reason}");
        torchlet_core::device::init(None).unwrap();
        let err = torchlet_core::device::backend(torchlet_core::device::Device::Cuda(0))
            .err()
            .expect("no GPU");
        assert!(err.to_string().contains("--simulate-cuda"), "{err}");
        assert_eq!(cuda::device_count(), 0);
        assert!(CudaDevice::get(0).is_err());
    } else {
        let reason = cuda::unavailable_reason().expect("a reason");
        assert!(!reason.trim().is_empty());
        assert_eq!(cuda::device_count(), 0, "{reason}");
        assert!(CudaDevice::get(0).is_err(), "{reason}");
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn raw_memory_segments_and_expandable_pages() {
    common::require_real_gpu();
    // It reads the device's free memory, which the other tests' allocations would move.
    let _alone = common::alone_as_is();
    let mut mem = CudaMemory::new(0).unwrap();
    let (free0, total) = mem.mem_get_info().unwrap();
    assert!(total > 1 << 30 && free0 <= total);
    let p = mem.allocate(20 << 20).unwrap();
    let (free1, _) = mem.mem_get_info().unwrap();
    assert!(
        free1 + (20 << 20) <= free0 + (2 << 20),
        "free {free0} -> {free1}"
    );
    mem.free(p, 20 << 20).unwrap();
    // Expandable segments: reserve address space, back parts of it with 20 MiB and 2 MiB pages.
    let dev = CudaDevice::get(0).unwrap();
    let base = mem.reserve(1 << 30).unwrap();
    mem.map(base, 40 << 20).unwrap();
    mem.map(base + (40 << 20), 2 << 20).unwrap();
    let data: Vec<u8> = (0..(42usize << 20)).map(|i| (i % 251) as u8).collect();
    dev.write_bytes(base, &data).unwrap();
    let mut back = vec![0u8; data.len()];
    dev.read_bytes(base, &mut back).unwrap();
    assert!(back == data, "mapped pages keep their data");
    let (free2, _) = mem.mem_get_info().unwrap();
    mem.unmap(base + (20 << 20), 20 << 20).unwrap(); // one large page alone
    let (free3, _) = mem.mem_get_info().unwrap();
    assert!(
        free3 >= free2 + (20 << 20),
        "unmap returns the page: {free2} -> {free3}"
    );
    assert!(
        mem.unmap(base, 2 << 20).is_err(),
        "part of a page is refused"
    );
    mem.release_reservation(base, 1 << 30).unwrap();
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn raw_memory_out_of_memory_is_a_value() {
    require_real_gpu();
    let mut mem = CudaMemory::new(0).unwrap();
    let (_, total) = mem.mem_get_info().unwrap();
    assert_eq!(mem.allocate(total * 2), Err(RawError::OutOfMemory));
    let p = mem
        .allocate(1 << 20)
        .expect("the device still works after an OOM");
    mem.free(p, 1 << 20).unwrap();
}

type HostFn = fn(f64) -> f64;

const UNARY: [(&str, HostFn); 11] = [
    ("neg", |x| -x),
    ("exp", f64::exp),
    ("log", |x: f64| x.abs().ln()),
    ("sqrt", |x: f64| x.abs().sqrt()),
    ("abs", f64::abs),
    ("relu", |x: f64| x.max(0.0)),
    ("sigmoid", |x: f64| 1.0 / (1.0 + (-x).exp())),
    ("tanh", f64::tanh),
    ("sin", f64::sin),
    ("cos", f64::cos),
    ("sign", f64::signum),
];

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn unary_ops_match_the_host_for_float_dtypes() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        // 1027 elements: vector body plus a scalar tail.
        for (name, f) in UNARY {
            let raw = values(1027, 7);
            let input: Vec<f64> = raw
                .iter()
                .map(|&x| {
                    round(
                        if name == "log" || name == "sqrt" {
                            x.abs()
                        } else {
                            x
                        },
                        elem,
                    )
                })
                .collect();
            let a = g.up(&input, elem, &[1027]);
            let out = g.alloc(elem, &[1027]);
            g.dev
                .gpu()
                .unary(name, 0.0, 0.0, &a.view(), &out.view())
                .unwrap();
            let want: Vec<f64> = input.iter().map(|&x| f(x)).collect();
            assert_close(
                &g.down(&out),
                &want,
                tol(elem) * 4.0,
                &format!("{name} {elem:?}"),
            );
        }
        // clamp and pow with parameters, on a transposed (strided) view.
        let input: Vec<f64> = values(12, 3).iter().map(|&x| round(x, elem)).collect();
        let mut a = g.up(&input, elem, &[3, 4]);
        a.layout.shape = vec![4, 3];
        a.layout.strides = vec![1, 4];
        let out = g.alloc(elem, &[4, 3]);
        g.dev
            .gpu()
            .unary("clamp", -1.0, f64::INFINITY, &a.view(), &out.view())
            .unwrap();
        let host = g.down(&a);
        assert_close(
            &g.down(&out),
            &host.iter().map(|x| x.max(-1.0)).collect::<Vec<_>>(),
            tol(elem),
            "clamp",
        );
        g.dev
            .gpu()
            .unary("pow", 2.0, 0.0, &a.view(), &out.view())
            .unwrap();
        assert_close(
            &g.down(&out),
            &host.iter().map(|x| x * x).collect::<Vec<_>>(),
            tol(elem) * 4.0,
            "pow",
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn binary_ops_broadcast_and_promote() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
    ] {
        let xs: Vec<f64> = values(6 * 5, 1)
            .iter()
            .map(|&x| round((x * 4.0).round().max(1.0), elem))
            .collect();
        let ys: Vec<f64> = values(5, 2)
            .iter()
            .map(|&x| round((x * 4.0).round().max(1.0), elem))
            .collect();
        let a = g.up(&xs, elem, &[6, 5]);
        // b is [5] broadcast over rows: stride 0 on dim 0.
        let mut b = g.up(&ys, elem, &[5]);
        b.layout.shape = vec![6, 5];
        b.layout.strides = vec![0, 1];
        let out = g.alloc(elem, &[6, 5]);
        for (op, f) in [
            ("add", (|x, y| x + y) as fn(f64, f64) -> f64),
            ("sub", |x, y| x - y),
            ("mul", |x, y| x * y),
        ] {
            g.dev
                .gpu()
                .binary(op, 0.0, 0.0, elem, &a.view(), &b.view(), &out.view())
                .unwrap();
            let want: Vec<f64> = (0..30).map(|i| round(f(xs[i], ys[i % 5]), elem)).collect();
            assert_close(&g.down(&out), &want, tol(elem), &format!("{op} {elem:?}"));
        }
        // eq into bool
        let eq = g.alloc(DType::Bool, &[6, 5]);
        g.dev
            .gpu()
            .binary("eq", 0.0, 0.0, elem, &a.view(), &a.view(), &eq.view())
            .unwrap();
        assert!(g.down(&eq).iter().all(|&v| v == 1.0));
    }
    // Contiguous vector path with mixed operand dtypes: f32 + i64 computed in f32.
    let n = 4099;
    let xs = values(n, 5);
    let ys: Vec<f64> = values(n, 6).iter().map(|x| (x * 10.0).round()).collect();
    let a = g.up(&xs, DType::F32, &[n]);
    let b = g.up(&ys, DType::I64, &[n]);
    let out = g.alloc(DType::F32, &[n]);
    g.dev
        .gpu()
        .binary(
            "div",
            0.0,
            0.0,
            DType::F32,
            &a.view(),
            &b.view(),
            &out.view(),
        )
        .unwrap();
    let want: Vec<f64> = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| round(*x, DType::F32) / y)
        .collect();
    assert_close(&g.down(&out), &want, 1e-5, "div f32/i64");
    // Scalars, both ways: 2 - x and x ** 3.
    g.dev
        .gpu()
        .binary_scalar("sub", DType::F32, &a.view(), 2.0, 2, true, &out.view())
        .unwrap();
    let want: Vec<f64> = xs.iter().map(|x| 2.0 - round(*x, DType::F32)).collect();
    assert_close(&g.down(&out), &want, 1e-6, "rsub");
    // Backward ops.
    let grad = g.up(&values(n, 9), DType::F32, &[n]);
    g.dev
        .gpu()
        .binary(
            "relu_bw",
            0.0,
            0.0,
            DType::F32,
            &grad.view(),
            &a.view(),
            &out.view(),
        )
        .unwrap();
    let gv = g.down(&grad);
    let want: Vec<f64> = gv
        .iter()
        .zip(&xs)
        .map(|(g, x)| if *x > 0.0 { *g } else { 0.0 })
        .collect();
    assert_close(&g.down(&out), &want, 1e-6, "relu_bw");
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn casts_between_every_dtype_pair() {
    require_real_gpu();
    let mut g = Gpu::new();
    let vals = [0.0, 1.0, 2.0, 3.0, 100.0, 7.0, 1.0, 0.0, 5.0];
    for from in DType::ALL {
        for to in DType::ALL {
            let src: Vec<f64> = vals.iter().map(|&v| round(v, from)).collect();
            let a = g.up(&src, from, &[3, 3]);
            let out = g.alloc(to, &[3, 3]);
            g.dev.gpu().copy(&a.view(), &out.view()).unwrap();
            let want: Vec<f64> = src.iter().map(|&v| round(v, to)).collect();
            assert_close(&g.down(&out), &want, 0.0, &format!("{from:?} -> {to:?}"));
            // Strided: the transpose, made contiguous.
            let t = Buf {
                layout: Layout {
                    shape: vec![3, 3],
                    strides: vec![1, 3],
                    offset: 0,
                },
                ..g.up(&src, from, &[3, 3])
            };
            g.dev.gpu().copy(&t.view(), &out.view()).unwrap();
            let want_t: Vec<f64> = (0..9)
                .map(|i| round(src[(i % 3) * 3 + i / 3], to))
                .collect();
            assert_close(
                &g.down(&out),
                &want_t,
                0.0,
                &format!("{from:?} -> {to:?} transposed"),
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn fill_and_arange() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in DType::ALL {
        let b = g.alloc(elem, &[37]);
        g.dev.gpu().fill(&b.view(), 1.0, 1).unwrap();
        assert!(g.down(&b).iter().all(|&v| v == 1.0), "{elem:?}");
        g.dev.gpu().fill(&b.view(), 0.0, 0).unwrap();
        assert!(g.down(&b).iter().all(|&v| v == 0.0), "{elem:?}");
    }
    let b = g.alloc(DType::F32, &[10]);
    g.dev.gpu().arange(&b.view(), 1.0, 0.5).unwrap();
    assert_close(
        &g.down(&b),
        &(0..10).map(|i| 1.0 + 0.5 * i as f64).collect::<Vec<_>>(),
        0.0,
        "arange",
    );
}

fn host_reduce(op: ReduceOp, x: &[f64]) -> f64 {
    match op {
        ReduceOp::Sum => x.iter().sum(),
        ReduceOp::Mean => x.iter().sum::<f64>() / x.len() as f64,
        ReduceOp::Max | ReduceOp::Amax => x.iter().cloned().fold(f64::MIN, f64::max),
        ReduceOp::Min | ReduceOp::Amin => x.iter().cloned().fold(f64::MAX, f64::min),
        ReduceOp::Prod => x.iter().product(),
        ReduceOp::ArgMax => {
            x.iter()
                .enumerate()
                .fold((0, f64::MIN), |b, (i, &v)| if v > b.1 { (i, v) } else { b })
                .0 as f64
        }
        ReduceOp::ArgMin => {
            x.iter()
                .enumerate()
                .fold((0, f64::MAX), |b, (i, &v)| if v < b.1 { (i, v) } else { b })
                .0 as f64
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn reductions_over_dims_and_all() {
    require_real_gpu();
    let mut g = Gpu::new();
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
        ReduceOp::Amax,
        ReduceOp::Amin,
        ReduceOp::Prod,
    ];
    for elem in [DType::F32, DType::F64, DType::F16, DType::I64] {
        // [rows, cols] read transposed, so the reduced dim is strided; then every dim, then all.
        for &(rows, cols) in &[(7usize, 5usize), (3, 300_000), (2000, 3)] {
            let xs: Vec<f64> = values(rows * cols, 11)
                .iter()
                .map(|&x| round((x * 100.0).round() / 8.0, elem))
                .collect();
            let a = g.up(&xs, elem, &[rows, cols]);
            for op in ops {
                if op == ReduceOp::Mean && !elem.is_float() {
                    continue;
                }
                let out_elem = match op {
                    ReduceOp::ArgMax | ReduceOp::ArgMin => DType::I64,
                    ReduceOp::Sum | ReduceOp::Prod if !elem.is_float() => DType::I64,
                    _ => elem,
                };
                for dim in [Some(0), Some(1), None] {
                    // A product of many values overflows: products run along the 5-wide rows.
                    if op == ReduceOp::Prod
                        && (rows * cols > 64 || dim != Some(1) || elem == DType::F16)
                    {
                        continue;
                    }
                    let out_shape = match dim {
                        Some(0) => vec![1, cols],
                        Some(_) => vec![rows, 1],
                        None => vec![1, 1],
                    };
                    let out = g.alloc(out_elem, &out_shape);
                    let dims: Vec<usize> = match dim {
                        Some(d) => vec![d],
                        None => vec![0, 1],
                    };
                    g.dev
                        .gpu()
                        .reduce(op, &a.view(), &dims, &out.view(), None, None)
                        .unwrap();
                    let want: Vec<f64> = match dim {
                        Some(0) => (0..cols)
                            .map(|c| {
                                host_reduce(
                                    op,
                                    &(0..rows).map(|r| xs[r * cols + c]).collect::<Vec<_>>(),
                                )
                            })
                            .collect(),
                        Some(_) => (0..rows)
                            .map(|r| host_reduce(op, &xs[r * cols..(r + 1) * cols]))
                            .collect(),
                        None => vec![host_reduce(op, &xs)],
                    };
                    let t = if matches!(op, ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Prod) {
                        tol(elem) * 10.0
                    } else {
                        0.0
                    };
                    let want: Vec<f64> = want
                        .iter()
                        .map(|&w| if t == 0.0 { w } else { round(w, out_elem) })
                        .collect();
                    assert_close(
                        &g.down(&out),
                        &want,
                        t,
                        &format!("{op:?} {elem:?} {rows}x{cols} dim {dim:?}"),
                    );
                }
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn softmax_rows_and_columns_with_backward() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in [DType::F32, DType::F64, DType::BF16] {
        let (r, c) = (4, 1000);
        let xs: Vec<f64> = values(r * c, 21).iter().map(|&x| round(x, elem)).collect();
        let a = g.up(&xs, elem, &[r, c]);
        for (dim, log) in [(1, false), (1, true), (0, false), (0, true)] {
            let out = g.alloc(elem, &[r, c]);
            g.dev
                .gpu()
                .softmax(&a.view(), dim, log, &out.view())
                .unwrap();
            let mut want = vec![0.0; r * c];
            let lines: Vec<Vec<usize>> = if dim == 1 {
                (0..r)
                    .map(|i| (0..c).map(|j| i * c + j).collect())
                    .collect()
            } else {
                (0..c)
                    .map(|j| (0..r).map(|i| i * c + j).collect())
                    .collect()
            };
            for line in &lines {
                let mx = line.iter().map(|&k| xs[k]).fold(f64::MIN, f64::max);
                let s: f64 = line.iter().map(|&k| (xs[k] - mx).exp()).sum();
                for &k in line {
                    want[k] = if log {
                        xs[k] - mx - s.ln()
                    } else {
                        (xs[k] - mx).exp() / s
                    };
                }
            }
            assert_close(
                &g.down(&out),
                &want,
                tol(elem) * 10.0,
                &format!("softmax {elem:?} dim {dim} log {log}"),
            );
            // Backward with grad = 1 everywhere: softmax gives 0, log_softmax 1 - c·softmax.
            let ones = g.up(&vec![1.0; r * c], elem, &[r, c]);
            let dx = g.alloc(elem, &[r, c]);
            g.dev
                .gpu()
                .softmax_backward(&ones.view(), &out.view(), dim, log, &dx.view())
                .unwrap();
            let n = lines[0].len() as f64;
            let want_dx: Vec<f64> = (0..r * c)
                .map(|k| if log { 1.0 - n * (want[k]).exp() } else { 0.0 })
                .collect();
            assert_close(
                &g.down(&dx),
                &want_dx,
                tol(elem) * 50.0,
                &format!("softmax_backward {elem:?} dim {dim} log {log}"),
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn nll_loss_and_scatter() {
    require_real_gpu();
    let mut g = Gpu::new();
    let (n, c) = (5, 4);
    let lp: Vec<f64> = values(n * c, 4);
    // Row 1's target is ignore_index: the mean is over the other four, and total_weight says so.
    let tg = [3.0, -100.0, 1.0, 3.0, 2.0];
    let counted: Vec<usize> = (0..n).filter(|&i| i != 1).collect();
    let logp = g.up(&lp, DType::F32, &[n, c]);
    let target = g.up(&tg, DType::I64, &[n]);
    let out = g.alloc(DType::F32, &[]);
    let total_weight = g.alloc(DType::F32, &[]);
    g.dev
        .gpu()
        .nll_loss(
            &logp.view(),
            &target.view(),
            -100,
            &out.view(),
            &total_weight.view(),
        )
        .unwrap();
    let want = -counted
        .iter()
        .map(|&i| round(lp[i * c + tg[i] as usize], DType::F32))
        .sum::<f64>()
        / counted.len() as f64;
    assert_close(&g.down(&out), &[want], 1e-6, "nll");
    assert_close(&g.down(&total_weight), &[4.0], 0.0, "nll total_weight");
    let grad = g.up(&[2.0], DType::F32, &[]);
    let dx = g.alloc(DType::F32, &[n, c]);
    g.dev
        .gpu()
        .nll_loss_backward(
            &grad.view(),
            &target.view(),
            -100,
            &total_weight.view(),
            &dx.view(),
        )
        .unwrap();
    let want: Vec<f64> = (0..n * c)
        .map(|k| {
            if tg[k / c] as i64 == (k % c) as i64 {
                -2.0 / 4.0
            } else {
                0.0
            }
        })
        .collect();
    assert_close(&g.down(&dx), &want, 1e-6, "nll backward");
    // scatter along dim 1: dst[i, idx[i, 0]] = src[i, 0]
    let tg = [3.0, 0.0, 1.0, 3.0, 2.0];
    let dst = g.up(&vec![0.0; n * c], DType::F32, &[n, c]);
    let src = g.up(&[1.0, 2.0, 3.0, 4.0, 5.0], DType::F32, &[n, 1]);
    let idx = g.up(&tg, DType::I64, &[n, 1]);
    g.dev
        .gpu()
        .scatter(&src.view(), &idx.view(), 1, &dst.view())
        .unwrap();
    let want: Vec<f64> = (0..n * c)
        .map(|k| {
            if tg[k / c] as usize == k % c {
                (k / c + 1) as f64
            } else {
                0.0
            }
        })
        .collect();
    assert_close(&g.down(&dst), &want, 0.0, "scatter");
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn matmul_through_cublas_with_workspace_from_the_caller() {
    require_real_gpu();
    let mut g = Gpu::new();
    let (b, m, k, n) = (2, 33, 17, 9);
    let requested = std::cell::Cell::new(0usize);
    for elem in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let xs: Vec<f64> = values(b * m * k, 31)
            .iter()
            .map(|&x| round(x, elem))
            .collect();
        let ys: Vec<f64> = values(b * k * n, 32)
            .iter()
            .map(|&x| round(x, elem))
            .collect();
        let a = g.up(&xs, elem, &[b, m, k]);
        // rhs given transposed in memory: [b, n, k] storage read as [b, k, n].
        let yt: Vec<f64> = (0..b * n * k)
            .map(|i| {
                let (bb, j, kk) = (i / (n * k), (i / k) % n, i % k);
                ys[bb * k * n + kk * n + j]
            })
            .collect();
        let rb = g.up(&yt, elem, &[b, n, k]);
        let rhs = Buf {
            layout: Layout {
                shape: vec![b, k, n],
                strides: vec![n * k, 1, k],
                offset: 0,
            },
            ..rb
        };
        let out = g.alloc(elem, &[b, m, n]);
        let ws = g.alloc(DType::U8, &[32 << 20]);
        let wsp = ws.ptr;
        let dev = g.dev.clone();
        dev.blas[0]
            .matmul(
                &dev.gpu(),
                &a.view(),
                &rhs.view(),
                &out.view(),
                false,
                torchlet_alloc::stream::DEFAULT_STREAM,
                &|size| {
                    requested.set(requested.get() + size);
                    assert!(size <= 32 << 20);
                    Ok(wsp)
                },
            )
            .unwrap();
        let mut want = vec![0.0; b * m * n];
        for bb in 0..b {
            for i in 0..m {
                for j in 0..n {
                    want[bb * m * n + i * n + j] = (0..k)
                        .map(|kk| xs[bb * m * k + i * k + kk] * ys[bb * k * n + kk * n + j])
                        .sum();
                }
            }
        }
        assert_close(
            &g.down(&out),
            &want,
            tol(elem) * 20.0,
            &format!("matmul {elem:?}"),
        );
    }
    let cap = cuda::devices().unwrap()[0].capability;
    assert_eq!(
        requested.get(),
        cuda::blas::workspace_size(cap),
        "the workspace is asked for once"
    );
    if cap.0 >= 9 {
        assert_eq!(requested.get(), 33554432, "32 MiB on Hopper, as PyTorch");
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn random_fills_normal_and_uniform_any_length() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        for n in [1usize, 7, 100_001] {
            let b = g.alloc(elem, &[n]);
            g.dev.rng.fill(&g.dev.gpu(), &b.view(), true, 42).unwrap();
            let x = g.down(&b);
            assert!(x.iter().all(|v| v.is_finite()));
            if n > 1 {
                assert!(
                    x.windows(2).any(|w| w[0] != w[1]),
                    "{elem:?} {n}: values vary"
                );
            }
            if n > 1000 {
                let mean = x.iter().sum::<f64>() / n as f64;
                let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
                assert!(
                    mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
                    "{elem:?}: mean {mean} var {var}"
                );
            }
            let b2 = g.alloc(elem, &[n]);
            g.dev.rng.fill(&g.dev.gpu(), &b2.view(), true, 42).unwrap();
            assert_eq!(g.down(&b2), x, "same seed, same numbers");
            g.dev.rng.fill(&g.dev.gpu(), &b2.view(), false, 7).unwrap();
            let u = g.down(&b2);
            assert!(
                u.iter().all(|&v| (0.0..1.0).contains(&v)
                    || (elem != DType::F32 && elem != DType::F64 && v <= 1.0)),
                "{elem:?}: uniform in [0, 1)"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn kernels_come_from_the_disk_cache_the_second_time() {
    require_real_gpu();
    let dir = tempfile::tempdir().unwrap();
    let info = &cuda::devices().unwrap()[0];
    let arch = format!("sm_{}{}", info.capability.0, info.capability.1);
    let t = std::time::Instant::now();
    let (first, cached) =
        cuda::compile::cubin_in(Some(dir.path()), DType::F32, &arch, 13000).unwrap();
    let compile_time = t.elapsed();
    assert!(!cached);
    let t = std::time::Instant::now();
    let (second, cached) =
        cuda::compile::cubin_in(Some(dir.path()), DType::F32, &arch, 13000).unwrap();
    assert!(cached && first == second);
    eprintln!(
        "NVRTC compile {compile_time:?}, cache hit {:?}",
        t.elapsed()
    );
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn philox_fills_are_counter_based_for_every_float_dtype() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let n = 200_003; // not a multiple of 4: the last group is partial
        let b = g.alloc(elem, &[n]);
        g.dev.gpu().philox(&b.view(), 9, 0, true).unwrap();
        let x = g.down(&b);
        let mean = x.iter().sum::<f64>() / n as f64;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "{elem:?}: mean {mean} var {var}"
        );
        // A shorter fill with the same seed is a prefix of the longer one.
        let short = g.alloc(elem, &[5]);
        g.dev.gpu().philox(&short.view(), 9, 0, true).unwrap();
        assert_eq!(g.down(&short), x[..5].to_vec());
        g.dev.gpu().philox(&b.view(), 9, 1, false).unwrap();
        let u = g.down(&b);
        assert!(u.iter().all(|&v| (0.0..=1.0).contains(&v)));
        let mean = u.iter().sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "{elem:?}: uniform mean {mean}");
    }
}

/// `vals` uploaded `offset` elements into a fresh buffer, as a view starting there (an offset of
/// one element leaves the view off every 16-byte boundary).
fn up_at(g: &mut Gpu, vals: &[f64], elem: DType, shape: &[usize], offset: usize) -> Buf {
    let mut padded = vec![0.0; offset];
    padded.extend_from_slice(vals);
    let mut b = g.up(&padded, elem, &[padded.len()]);
    b.layout.shape = shape.to_vec();
    b.layout.strides = strides_of(shape);
    b.layout.offset = offset;
    b
}

/// Row lengths that reach each row-kernel path: a few lanes of a warp, whole warps, one to eight
/// vectors a lane, a block per row (64 to 1024 threads), and past registers (multi-pass).
const ROW_LENGTHS: [usize; 14] = [
    1, 3, 8, 31, 33, 128, 1000, 1024, 1032, 4096, 4100, 8192, 16384, 20000,
];

/// Softmax over rows of `d` and its backward, from the host formulas, for `rows` rows.
fn host_softmax(xs: &[f64], d: usize, log: bool) -> Vec<f64> {
    xs.chunks(d)
        .flat_map(|row| {
            let mx = row.iter().cloned().fold(f64::MIN, f64::max);
            let s: f64 = row.iter().map(|&x| (x - mx).exp()).sum();
            row.iter().map(move |&x| {
                if log {
                    x - mx - s.ln()
                } else {
                    (x - mx).exp() / s
                }
            })
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn softmax_row_kernels_for_every_length_alignment_and_dtype() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        for d in ROW_LENGTHS {
            // Many rows for short ones: several rows a block, and a last block part empty.
            let rows = if d <= 128 { 37 } else { 3 };
            for offset in [0, 1] {
                let xs: Vec<f64> = values(rows * d, d as u64)
                    .iter()
                    .map(|&x| round(x, elem))
                    .collect();
                let gs: Vec<f64> = values(rows * d, d as u64 + 7)
                    .iter()
                    .map(|&x| round(x, elem))
                    .collect();
                let x = up_at(&mut g, &xs, elem, &[rows, d], offset);
                let gr = up_at(&mut g, &gs, elem, &[rows, d], offset);
                for log in [false, true] {
                    let what = format!("{elem:?} {rows}x{d} offset {offset} log {log}");
                    let y = g.alloc(elem, &[rows, d]);
                    g.dev.gpu().softmax(&x.view(), 1, log, &y.view()).unwrap();
                    let want = host_softmax(&xs, d, log);
                    assert_close(&g.down(&y), &want, tol(elem) * 10.0, &what);
                    // Backward from the forward output as the GPU wrote it.
                    let ys = g.down(&y);
                    let dx = g.alloc(elem, &[rows, d]);
                    g.dev
                        .gpu()
                        .softmax_backward(&gr.view(), &y.view(), 1, log, &dx.view())
                        .unwrap();
                    let want_dx: Vec<f64> = (0..rows)
                        .flat_map(|r| {
                            let (gv, yv) = (&gs[r * d..(r + 1) * d], &ys[r * d..(r + 1) * d]);
                            let s: f64 = if log {
                                gv.iter().sum()
                            } else {
                                gv.iter().zip(yv).map(|(a, b)| a * b).sum()
                            };
                            gv.iter()
                                .zip(yv)
                                .map(|(&a, &b)| if log { a - b.exp() * s } else { b * (a - s) })
                                .collect::<Vec<_>>()
                        })
                        .collect();
                    let t = tol(elem) * 50.0 * (1.0 + (d as f64).sqrt() / 10.0);
                    assert_close(&g.down(&dx), &want_dx, t, &format!("backward {what}"));
                }
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn layer_norm_row_kernels_for_every_length_alignment_and_dtype() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let stat = if elem == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        for n in ROW_LENGTHS {
            let rows = if n <= 128 { 37 } else { 3 };
            for (offset, affine) in [(0, true), (1, true), (0, false)] {
                let what = format!("{elem:?} {rows}x{n} offset {offset} affine {affine}");
                let r = |v: Vec<f64>| -> Vec<f64> { v.iter().map(|&x| round(x, elem)).collect() };
                let xs = r(values(rows * n, n as u64 + 3));
                let (ws, bs) = (r(values(n, 5)), r(values(n, 6)));
                let x = up_at(&mut g, &xs, elem, &[rows, n], offset);
                let w = up_at(&mut g, &ws, elem, &[n], offset);
                let b = up_at(&mut g, &bs, elem, &[n], offset);
                let (y, mean, rstd) = (
                    g.alloc(elem, &[rows, n]),
                    g.alloc(stat, &[rows]),
                    g.alloc(stat, &[rows]),
                );
                let (wv, bv) = (w.view(), b.view());
                g.dev
                    .gpu()
                    .layer_norm(
                        &x.view(),
                        affine.then_some(&wv),
                        affine.then_some(&bv),
                        1e-5,
                        &y.view(),
                        Some(&mean.view()),
                        &rstd.view(),
                    )
                    .unwrap();
                let (mut want, mut want_mu, mut want_rs) = (Vec::new(), Vec::new(), Vec::new());
                for row in xs.chunks(n) {
                    let mu = row.iter().sum::<f64>() / n as f64;
                    let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n as f64;
                    let rs = 1.0 / (var + 1e-5).sqrt();
                    want_mu.push(mu);
                    want_rs.push(rs);
                    for (j, v) in row.iter().enumerate() {
                        let h = (v - mu) * rs;
                        want.push(if affine { h * ws[j] + bs[j] } else { h });
                    }
                }
                let t = tol(elem) * 10.0;
                assert_close(&g.down(&y), &want, t, &what);
                assert_close(
                    &g.down(&mean),
                    &want_mu,
                    tol(stat) * 10.0,
                    &format!("mean {what}"),
                );
                assert_close(
                    &g.down(&rstd),
                    &want_rs,
                    tol(stat) * 10.0,
                    &format!("rstd {what}"),
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn sums_over_contiguous_runs_at_any_alignment() {
    require_real_gpu();
    let mut g = Gpu::new();
    for elem in [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I32,
        DType::U8,
    ] {
        for n in [1usize, 3, 15, 16, 17, 1000, 4099, 100_003] {
            for offset in [0, 1, 3] {
                let xs: Vec<f64> = values(n, n as u64)
                    .iter()
                    .map(|&x| {
                        round(
                            if elem.is_float() {
                                x
                            } else {
                                (x + 3.0).round()
                            },
                            elem,
                        )
                    })
                    .collect();
                let a = up_at(&mut g, &xs, elem, &[n], offset);
                let out_elem = if elem.is_float() { elem } else { DType::I64 };
                let out = g.alloc(out_elem, &[1]);
                g.dev
                    .gpu()
                    .reduce(ReduceOp::Sum, &a.view(), &[0], &out.view(), None, None)
                    .unwrap();
                let want = round(xs.iter().sum(), out_elem);
                let t = if elem.is_float() {
                    tol(elem) * 10.0
                } else {
                    0.0
                };
                assert_close(
                    &g.down(&out),
                    &[want],
                    t,
                    &format!("sum {elem:?} n {n} offset {offset}"),
                );
            }
        }
    }
}
