//! Collectives over one buffer per CUDA device (`all_reduce`, `broadcast`, `all_gather`): NCCL on
//! real GPUs, and on simulated GPUs a host implementation with the same in-place semantics that,
//! like NCCL, takes no memory from the devices' caching allocators.

use std::sync::Arc;

use torchlet_alloc::types::element::{load_f64, load_i64, store_f64, store_i64};
use torchlet_alloc::types::{DType, Result, TensorError};
use torchlet_alloc::DevicePtr;

use super::cuda::nccl::{self, NcclOp};
use super::reduction::Fold;
use super::{is_simulated, Backend, Device};

/// How `all_reduce` combines the devices' values: a reduction's fold, parsed from
/// torch.distributed.ReduceOp's names by [`Fold::parse`].
pub type AllReduceOp = Fold;

/// `op` on bool values: sum is or and product is and (max and min), as PyTorch maps them onto
/// NCCL.
fn on_bool(op: Fold) -> Fold {
    match op {
        Fold::Sum | Fold::Max => Fold::Max,
        Fold::Prod | Fold::Min => Fold::Min,
    }
}

/// One device's contiguous buffer taking part in a collective.
#[derive(Clone)]
pub struct Buffer {
    /// The device's backend.
    pub backend: Arc<dyn Backend>,
    /// Address of the first element.
    pub ptr: DevicePtr,
}

impl Buffer {
    fn index(&self) -> usize {
        match self.backend.device() {
            Device::Cuda(i) => i,
            Device::Cpu | Device::Meta => 0,
        }
    }
    fn read(&self, bytes: usize) -> Result<Vec<u8>> {
        let mut host = vec![0u8; bytes];
        if bytes > 0 {
            self.backend.read_bytes(self.ptr, &mut host)?;
        }
        Ok(host)
    }
    fn write(&self, host: &[u8]) -> Result<()> {
        if host.is_empty() {
            return Ok(());
        }
        self.backend.write_bytes(self.ptr, host)
    }
}

/// Whether every buffer's device holds values: on shapes-only GPUs (`torchlet fit`) a collective
/// moves nothing, as it allocates nothing.
fn hold_values(buffers: &[Buffer]) -> bool {
    buffers.iter().all(|b| b.backend.has_values())
}

/// Whether the buffers live on real GPUs (so NCCL runs the collective).
fn on_real_gpus(buffers: &[Buffer]) -> bool {
    !is_simulated() && buffers.iter().all(|b| b.backend.device().is_cuda())
}

fn devices(buffers: &[Buffer]) -> Vec<usize> {
    buffers.iter().map(Buffer::index).collect()
}

fn ptrs(buffers: &[Buffer]) -> Vec<u64> {
    buffers.iter().map(|b| b.ptr).collect()
}

fn nccl_op(op: AllReduceOp) -> NcclOp {
    match op {
        Fold::Sum => NcclOp::Sum,
        Fold::Prod => NcclOp::Prod,
        Fold::Max => NcclOp::Max,
        Fold::Min => NcclOp::Min,
    }
}

/// `acc[i] = acc[i] op x[i]` for `count` elements of `dtype` held in host bytes.
fn combine(acc: &mut [u8], x: &[u8], dtype: DType, count: usize, op: AllReduceOp) {
    let fold = if dtype == DType::Bool {
        on_bool(op)
    } else {
        op
    };
    for i in 0..count {
        // SAFETY: both slices hold `count` elements of `dtype`.
        unsafe {
            if dtype.is_float() {
                // NaN wins in max and min, as NCCL's do on floats.
                let (a, b) = (
                    load_f64(acc.as_ptr(), dtype, i),
                    load_f64(x.as_ptr(), dtype, i),
                );
                store_f64(acc.as_mut_ptr(), dtype, i, fold.f64(a, b));
            } else {
                let (a, b) = (
                    load_i64(acc.as_ptr(), dtype, i),
                    load_i64(x.as_ptr(), dtype, i),
                );
                store_i64(acc.as_mut_ptr(), dtype, i, fold.i64(a, b));
            }
        }
    }
}

/// In place: every buffer (`count` elements of `dtype`) becomes the reduction of all of them.
pub fn all_reduce(buffers: &[Buffer], dtype: DType, count: usize, op: AllReduceOp) -> Result<()> {
    if buffers.is_empty() || count == 0 || !hold_values(buffers) {
        return Ok(());
    }
    if on_real_gpus(buffers) {
        return Ok(nccl::all_reduce(
            &devices(buffers),
            &ptrs(buffers),
            dtype,
            count,
            nccl_op(op),
        )?);
    }
    let bytes = count * dtype.size();
    let mut acc = buffers[0].read(bytes)?;
    for b in &buffers[1..] {
        combine(&mut acc, &b.read(bytes)?, dtype, count, op);
    }
    buffers.iter().try_for_each(|b| b.write(&acc))
}

/// In place: every buffer becomes a copy of `buffers[root]`.
pub fn broadcast(buffers: &[Buffer], dtype: DType, count: usize, root: usize) -> Result<()> {
    if root >= buffers.len() {
        return Err(TensorError::runtime(format!(
            "broadcast: root {root} is out of range for {} tensors",
            buffers.len()
        )));
    }
    if count == 0 || !hold_values(buffers) {
        return Ok(());
    }
    if on_real_gpus(buffers) {
        return Ok(nccl::broadcast(
            &devices(buffers),
            &ptrs(buffers),
            dtype,
            count,
            root,
        )?);
    }
    let data = buffers[root].read(count * dtype.size())?;
    buffers
        .iter()
        .enumerate()
        .filter(|&(r, _)| r != root)
        .try_for_each(|(_, b)| b.write(&data))
}

/// `outputs[r]` (`inputs.len() * count` elements) receives every input in order.
pub fn all_gather(inputs: &[Buffer], outputs: &[Buffer], dtype: DType, count: usize) -> Result<()> {
    if count == 0 || inputs.is_empty() || !hold_values(inputs) {
        return Ok(());
    }
    if on_real_gpus(inputs) {
        return Ok(nccl::all_gather(
            &devices(inputs),
            &ptrs(inputs),
            &ptrs(outputs),
            dtype,
            count,
        )?);
    }
    let bytes = count * dtype.size();
    let mut gathered = Vec::with_capacity(bytes * inputs.len());
    for b in inputs {
        gathered.extend_from_slice(&b.read(bytes)?);
    }
    outputs.iter().try_for_each(|b| b.write(&gathered))
}
