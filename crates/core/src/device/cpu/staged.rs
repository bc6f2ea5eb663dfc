//! The host reduction through PyTorch's staging memory, as the simulated GPU runs it: each block
//! of the plan reduces its slice of the inputs into a partial in the staging buffer, counts itself
//! in its column's semaphore, and the column's last block combines the partials into the outputs.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use crate::device::backend::{Operand, ReduceOp, ReduceOut, StagingMemory};
use crate::device::reduction::{Fold, Partial};
use torchlet_alloc::types::element::{load_f64, load_i64, store_f64, store_i64};
use torchlet_alloc::types::{DType, Result, TensorError};

use super::parallel::offsets;
use super::reduce::{dense_float_sum, load, split_dims, store, Acc};

/// How one partial result sits in the staging buffer: the accumulator PyTorch's kernel keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// A float sum in f32 (float, half and bfloat16 inputs accumulate in float).
    F32,
    /// A float sum in f64.
    F64,
    /// An integer sum in i64.
    I64,
    /// A max/min value in the input's own dtype.
    Elem(DType),
    /// A (value, int64 index) pair: the value as f64 (floats) or i64, then the index.
    Pair,
}

impl Slot {
    fn of(op: ReduceOp, dtype: DType, indices: bool) -> Slot {
        match op.partial(indices) {
            Partial::Acc if !dtype.is_float() => Slot::I64,
            Partial::Acc if dtype == DType::F64 => Slot::F64,
            Partial::Acc => Slot::F32,
            Partial::Elem => Slot::Elem(dtype),
            Partial::Pair => Slot::Pair,
        }
    }

    fn size(self) -> usize {
        match self {
            Slot::F32 => 4,
            Slot::F64 | Slot::I64 => 8,
            Slot::Elem(d) => d.size(),
            Slot::Pair => 16,
        }
    }

    /// Write `acc` as partial number `k`.
    ///
    /// # Safety
    /// The buffer holds at least `k + 1` slots.
    unsafe fn put(self, buf: *mut u8, k: usize, acc: &Acc, float: bool) {
        match self {
            Slot::F32 => store_f64(buf, DType::F32, k, acc.value),
            Slot::F64 => store_f64(buf, DType::F64, k, acc.value),
            Slot::I64 => store_i64(buf, DType::I64, k, acc.ivalue),
            Slot::Elem(d) if float => store_f64(buf, d, k, acc.value),
            Slot::Elem(d) => store_i64(buf, d, k, acc.ivalue),
            Slot::Pair => {
                let pair = buf.add(16 * k);
                if float {
                    store_f64(pair, DType::F64, 0, acc.value);
                } else {
                    store_i64(pair, DType::I64, 0, acc.ivalue);
                }
                store_i64(pair, DType::I64, 1, acc.arg as i64);
            }
        }
    }

    /// Read partial number `k` back as a state covering `n` inputs.
    ///
    /// # Safety
    /// As for `put`, and the slot was written.
    unsafe fn get(self, buf: *const u8, k: usize, op: ReduceOp, float: bool, n: usize) -> Acc {
        let mut acc = Acc::new(op);
        acc.n = n;
        match self {
            Slot::F32 | Slot::F64 => acc.value = load_f64(buf, dtype_of(self), k),
            Slot::I64 => acc.ivalue = load_i64(buf, DType::I64, k),
            Slot::Elem(d) => {
                let (v, iv) = if float {
                    (load_f64(buf, d, k), 0)
                } else {
                    let i = load_i64(buf, d, k);
                    (i as f64, i)
                };
                (acc.value, acc.ivalue, acc.arg) = (v, iv, 0);
            }
            Slot::Pair => {
                let pair = buf.add(16 * k);
                if float {
                    acc.value = load_f64(pair, DType::F64, 0);
                } else {
                    acc.ivalue = load_i64(pair, DType::I64, 0);
                    acc.value = acc.ivalue as f64;
                }
                acc.arg = load_i64(pair, DType::I64, 1) as usize;
            }
        }
        acc
    }
}

fn dtype_of(slot: Slot) -> DType {
    if slot == Slot::F32 {
        DType::F32
    } else {
        DType::F64
    }
}

/// Reduce `src` over `dims` into `out` through `mem`: one task per block (a column of
/// `outputs_per_semaphore` outputs × one of `ctas_per_output` slices of their inputs).
pub fn reduce(
    op: ReduceOp,
    src: Operand,
    dims: &[usize],
    out: ReduceOut,
    mem: StagingMemory,
) -> Result<()> {
    let (outer, inner) = split_dims(src.layout, dims);
    let (n_out, len) = (outer.numel(), inner.numel());
    let plan = mem.plan;
    let slot = Slot::of(op, src.dtype, out.indices.is_some());
    let (ctas, per_sem) = (plan.ctas_per_output, plan.outputs_per_semaphore.max(1));
    let fits = n_out * ctas * slot.size() <= plan.buffer_bytes
        && n_out.div_ceil(per_sem) * 4 <= plan.semaphore_bytes;
    if plan.num_outputs != n_out || slot.size() != plan.acc_size || !fits || ctas == 0 || ctas > len
    {
        return Err(TensorError::runtime(format!(
            "internal error: a reduction staging plan ({plan:?}) does not fit {n_out} outputs of {len} inputs"
        )));
    }
    let float = src.dtype.is_float();
    let (buf, sems) = (mem.buffer as usize, mem.semaphores as usize);
    // SAFETY: the semaphores are `semaphore_bytes` of device (host) memory owned by the caller
    // for this call; PyTorch zeroes them before its launch too.
    unsafe { std::ptr::write_bytes(sems as *mut u8, 0, plan.semaphore_bytes) };
    // Sums over rows that are one run of memory take a typed loop.
    let dense = op.fold() == Fold::Sum && inner.is_contiguous();
    // Balanced slices: every one is non-empty since ctas <= len.
    let slice = |c: usize| (c * len / ctas, (c + 1) * len / ctas);
    let block = |column: usize, cta: usize| {
        let outputs = column * per_sem..((column + 1) * per_sem).min(n_out);
        let (start, end) = slice(cta);
        for o in outputs.clone() {
            let base = outer.index_of(o);
            let mut acc = Acc::new(op);
            match dense.then(|| dense_float_sum(&src, base + start, end - start)) {
                Some(Some(sum)) => (acc.value, acc.n) = (sum, end - start),
                _ => {
                    for (k, off) in offsets(&inner, start, end - start).enumerate() {
                        let (v, iv) = load(&src, float, base + off);
                        acc.push(op, float, v, iv, start + k);
                    }
                }
            }
            // SAFETY: slot o * ctas + cta < n_out * ctas fits the buffer (checked above).
            unsafe { slot.put(buf as *mut u8, o * ctas + cta, &acc, float) };
        }
        // SAFETY: semaphore `column` lies inside the semaphores (checked above), 4-aligned.
        let sem = unsafe { &*(sems as *const AtomicU32).add(column) };
        // The column's last block combines its partials, in slice order.
        if sem.fetch_add(1, Ordering::AcqRel) as usize == ctas - 1 {
            for o in outputs {
                let acc = (0..ctas).fold(Acc::new(op), |a, c| {
                    let (s, e) = slice(c);
                    // SAFETY: every slice of this output was written before its block counted.
                    let part =
                        unsafe { slot.get(buf as *const u8, o * ctas + c, op, float, e - s) };
                    a.merge(op, float, part)
                });
                store(op, float, &out, o, &acc, len);
            }
        }
    };
    let columns = n_out.div_ceil(per_sem);
    (0..columns * ctas)
        .into_par_iter()
        .for_each(|task| block(task / ctas, task % ctas));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_pytorch_accumulators() {
        assert_eq!(Slot::of(ReduceOp::Sum, DType::F16, false).size(), 4);
        assert_eq!(Slot::of(ReduceOp::Sum, DType::I64, false).size(), 8);
        assert_eq!(Slot::of(ReduceOp::Max, DType::F16, false).size(), 2);
        assert_eq!(Slot::of(ReduceOp::Max, DType::F16, true).size(), 16);
        assert_eq!(Slot::of(ReduceOp::ArgMin, DType::F64, false).size(), 16);
    }

    #[test]
    fn pairs_round_trip() {
        let mut buf = [0u8; 32];
        let mut acc = Acc::new(ReduceOp::ArgMax);
        acc.push(ReduceOp::ArgMax, true, 2.5, 0, 7);
        unsafe {
            Slot::Pair.put(buf.as_mut_ptr(), 1, &acc, true);
            let back = Slot::Pair.get(buf.as_ptr(), 1, ReduceOp::ArgMax, true, 1);
            assert_eq!((back.value, back.arg, back.n), (2.5, 7, 1));
        }
    }
}
