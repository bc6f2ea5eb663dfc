//! Reduction scratch: torchlet's reduction plan against every case PyTorch 2.11 recorded on an
//! H200 (`tests/data/torch_reduce_scratch.json`, by `tests/data/record_reduce_scratch.py`).
use crate::common;
use common::device_test;

use std::sync::Arc;

use serde_json::Value;
use torchlet_alloc::{DeviceAllocator, HistoryOptions, TraceAction};
use torchlet_core::device::reduce_plan::{staging, DeviceProps, KernelTraits, Staging};
use torchlet_core::device::{Device, ReduceOp};
use torchlet_core::tensor::{DType, Tensor, TensorOptions};

/// The recorded cases.
fn cases() -> Vec<Value> {
    let text = include_str!("../data/torch_reduce_scratch.json");
    let doc: Value = serde_json::from_str(text).expect("recorded JSON parses");
    assert_eq!(doc["multi_processor_count"], 132);
    assert_eq!(doc["max_threads_per_multi_processor"], 2048);
    doc["cases"].as_array().expect("cases").clone()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_u64().expect("size") as usize)
        .collect()
}

/// The row's allocator events as (action, bytes), snapshot and segment events left out.
fn events(row: &Value) -> Vec<(String, usize)> {
    row["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e[0].as_str().unwrap().to_owned(),
                e[1].as_u64().unwrap() as usize,
            )
        })
        .filter(|(a, _)| a == "alloc" || a == "free_completed")
        .collect()
}

/// What the recorded events say besides the outputs: the staging (buffer, semaphores) and any
/// copy of the input, checking that frees come in reverse order of the allocations.
fn recorded_extras(row: &Value) -> (Option<(usize, usize)>, Option<usize>) {
    let outputs = row["out_shapes"].as_array().unwrap().len();
    let ev = events(row);
    let (outs, rest) = ev.split_at(outputs);
    assert!(
        outs.iter().all(|(a, _)| a == "alloc"),
        "{row}: outputs first"
    );
    let allocs: Vec<usize> = rest
        .iter()
        .filter(|(a, _)| a == "alloc")
        .map(|e| e.1)
        .collect();
    let frees: Vec<usize> = rest
        .iter()
        .filter(|(a, _)| a != "alloc")
        .map(|e| e.1)
        .collect();
    let reversed: Vec<usize> = allocs.iter().rev().copied().collect();
    assert_eq!(
        frees, reversed,
        "{row}: temporaries freed last-in first-out"
    );
    assert!(
        rest[..allocs.len()].iter().all(|(a, _)| a == "alloc"),
        "{row}"
    );
    match allocs.as_slice() {
        [] => (None, None),
        [copy] => (None, Some(*copy)),
        [buf, sem] => (Some((*buf, *sem)), None),
        [copy, buf, sem] => (Some((*buf, *sem)), Some(*copy)),
        other => panic!("{row}: unexpected allocations {other:?}"),
    }
}

fn dtype(row: &Value) -> DType {
    DType::parse(row["dtype"].as_str().unwrap()).expect("dtype")
}

/// The op torchlet runs for the row, and whether it writes indices along with values.
fn op(row: &Value) -> (ReduceOp, bool) {
    match row["op"].as_str().unwrap() {
        "sum" => (ReduceOp::Sum, false),
        "mean" => (ReduceOp::Mean, false),
        "amax" | "max" => (ReduceOp::Max, false),
        "min" => (ReduceOp::Min, false),
        "max_dim" => (ReduceOp::Max, true),
        "min_dim" => (ReduceOp::Min, true),
        "argmax" => (ReduceOp::ArgMax, false),
        "argmin" => (ReduceOp::ArgMin, false),
        other => panic!("unknown op {other}"),
    }
}

/// The reduced dims of the row (every dim when `dim` is null; none of a 0-d tensor).
fn reduced(row: &Value, ndim: usize) -> Vec<usize> {
    let wrap = |d: i64| {
        if d < 0 {
            (d + ndim as i64) as usize
        } else {
            d as usize
        }
    };
    match &row["dim"] {
        Value::Null => (0..ndim).collect(),
        Value::Array(ds) => ds.iter().map(|d| wrap(d.as_i64().unwrap())).collect(),
        d => {
            let d = wrap(d.as_i64().unwrap());
            if ndim == 0 {
                vec![]
            } else {
                vec![d]
            }
        }
    }
}

/// The staging torchlet plans for the row: over the input as PyTorch's kernel reads it (an
/// int64 copy for integer sums, a contiguous copy for whole max/min/argmax/argmin).
fn planned(row: &Value) -> Option<Staging> {
    let (op, indices) = op(row);
    let sizes = usizes(&row["shape"]);
    let mut strides = usizes(&row["strides"]);
    let mut offset = row["storage_offset"].as_u64().unwrap() as usize;
    let (_, copy) = recorded_extras(row);
    if copy.is_some() {
        // Whatever was copied is read from the copy: contiguous, at the start of its block.
        strides = contiguous(&sizes);
        offset = 0;
    }
    let traits = KernelTraits::of(op, dtype(row), indices);
    let dims = reduced(row, sizes.len());
    staging(&sizes, &strides, offset, &dims, &traits, &DeviceProps::H200)
}

fn contiguous(sizes: &[usize]) -> Vec<usize> {
    let mut st = vec![1; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * sizes[d + 1].max(1);
    }
    st
}

#[test]
fn plan_matches_every_recorded_case() {
    let rows = cases();
    assert!(rows.len() > 700, "{} cases", rows.len());
    let mut staged = 0;
    for row in &rows {
        assert!(row.get("error").is_none(), "{row}");
        let (want, _) = recorded_extras(row);
        let got = planned(row).map(|s| (s.buffer_bytes, s.semaphore_bytes));
        assert_eq!(got, want, "staging of {row}");
        staged += want.is_some() as usize;
    }
    assert!(staged > 200, "{staged} staged cases");
}

/// The row's input on `device`, laid out as PyTorch's was (same strides and storage offset).
fn input(row: &Value, device: Device) -> Tensor {
    let shape = usizes(&row["shape"]);
    let o = TensorOptions::default().dtype(dtype(row)).device(device);
    let zeros = |s: &[usize]| Tensor::zeros(s, &o).unwrap();
    let n: usize = shape.iter().product();
    let x = match row["layout"].as_str().unwrap() {
        "contiguous" => zeros(&shape),
        "t" => zeros(&[shape[1], shape[0]]).t().unwrap(),
        "slice" => {
            let mut wide = shape.clone();
            wide.push(2);
            zeros(&wide)
                .narrow(-1, 0, 1)
                .unwrap()
                .squeeze(Some(-1))
                .unwrap()
        }
        "offset" => {
            let dims: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
            zeros(&[n + 1])
                .narrow(0, 1, n)
                .unwrap()
                .view(&dims)
                .unwrap()
        }
        "permute" => zeros(&[shape[1], shape[0], shape[2]])
            .permute(&[1, 0, 2])
            .unwrap(),
        other => panic!("unknown layout {other}"),
    };
    assert_eq!(x.shape(), shape, "{row}");
    assert_eq!(x.stride(), usizes(&row["strides"]), "{row}: strides");
    assert_eq!(
        x.storage_offset() as u64,
        row["storage_offset"].as_u64().unwrap(),
        "{row}"
    );
    x
}

/// The row's op in torchlet (`None`: torchlet has no such op, or no list-of-dims form).
fn run(row: &Value, x: &Tensor) -> Option<Tensor> {
    let dim = match &row["dim"] {
        Value::Null => None,
        Value::Array(_) => return None,
        d => Some(d.as_i64().unwrap() as isize),
    };
    let keep = row["keepdim"].as_bool().unwrap();
    let r = match row["op"].as_str().unwrap() {
        "sum" => x.sum(dim, keep),
        "mean" => x.mean(dim, keep),
        "max" => x.max(None, false),
        "min" => x.min(None, false),
        "max_dim" => x.max(dim, keep),
        "min_dim" => x.min(dim, keep),
        "argmax" => x.argmax(dim, keep),
        "argmin" => x.argmin(dim, keep),
        _ => return None,
    };
    Some(r.unwrap())
}

/// Alloc and free_completed events of the allocator's trace, as (action, bytes).
fn trace(a: &Arc<dyn DeviceAllocator>) -> Vec<(String, usize)> {
    let snap = a.snapshot();
    snap.device_traces[0]
        .iter()
        .filter_map(|e| match e.action {
            TraceAction::Alloc => Some(("alloc".to_owned(), e.size as usize)),
            TraceAction::FreeCompleted => Some(("free_completed".to_owned(), e.size as usize)),
            _ => None,
        })
        .collect()
}

/// What PyTorch allocated and freed during the row's call; torchlet's `max(dim)`/`min(dim)`
/// return the values alone, so their indices are freed on return, as with `.values` in Python.
fn expected(row: &Value) -> Vec<(String, usize)> {
    let mut ev = events(row);
    if matches!(row["op"].as_str().unwrap(), "max_dim" | "min_dim") {
        let idx = ev[1].clone();
        ev.push(("free_completed".to_owned(), idx.1));
    }
    ev
}

#[test]
fn gpu_reductions_allocate_what_pytorch_allocates_in_its_order() {
    let (_guard, a) = common::gpu();
    let mut checked = 0;
    let mut big_kinds = std::collections::HashSet::new();
    for row in cases() {
        // Inputs of 2^24 elements and more take most of the time on a simulated GPU: run one of
        // each op, dtype and layout (the plan test above covers every one of them).
        let numel: usize = usizes(&row["shape"]).iter().product();
        let kind = (
            row["op"].to_string(),
            row["dtype"].to_string(),
            row["layout"].to_string(),
        );
        if numel >= 1 << 24 && !big_kinds.insert(kind) {
            continue;
        }
        let x = input(&row, Device::Cuda(0));
        a.record_memory_history(HistoryOptions {
            clear_history: true,
            ..Default::default()
        });
        let Some(out) = run(&row, &x) else { continue };
        let got = trace(&a);
        a.record_memory_history(HistoryOptions::disabled());
        assert_eq!(got, expected(&row), "allocator events of {row}");
        drop(out);
        checked += 1;
    }
    assert!(checked > 420, "{checked} cases checked");
}

#[test]
fn cpu_reductions_allocate_no_staging() {
    // The host has no caching allocator and no plan: the staging exists only on CUDA devices.
    assert!(torchlet_core::device::cpu_backend().props().is_none());
}

/// The allocator events of `op` on a tensor of ones of `shape` on cuda:0.
fn events_of(shape: &[usize], op: impl FnOnce(&Tensor) -> Tensor) -> Vec<(String, usize)> {
    let (_guard, a) = common::gpu();
    let x = Tensor::ones(shape, &TensorOptions::default().device(Device::Cuda(0))).unwrap();
    a.record_memory_history(HistoryOptions {
        clear_history: true,
        ..Default::default()
    });
    let out = op(&x);
    let got = trace(&a);
    a.record_memory_history(HistoryOptions::disabled());
    drop(out);
    got
}

fn ev(list: &[(&str, usize)]) -> Vec<(String, usize)> {
    list.iter().map(|&(a, n)| (a.to_owned(), n)).collect()
}

#[test]
fn whole_sum_of_2_24_floats_stages_2112_bytes_and_4_of_semaphores() {
    let got = events_of(&[1 << 24], |x| x.sum(None, false).unwrap());
    let want = [
        ("alloc", 4),
        ("alloc", 2112),
        ("alloc", 4),
        ("free_completed", 4),
        ("free_completed", 2112),
    ];
    assert_eq!(got, ev(&want));
}

#[test]
fn column_sum_of_4096_squared_stages_128_mib_and_128_bytes_of_semaphores() {
    let got = events_of(&[4096, 4096], |x| x.sum(Some(0), false).unwrap());
    let want = [
        ("alloc", 16384),
        ("alloc", 134217728),
        ("alloc", 128),
        ("free_completed", 128),
        ("free_completed", 134217728),
    ];
    assert_eq!(got, ev(&want));
}

/// Integers in [-504, 504], each value many times over, so max/min have ties to break.
fn values(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 7919) % 1009) as f64 - 504.0).collect()
}

/// (value, first index) of the largest (`max`) or smallest element of `xs`.
fn extreme(xs: &[f64], max: bool) -> (f64, usize) {
    let mut best = (xs[0], 0);
    for (i, &x) in xs.iter().enumerate() {
        if (max && x > best.0) || (!max && x < best.0) {
            best = (x, i);
        }
    }
    best
}

device_test!(
    fn reductions_split_across_blocks_compute_the_same_results_on_every_device(device: Device) {
        let (rows, cols) = (3000, 300);
        let h = DeviceProps::H200;
        let f32_sum = KernelTraits::of(ReduceOp::Sum, DType::F32, false);
        let pair = KernelTraits::of(ReduceOp::Max, DType::F32, true);
        // The shapes below are ones a GPU's plan splits across blocks.
        assert!(staging(&[rows * cols], &[1], 0, &[0], &f32_sum, &h).is_some());
        assert!(staging(&[rows, cols], &[cols, 1], 0, &[0], &pair, &h).is_some());
        assert!(staging(&[cols, rows], &[1, cols], 0, &[1], &pair, &h).is_some());
        let xs = values(rows * cols);
        let col = |c: usize| (0..rows).map(|r| xs[r * cols + c]).collect::<Vec<f64>>();
        // cuda:0's allocator is shared with the tests that record its history.
        let _guard = common::gpu();
        let o = TensorOptions::default().device(device);
        let v = xs
            .iter()
            .map(|&x| torchlet_core::tensor::Scalar::Float(x))
            .collect();
        let x = Tensor::from_values(v, vec![rows, cols], &o).unwrap();
        let got = |t: Tensor| t.to_vec_f64().unwrap();
        let total: f64 = xs.iter().sum();
        assert_eq!(
            got(x.sum(None, false).unwrap()),
            vec![total],
            "sum on {device}"
        );
        let mean = got(x.mean(None, false).unwrap())[0];
        assert!(
            (mean - total / xs.len() as f64).abs() < 1e-6,
            "mean on {device}"
        );
        let (mx, at) = extreme(&xs, true);
        assert_eq!(
            got(x.max(None, false).unwrap()),
            vec![mx],
            "max on {device}"
        );
        assert_eq!(
            got(x.argmax(None, false).unwrap()),
            vec![at as f64],
            "argmax on {device}"
        );
        let (mn, min_at) = extreme(&xs, false);
        assert_eq!(
            got(x.min(None, false).unwrap()),
            vec![mn],
            "min on {device}"
        );
        assert_eq!(
            got(x.argmin(None, false).unwrap()),
            vec![min_at as f64],
            "argmin on {device}"
        );
        // Along dim 0 of x and dim 1 of its transpose: values, and first indices of the ties.
        for (t, d) in [(x.clone(), 0), (x.t().unwrap(), 1)] {
            let want: Vec<(f64, usize)> = (0..cols).map(|c| extreme(&col(c), true)).collect();
            let vals = got(t.max(Some(d), false).unwrap());
            let idx = got(t.argmax(Some(d), false).unwrap());
            assert_eq!(
                vals,
                want.iter().map(|w| w.0).collect::<Vec<_>>(),
                "max({d}) on {device}"
            );
            let first: Vec<f64> = want.iter().map(|w| w.1 as f64).collect();
            assert_eq!(idx, first, "argmax({d}) on {device}");
            let lows: Vec<f64> = (0..cols)
                .map(|c| extreme(&col(c), false).1 as f64)
                .collect();
            let low_idx = got(t.argmin(Some(d), false).unwrap());
            assert_eq!(low_idx, lows, "argmin({d}) on {device}");
            let sums: Vec<f64> = (0..cols).map(|c| col(c).iter().sum()).collect();
            assert_eq!(
                got(t.sum(Some(d), false).unwrap()),
                sums,
                "sum({d}) on {device}"
            );
        }
    }
);

device_test!(
    fn long_whole_sums_from_an_unaligned_start_compute_the_same_on_every_device(device: Device) {
        // 18 700 periods of 1009 values, summed from the second element: one element past a 16-byte
        // boundary, so a head comes before the first aligned load and a tail after the last. The GPU
        // plan splits it over many blocks, each slice long enough for the 512-thread sum kernel (eight
        // 16-byte loads a thread, float16 too).
        let period = values(1009);
        let periods = 18_700;
        let n = period.len() * periods;
        for (dtype, per_load) in [(DType::F32, 4), (DType::F16, 8)] {
            let traits = KernelTraits::of(ReduceOp::Sum, dtype, false);
            let plan =
                staging(&[n - 1], &[1], 1, &[0], &traits, &DeviceProps::H200).expect("split");
            let slice = (n - 1) / plan.ctas_per_output;
            assert!(slice >= 8 * 512 * per_load, "{dtype:?}: {plan:?}");
        }
        // A whole period sums to 0 and every partial sum is a small integer, exact in float32.
        let total = -period[0];
        let _guard = common::gpu();
        let o = TensorOptions::default().device(device);
        let v = period
            .iter()
            .map(|&x| torchlet_core::tensor::Scalar::Float(x))
            .collect();
        let x = Tensor::from_values(v, vec![1, period.len()], &o).unwrap();
        let x = x.repeat(&[periods, 1]).unwrap().reshape(&[-1]).unwrap();
        let tail = x.narrow(0, 1, n - 1).unwrap();
        let got = tail.sum(None, false).unwrap().to_vec_f64().unwrap();
        assert_eq!(got, vec![total], "sum on {device}");
        let half = tail.to_dtype(DType::F16).unwrap().sum(None, false).unwrap();
        assert_eq!(
            half.to_vec_f64().unwrap(),
            vec![total],
            "float16 sum on {device}"
        );
    }
);
