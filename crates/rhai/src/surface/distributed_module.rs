//! `cuda::all_reduce`, `cuda::broadcast` and `cuda::all_gather`: collectives over an array of
//! tensors, one per CUDA device (NCCL on real GPUs, a host implementation on simulated ones).
use super::documented::DocumentedModule;
use rhai::{Array, Dynamic, Module, INT};

use super::convert::{OrRaise, Res};
use super::errors::{type_error, value_error};
use torchlet_core::device::collective::AllReduceOp;
use torchlet_core::tensor::{collective, Tensor};

/// The tensors of a script array, or a TypeError naming the first element that is not one.
fn tensors(what: &str, list: &Array) -> Res<Vec<Tensor>> {
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.read_lock::<Tensor>()
                .map(|t| t.clone())
                .ok_or_else(|| {
                    type_error(format!(
                        "cuda::{what}: element {i} of the list is {}, not a Tensor; pass one tensor per CUDA device",
                        v.type_name()
                    ))
                })
        })
        .collect()
}

fn all_reduce(list: &Array, op: &str) -> Res<()> {
    let op = AllReduceOp::parse(op).ok_or_else(|| {
        value_error(format!(
            "cuda::all_reduce: unknown op \"{op}\"; use \"sum\", \"prod\", \"max\" or \"min\""
        ))
    })?;
    collective::all_reduce(&tensors("all_reduce", list)?, op).or_raise()
}

fn broadcast(list: &Array, src: INT) -> Res<()> {
    let src = usize::try_from(src)
        .map_err(|_| value_error(format!("cuda::broadcast: src {src} must be 0 or more")))?;
    collective::broadcast(&tensors("broadcast", list)?, src).or_raise()
}

fn all_gather(list: &Array) -> Res<Array> {
    let out = collective::all_gather(&tensors("all_gather", list)?).or_raise()?;
    Ok(out.into_iter().map(Dynamic::from).collect())
}

/// Add the collectives to the `cuda` module.
pub(crate) fn register(m: &mut Module) {
    m.register_doc("all_reduce", &["cuda::all_reduce([t0, t1, …][, op]) — in place: each tensor (one per CUDA device) becomes the \"sum\" (or \"prod\", \"max\", \"min\") of all; NCCL on real GPUs"], |list: Array| all_reduce(&list, "sum"));
    m.set_native_fn("all_reduce", |list: Array, op: &str| all_reduce(&list, op));
    m.register_doc("broadcast", &["cuda::broadcast([t0, t1, …][, src]) — in place: each tensor (one per CUDA device) becomes a copy of the list's element src (default 0)"], |list: Array| broadcast(&list, 0));
    m.set_native_fn("broadcast", |list: Array, src: INT| broadcast(&list, src));
    m.register_doc("all_gather", &["cuda::all_gather([t0, t1, …]) — one new tensor per device, shaped [len, …shape], whose row r is the list's tensor r"], |list: Array| all_gather(&list));
}
