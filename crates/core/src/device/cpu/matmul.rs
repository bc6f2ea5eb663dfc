//! Host matrix products through the `gemm` crate (f32, f64, f16); bfloat16 through f32, integers
//! through f64.

use gemm::{gemm, Parallelism};
use half::f16;

use crate::device::backend::Operand;
use torchlet_alloc::types::element::{load_f64, store_f64};
use torchlet_alloc::types::{DType, Layout, Result};

/// Threads pay off only for products of at least this many multiply-adds.
const PARALLEL_FLOPS: usize = 1 << 18;

fn strides(l: &Layout) -> (isize, isize, isize) {
    (
        l.strides[0] as isize,
        l.strides[1] as isize,
        l.strides[2] as isize,
    )
}

/// `dst[b] = lhs[b] @ rhs[b]` for typed elements the gemm crate supports.
unsafe fn gemm_typed<T: 'static + Copy>(
    lhs: &Operand,
    rhs: &Operand,
    dst: &Operand,
    one: T,
    zero: T,
) {
    let (batch, m, k) = (
        lhs.layout.shape[0],
        lhs.layout.shape[1],
        lhs.layout.shape[2],
    );
    let n = rhs.layout.shape[2];
    let par = if m * n * k >= PARALLEL_FLOPS {
        Parallelism::Rayon(0)
    } else {
        Parallelism::None
    };
    let (lb, lr, lc) = strides(lhs.layout);
    let (rb, rr, rc) = strides(rhs.layout);
    let (db, dr, dc) = strides(dst.layout);
    let lp = (lhs.ptr as *const T).add(lhs.layout.offset);
    let rp = (rhs.ptr as *const T).add(rhs.layout.offset);
    let dp = (dst.ptr as *mut T).add(dst.layout.offset);
    for b in 0..batch as isize {
        if k == 0 {
            for i in 0..m as isize {
                for j in 0..n as isize {
                    *dp.offset(b * db + i * dr + j * dc) = zero;
                }
            }
            continue;
        }
        gemm(
            m,
            n,
            k,
            dp.offset(b * db),
            dc,
            dr,
            false,
            lp.offset(b * lb),
            lc,
            lr,
            rp.offset(b * rb),
            rc,
            rr,
            zero,
            one,
            false,
            false,
            false,
            par,
        );
    }
}

/// A type products are computed in for dtypes the gemm crate lacks.
trait Wide: 'static + Copy + Default {
    const DTYPE: DType;
    const ONE: Self;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl Wide for f32 {
    const DTYPE: DType = DType::F32;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Wide for f64 {
    const DTYPE: DType = DType::F64;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// Copy a strided operand into a dense buffer of `W` with the same (now contiguous) layout.
fn widen<W: Wide>(op: &Operand) -> (Vec<W>, Layout) {
    let layout = Layout::contiguous(&op.layout.shape);
    let load = |i| unsafe { load_f64(op.ptr as *const u8, op.dtype, op.layout.index_of(i)) };
    let v = (0..op.layout.numel())
        .map(|i| W::from_f64(load(i)))
        .collect();
    (v, layout)
}

/// `dst = lhs @ rhs` computed in the wider type `W`, then rounded into `dst`.
unsafe fn matmul_widened<W: Wide>(lhs: &Operand, rhs: &Operand, dst: &Operand) {
    let (a, la) = widen::<W>(lhs);
    let (b, lb) = widen::<W>(rhs);
    let lo = Layout::contiguous(&dst.layout.shape);
    let mut out = vec![W::default(); lo.numel()];
    let operand = |ptr: u64, layout| Operand {
        ptr,
        dtype: W::DTYPE,
        layout,
    };
    gemm_typed::<W>(
        &operand(a.as_ptr() as u64, &la),
        &operand(b.as_ptr() as u64, &lb),
        &operand(out.as_mut_ptr() as u64, &lo),
        W::ONE,
        W::default(),
    );
    for (i, v) in out.iter().enumerate() {
        store_f64(
            dst.ptr as *mut u8,
            dst.dtype,
            dst.layout.index_of(i),
            v.to_f64(),
        );
    }
}

/// Batched `dst = lhs @ rhs` with [b, m, k] × [b, k, n] → [b, m, n].
pub fn matmul(lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
    let same = lhs.dtype == dst.dtype && rhs.dtype == dst.dtype;
    unsafe {
        match dst.dtype {
            DType::F32 if same => gemm_typed::<f32>(&lhs, &rhs, &dst, 1.0, 0.0),
            DType::F64 if same => gemm_typed::<f64>(&lhs, &rhs, &dst, 1.0, 0.0),
            DType::F16 if same => gemm_typed::<f16>(&lhs, &rhs, &dst, f16::ONE, f16::ZERO),
            // bfloat16 widens exactly to f32 and accumulates there, as PyTorch's bfloat16 products do.
            DType::BF16 if same => matmul_widened::<f32>(&lhs, &rhs, &dst),
            // Integers: f64 (exact for the integer sizes seen in practice).
            _ => matmul_widened::<f64>(&lhs, &rhs, &dst),
        }
    }
    Ok(())
}
