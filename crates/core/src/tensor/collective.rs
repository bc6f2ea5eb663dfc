//! Collectives over a list of tensors, one per CUDA device (`all_reduce`, `broadcast`,
//! `all_gather`): checks the list as PyTorch's NCCL bindings do, then runs `device::collective`.

use crate::device::collective::{self, AllReduceOp, Buffer};
use crate::device::Device;

use super::{check_interrupt, Result, Tensor, TensorError};

fn invalid(what: &str, message: String) -> TensorError {
    TensorError::runtime(format!("{what}: {message}"))
}

/// One contiguous tensor per distinct CUDA device, all of one dtype and shape.
fn check(what: &str, tensors: &[Tensor]) -> Result<()> {
    check_interrupt()?;
    let Some(first) = tensors.first() else {
        return Err(invalid(
            what,
            "expected a list of tensors, one per CUDA device, but got an empty list".into(),
        ));
    };
    let mut seen: Vec<(usize, Device)> = Vec::new();
    for (r, t) in tensors.iter().enumerate() {
        let device = t.device();
        if !device.is_cuda() {
            return Err(invalid(what, format!(
                "tensor {r} is on {device}; collectives take one tensor per CUDA device (move it with .cuda(n))"
            )));
        }
        if let Some((other, _)) = seen.iter().find(|(_, d)| *d == device) {
            return Err(invalid(what, format!(
                "tensors {other} and {r} are both on {device}; collectives take one tensor per device"
            )));
        }
        seen.push((r, device));
        if t.dtype() != first.dtype() {
            return Err(invalid(
                what,
                format!(
                "tensor {r} has dtype {} but tensor 0 has {}; all tensors must have the same dtype",
                t.dtype().name(),
                first.dtype().name()
            ),
            ));
        }
        if t.dims() != first.dims() {
            return Err(invalid(what, format!(
                "tensor {r} has shape {:?} but tensor 0 has {:?}; all tensors must have the same shape",
                t.dims(),
                first.dims()
            )));
        }
        if !t.is_contiguous() {
            return Err(invalid(what, format!(
                "tensor {r} is not contiguous; collectives work in place on contiguous memory (use .contiguous() first)"
            )));
        }
    }
    Ok(())
}

fn buffers(tensors: &[Tensor]) -> Vec<Buffer> {
    tensors
        .iter()
        .map(|t| Buffer {
            backend: t.backend().clone(),
            ptr: t.data_ptr(),
        })
        .collect()
}

/// In place: each tensor becomes the elementwise `op` of all of them (sum by default in scripts).
pub fn all_reduce(tensors: &[Tensor], op: AllReduceOp) -> Result<()> {
    check("all_reduce", tensors)?;
    let first = &tensors[0];
    collective::all_reduce(&buffers(tensors), first.dtype(), first.numel(), op)?;
    tensors.iter().for_each(Tensor::bump_version);
    Ok(())
}

/// In place: each tensor becomes a copy of `tensors[src]` (`src` is a position in the list).
pub fn broadcast(tensors: &[Tensor], src: usize) -> Result<()> {
    check("broadcast", tensors)?;
    if src >= tensors.len() {
        return Err(invalid(
            "broadcast",
            format!(
                "src {src} is out of range: it is a position in the list of {} tensors",
                tensors.len()
            ),
        ));
    }
    let first = &tensors[0];
    collective::broadcast(&buffers(tensors), first.dtype(), first.numel(), src)?;
    tensors.iter().for_each(Tensor::bump_version);
    Ok(())
}

/// One new tensor per input's device, of shape `[len, ..shape]`: `out[r]` is `tensors[r]`.
pub fn all_gather(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    check("all_gather", tensors)?;
    let first = &tensors[0];
    let mut shape = vec![tensors.len()];
    shape.extend_from_slice(first.dims());
    let outputs = tensors
        .iter()
        .map(|t| Tensor::empty_on(&shape, t.dtype(), t.device()))
        .collect::<Result<Vec<_>>>()?;
    collective::all_gather(
        &buffers(tensors),
        &buffers(&outputs),
        first.dtype(),
        first.numel(),
    )?;
    Ok(outputs)
}
