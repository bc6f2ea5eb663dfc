//! PyTorch's `matmul` for operands of 3 or more dims (folded into one `mm`, or expanded into a
//! `bmm`), and `linear`/`addmm` with a bias, which autocast wraps.

use crate::autograd::{needs_grad, no_grad, record, SavedTensor};

use super::linalg::{mat1_grad, mat2_grad};
use super::{broadcast_shapes, DType, Layout, Result, Tensor, TensorError};

/// PyTorch's `should_fold`: the larger operand (3+ dims, the other at most 2) can be one matrix
/// without a copy, or the smaller one requires grad (folding keeps its gradient a plain mm).
fn should_fold(a: &Tensor, b: &Tensor) -> bool {
    let a_larger = a.dim() >= b.dim();
    let (big, small_dim, small_grad) = if a_larger {
        (a.layout().clone(), b.dim(), b.requires_grad())
    } else {
        (swap_last(b.layout()), a.dim(), a.requires_grad())
    };
    if !(big.ndim() >= 3 && small_dim <= 2) {
        return false;
    }
    if small_grad {
        return true;
    }
    if a.dim() == 2 {
        return false;
    }
    if big.numel() == 0 {
        return true;
    }
    (0..big.ndim() - 2).all(|i| big.strides[i] == big.strides[i + 1] * big.shape[i + 1])
}

fn swap_last(l: &Layout) -> Layout {
    let mut l = l.clone();
    let n = l.ndim();
    l.shape.swap(n - 1, n - 2);
    l.strides.swap(n - 1, n - 2);
    l
}

/// The sizes a product contracts: `a`'s last dim and `b`'s second-to-last (its only one, for 1-D).
fn inner_sizes(a: &Tensor, b: &Tensor) -> (usize, usize) {
    let (da, db) = (a.dims(), b.dims());
    let k2 = if db.len() > 1 {
        db[db.len() - 2]
    } else {
        db[0]
    };
    (da[da.len() - 1], k2)
}

/// The error of a product whose inner sizes differ, before anything is allocated.
fn check_inner(a: &Tensor, b: &Tensor) -> Result<()> {
    let (k1, k2) = inner_sizes(a, b);
    if k1 == k2 {
        return Ok(());
    }
    let (da, db) = (a.dims(), b.dims());
    let rows: usize = da[..da.len() - 1].iter().product();
    let cols = if db.len() > 1 { db[db.len() - 1] } else { 1 };
    Err(TensorError::runtime(format!(
        "mat1 and mat2 shapes cannot be multiplied ({rows}x{k1} and {k2}x{cols})"
    )))
}

/// `a.matmul(b)` where one operand has 3 or more dims, as PyTorch's `_matmul_impl` builds it.
pub(crate) fn matmul_nd(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if should_fold(a, b) {
        check_inner(a, b)?;
        return matmul_folded(a, b);
    }
    let batch_of = |t: &Tensor| t.dims()[..t.dim().saturating_sub(2)].to_vec();
    let batch = broadcast_shapes(&batch_of(a), &batch_of(b))?;
    let (k1, k2) = inner_sizes(a, b);
    if k1 != k2 {
        // What bmm says of the expanded operands.
        let count: usize = batch.iter().product();
        return Err(TensorError::runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{count}, {k1}] but got: [{count}, {k2}]."
        )));
    }
    matmul_batched(a, b)
}

/// The larger operand as one matrix times the smaller: one `mm` (or `mv`).
fn matmul_folded(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let transpose = b.dim() > a.dim();
    let t1 = if transpose {
        b.transpose(-1, -2)?
    } else {
        a.clone()
    };
    let t2 = match (transpose, a.dim()) {
        (false, _) => b.clone(),
        (true, 2) => a.t()?,
        (true, _) => a.clone(),
    };
    let sizes = t1.shape();
    let mut out_shape = sizes[..sizes.len() - 1].to_vec();
    let folded: usize = out_shape.iter().product();
    let t1f = t1.reshape(&[folded as isize, sizes[sizes.len() - 1] as isize])?;
    if t2.dim() == 2 {
        out_shape.push(t2.dims()[1]);
        let out = t1f.mm_named(&t2, "MmBackward0")?.unsafe_view(&out_shape)?;
        return if transpose {
            out.transpose(-1, -2)?.contiguous()
        } else {
            Ok(out)
        };
    }
    t1f.matmul(&t2)?.unsafe_view(&out_shape)
}

/// Both operands expanded to the broadcast batch and flattened to 3-D, then one `bmm`.
fn matmul_batched(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (da, db) = (a.dim(), b.dim());
    let n = if da > 1 { a.dims()[da - 2] } else { 1 };
    let m1 = a.dims()[da - 1];
    let (m2, p) = if db > 1 {
        (b.dims()[db - 2], b.dims()[db - 1])
    } else {
        (b.dims()[0], 1)
    };
    let batch = broadcast_shapes(
        &a.dims()[..da.saturating_sub(2)],
        &b.dims()[..db.saturating_sub(2)],
    )?;
    let count: usize = batch.iter().product();
    let with = |tail: &[usize]| [batch.as_slice(), tail].concat();
    let as_isize = |v: &[usize]| v.iter().map(|&d| d as isize).collect::<Vec<_>>();
    let a3 = a
        .expand(&with(&[n, m1]))?
        .reshape(&as_isize(&[count, n, m1]))?;
    let b3 = if db == 1 {
        b.expand(&with(&[m2]))?
            .reshape(&as_isize(&[count, m2]))?
            .unsqueeze(2)?
    } else {
        b.expand(&with(&[m2, p]))?
            .reshape(&as_isize(&[count, m2, p]))?
    };
    let mut out_shape = batch.clone();
    if da > 1 {
        out_shape.push(n);
    }
    if db > 1 {
        out_shape.push(p);
    }
    let out = a3.mm_named(&b3, "BmmBackward0")?;
    let out = if db == 1 { out.squeeze(Some(-1))? } else { out };
    out.unsafe_view(&out_shape)
}

impl Tensor {
    /// A view of a contiguous result with another shape, recorded as PyTorch's `_unsafe_view`.
    pub(crate) fn unsafe_view(&self, shape: &[usize]) -> Result<Tensor> {
        match self.view_shape(shape, "UnsafeViewBackward0")? {
            Some(v) => Ok(v),
            None => self.reshape(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>()),
        }
    }

    /// `F.linear(self, weight, bias)`: `self @ weight.T + bias`, built as PyTorch builds it (one
    /// fused addmm for 2-D and contiguous inputs with a 1-D bias, else matmul then an in-place add).
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        if let Some((cast, _off)) = super::autocast::cast_inputs("linear", &inputs)? {
            return cast[0].linear(&cast[1], cast.get(2));
        }
        self.check_matmul_operands(weight)?;
        if let Some(b) = bias {
            self.check_matmul_operands(b)?;
        }
        if self.dim() == 0 || weight.dim() == 0 {
            return Err(TensorError::runtime(format!(
                "both arguments to linear need to be at least 1D, but they are {}D and {}D",
                self.dim(),
                weight.dim()
            )));
        }
        let fold = self.dim() >= 3 && self.is_contiguous() && bias.is_some_and(|b| b.dim() == 1);
        match bias {
            Some(b) if self.dim() == 2 => self.addmm_bias(b, &weight.t()?),
            Some(b) if fold => {
                let sizes = self.shape();
                let rows: usize = sizes[..sizes.len() - 1].iter().product();
                let flat = self.reshape(&[rows as isize, sizes[sizes.len() - 1] as isize])?;
                let out = flat.addmm_bias(b, &weight.t()?)?;
                let mut shape = sizes[..sizes.len() - 1].to_vec();
                shape.push(out.dims()[1]);
                out.view(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>())
            }
            Some(b) => {
                let out = self.matmul(&weight.t()?)?;
                out.add_(b)?;
                Ok(out)
            }
            None => self.matmul(&weight.t()?),
        }
    }

    /// `bias + self @ mat2` for a 2-D `self` and `mat2` (PyTorch's addmm with beta = alpha = 1).
    pub fn addmm_bias(&self, bias: &Tensor, mat2: &Tensor) -> Result<Tensor> {
        // PyTorch's argument order, `addmm(bias, mat1, mat2)`, decides the order of the casts.
        if let Some((cast, _off)) = super::autocast::cast_inputs("addmm", &[bias, self, mat2])? {
            return cast[1].addmm_bias(&cast[0], &cast[2]);
        }
        let (m, k) = (self.dims()[0], self.dims()[1]);
        if mat2.dim() != 2 || mat2.dims()[0] != k {
            let d = mat2.dims();
            let (k2, n) = (
                d.first().copied().unwrap_or(0),
                d.get(1).copied().unwrap_or(1),
            );
            return Err(TensorError::runtime(format!(
                "mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})"
            )));
        }
        let n = mat2.dims()[1];
        let bias_view = {
            let _guard = no_grad();
            bias.expand(&[m, n])?
        };
        // PyTorch saves the matrices before the kernel runs, so a checkpointed recomputation
        // that stops at this save never makes the product (Note [checkpoint early stop]).
        // Note [saved release order] (linalg.rs): `mat1_` goes before `mat2_`, so the tuple holds
        // the first matrix first (what a linear under autocast saves is freed input, then weight).
        let saved = match needs_grad(&[bias, self, mat2]) {
            true => {
                let keep2 = SavedTensor::new_if(self.requires_grad(), mat2)?;
                let keep1 = SavedTensor::new_if(mat2.requires_grad(), self)?;
                Some((keep1, keep2))
            }
            false => None,
        };
        let out = self.addmm_raw(&bias_view, mat2)?;
        if let Some(saved) = saved {
            record_addmm(&out, bias, self, mat2, saved);
        }
        Ok(out)
    }

    fn addmm_raw(&self, bias: &Tensor, mat2: &Tensor) -> Result<Tensor> {
        let (m, n) = (self.dims()[0], mat2.dims()[1]);
        let out = self.empty_same(&[m, n], self.dtype())?;
        if out.numel() == 0 {
            return Ok(out);
        }
        // PyTorch takes cuBLASLt's bias epilogue for a contiguous 1-D bias of float type.
        let lt = bias.layout().strides == [0, 1]
            && matches!(
                self.dtype(),
                DType::F32 | DType::F64 | DType::F16 | DType::BF16
            )
            && m > 1
            && n > 1
            && self.dims()[1] > 1;
        let (lhs, rhs) = (self.as_batch_of_one(), mat2.as_batch_of_one());
        let dl = Layout::contiguous(&[1, m, n]);
        let bl = bias.as_batch_of_one();
        self.backend().addmm(
            bias.operand_with(&bl),
            self.operand_with(&lhs),
            mat2.operand_with(&rhs),
            out.operand_with(&dl),
            lt,
        )?;
        Ok(out)
    }

    /// A 2-D view's layout with a leading batch dim of 1.
    fn as_batch_of_one(&self) -> Layout {
        let l = self.layout();
        Layout {
            shape: [&[1], l.shape.as_slice()].concat(),
            strides: [&[0], l.strides.as_slice()].concat(),
            offset: l.offset,
        }
    }
}

/// AddmmBackward0: the first matrix's gradient, the second's, then the bias's (summed to its
/// shape after the node's formulas, as PyTorch's engine does).
/// `saved` holds `mat1` (kept when `mat2` needs a gradient) and `mat2` (when `mat1` does).
fn record_addmm(
    out: &Tensor,
    bias: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    saved: (Option<SavedTensor>, Option<SavedTensor>),
) {
    let col = |t: &Tensor| {
        let l = t.layout();
        l.strides[0] == 1 && l.strides[1] == l.shape[0]
    };
    let (col1, col2) = (col(mat1), col(mat2));
    record(
        out,
        "AddmmBackward0",
        &[bias, mat1, mat2],
        true,
        Box::new(move |g, m| {
            // The tuple is captured whole, so its fields drop in order when the node is released.
            let (keep1, keep2) = &saved;
            let g1 = match (keep2, m[1]) {
                (Some(b), true) => Some(mat1_grad(g, b.get()?, col1)?),
                _ => None,
            };
            let g2 = match (keep1, m[2]) {
                (Some(a), true) => Some(mat2_grad(g, a.get()?, col2)?),
                _ => None,
            };
            // The bias's gradient is `grad` itself, summed down to the bias's shape by
            // validate_outputs once the call has returned (Note [validate_outputs]).
            let gb = m[0].then(|| g.clone());
            Ok(vec![gb, g1, g2])
        }),
    );
}
