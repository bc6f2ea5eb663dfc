//! Reduction scratch: torchlet's reduction plan against every case PyTorch 2.11 recorded on an
//! H200 (`tests/data/torch_reduce_scratch.json`, by `tests/data/record_reduce_scratch.py`).

use serde_json::Value;
use torchlet::device::reduce_plan::{staging, DeviceProps, KernelTraits, Staging};
use torchlet::device::ReduceOp;
use torchlet::tensor::DType;

/// The recorded cases.
fn cases() -> Vec<Value> {
    let text = include_str!("data/torch_reduce_scratch.json");
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
        .map(|e| (e[0].as_str().unwrap().to_owned(), e[1].as_u64().unwrap() as usize))
        .filter(|(a, _)| a == "alloc" || a == "free_completed")
        .collect()
}

/// What the recorded events say besides the outputs: the staging (buffer, semaphores) and any
/// copy of the input, checking that frees come in reverse order of the allocations.
fn recorded_extras(row: &Value) -> (Option<(usize, usize)>, Option<usize>) {
    let outputs = row["out_shapes"].as_array().unwrap().len();
    let ev = events(row);
    let (outs, rest) = ev.split_at(outputs);
    assert!(outs.iter().all(|(a, _)| a == "alloc"), "{row}: outputs first");
    let allocs: Vec<usize> = rest.iter().filter(|(a, _)| a == "alloc").map(|e| e.1).collect();
    let frees: Vec<usize> = rest.iter().filter(|(a, _)| a != "alloc").map(|e| e.1).collect();
    let reversed: Vec<usize> = allocs.iter().rev().copied().collect();
    assert_eq!(frees, reversed, "{row}: temporaries freed last-in first-out");
    assert!(rest[..allocs.len()].iter().all(|(a, _)| a == "alloc"), "{row}");
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
    let wrap = |d: i64| if d < 0 { (d + ndim as i64) as usize } else { d as usize };
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
