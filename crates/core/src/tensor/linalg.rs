//! `matmul` with PyTorch's 1-D/2-D/batched rules and errors; `mm` saves both inputs as needed.

use crate::autograd::{needs_grad, record, SavedTensor};

use super::layout::broadcast_shapes;
use super::math::device_mismatch;
use super::{Layout, Result, Tensor, TensorError};

/// A 3-D [batch, rows, cols] layout of a matrix or batch of matrices, flattening batch dims.
/// `operand` (a tensor and its [batch, rows, cols] layout) as cuBLAS can read it: itself when
/// rows or columns are dense with a leading dimension that fits, else a contiguous copy.
fn cublas_ready(operand: (Tensor, Layout), shape: &[usize; 3]) -> Result<(Tensor, Layout)> {
    let l = &operand.1;
    let (r, c) = (shape[1], shape[2]);
    let (sr, sc) = (l.strides[1], l.strides[2]);
    let readable = (sc == 1 && sr >= c.max(1)) || (sr == 1 && sc >= r.max(1));
    if readable {
        return Ok(operand);
    }
    let dense = operand.0.view_as_layout(l.clone()).contiguous_copy()?;
    Ok((dense, Layout::contiguous(shape)))
}

fn as_batched(t: &Tensor, batch: &[usize]) -> Option<Layout> {
    let l = t.layout();
    let n = l.ndim();
    let (r, c) = (l.shape[n - 2], l.shape[n - 1]);
    let (rs, cs) = (l.strides[n - 2], l.strides[n - 1]);
    let mut full = Layout {
        shape: l.shape[..n - 2].to_vec(),
        strides: l.strides[..n - 2].to_vec(),
        offset: l.offset,
    };
    full = full.broadcast_to(batch);
    // The batch dims must collapse into one stride.
    let count: usize = batch.iter().product();
    let mut stride = None;
    let mut expect = None;
    for i in (0..batch.len()).rev() {
        if batch[i] == 1 {
            continue;
        }
        match expect {
            None => {
                stride = Some(full.strides[i]);
                expect = Some(full.strides[i] * batch[i]);
            }
            Some(e) if full.strides[i] == e => expect = Some(e * batch[i]),
            Some(_) => return None,
        }
    }
    Some(Layout {
        shape: vec![count, r, c],
        strides: vec![stride.unwrap_or(0), rs, cs],
        offset: l.offset,
    })
}

/// Whether a 2-D `t` is laid out column by column (PyTorch's test in mm's backward, which then
/// computes that input's gradient transposed so that it comes out in the same layout).
fn column_major(t: &Tensor) -> bool {
    let l = t.layout();
    l.ndim() == 2 && l.strides[0] == 1 && l.strides[1] == l.shape[0]
}

/// PyTorch's `mm_mat1_backward`: the first operand's gradient from `grad` and the second operand.
pub(crate) fn mat1_grad(grad: &Tensor, mat2: &Tensor, col_major: bool) -> Result<Tensor> {
    if col_major {
        return mat2.bmm_raw(&grad.transpose(-1, -2)?)?.transpose(-1, -2);
    }
    grad.bmm_raw(&mat2.transpose(-1, -2)?)
}

/// PyTorch's `mm_mat2_backward`: the second operand's gradient from `grad` and the first operand.
pub(crate) fn mat2_grad(grad: &Tensor, mat1: &Tensor, col_major: bool) -> Result<Tensor> {
    if col_major {
        return grad.transpose(-1, -2)?.bmm_raw(mat1)?.transpose(-1, -2);
    }
    mat1.transpose(-1, -2)?.bmm_raw(grad)
}

impl Tensor {
    pub(crate) fn check_matmul_operands(&self, other: &Tensor) -> Result<()> {
        super::check_interrupt()?;
        if self.device() != other.device() {
            return Err(device_mismatch(self.device(), other.device()));
        }
        if self.dtype() != other.dtype() {
            return Err(TensorError::runtime(format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                self.dtype().names().c_type,
                other.dtype().names().c_type
            )));
        }
        Ok(())
    }

    /// Batched product of operands of at least 2 dims, broadcasting batch dims; no autograd.
    pub(crate) fn bmm_raw(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b) = (self.dims(), other.dims());
        let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
        let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
        if k != k2 {
            return Err(TensorError::runtime(format!(
                "mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})"
            )));
        }
        let batch = broadcast_shapes(&a[..a.len() - 2], &b[..b.len() - 2])?;
        let mut shape = batch.clone();
        shape.extend([m, n]);
        let count: usize = batch.iter().product();
        let out = self.empty_same(&shape, self.dtype())?;
        if out.numel() == 0 {
            return Ok(out);
        }
        // Operands whose batch dims do not collapse are copied first, as PyTorch's reshape does.
        let lhs = match as_batched(self, &batch) {
            Some(l) => (self.clone(), l),
            None => {
                let mut s = batch.clone();
                s.extend([m, k]);
                let c = self.expand(&s)?.contiguous_copy()?;
                let l = as_batched(&c, &batch).expect("contiguous");
                (c, l)
            }
        };
        let rhs = match as_batched(other, &batch) {
            Some(l) => (other.clone(), l),
            None => {
                let mut s = batch.clone();
                s.extend([k, n]);
                let c = other.expand(&s)?.contiguous_copy()?;
                let l = as_batched(&c, &batch).expect("contiguous");
                (c, l)
            }
        };
        // On a GPU, an operand cuBLAS cannot read as it is (an expanded gradient, say) is copied
        // after the output is allocated and freed after the product, as PyTorch's
        // `prepare_matrix_for_cublas` does: the second operand first, freed last.
        let on_gpu = self.device().is_cuda();
        let rhs = if on_gpu {
            cublas_ready(rhs, &[count, k, n])?
        } else {
            rhs
        };
        let lhs = if on_gpu {
            cublas_ready(lhs, &[count, m, k])?
        } else {
            lhs
        };
        let dl = Layout::contiguous(&[count, m, n]);
        self.backend().matmul(
            lhs.0.operand_with(&lhs.1),
            rhs.0.operand_with(&rhs.1),
            out.operand_with(&dl),
        )?;
        drop(lhs);
        drop(rhs);
        Ok(out)
    }

    /// Matrix product with PyTorch's rules for 1-D, 2-D and batched operands.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        if let Some((cast, _off)) = super::autocast::cast_inputs("matmul", &[self, other])? {
            return cast[0].matmul(&cast[1]);
        }
        self.check_matmul_operands(other)?;
        match (self.dim(), other.dim()) {
            (0, _) | (_, 0) => Err(TensorError::runtime(format!(
                "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
                self.dim(),
                other.dim()
            ))),
            (1, 1) => self.dot(other),
            (2, 1) => self.mv(other),
            (1, 2) => self.unsqueeze(0)?.matmul(other)?.squeeze(Some(-2)),
            (2, 2) => self.mm_named(other, "MmBackward0"),
            _ => super::batched::matmul_nd(self, other),
        }
    }

    /// Batched matrix product of two 3-D tensors with the same batch size (`bmm`).
    pub fn bmm(&self, other: &Tensor) -> Result<Tensor> {
        if let Some((cast, _off)) = super::autocast::cast_inputs("bmm", &[self, other])? {
            return cast[0].bmm(&cast[1]);
        }
        self.check_matmul_operands(other)?;
        for (t, name) in [(self, "batch1"), (other, "batch2")] {
            if t.dim() != 3 {
                return Err(TensorError::runtime(format!("{name} must be a 3D tensor")));
            }
        }
        let (a, b) = (self.dims(), other.dims());
        if b[0] != a[0] || b[1] != a[2] {
            return Err(TensorError::runtime(format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                a[0], a[2], b[0], b[1]
            )));
        }
        self.mm_named(other, "BmmBackward0")
    }

    /// 2-D matrix product (`mm`).
    pub fn mm(&self, other: &Tensor) -> Result<Tensor> {
        if let Some((cast, _off)) = super::autocast::cast_inputs("mm", &[self, other])? {
            return cast[0].mm(&cast[1]);
        }
        self.check_matmul_operands(other)?;
        if self.dim() != 2 || other.dim() != 2 {
            return Err(TensorError::runtime(format!(
                "self must be a matrix, got {}-D and {}-D tensors",
                self.dim(),
                other.dim()
            )));
        }
        self.mm_named(other, "MmBackward0")
    }

    pub(crate) fn mm_named(&self, other: &Tensor, name: &'static str) -> Result<Tensor> {
        // Note [saved release order]: a node's saved tensors go in the order of their names
        // (`mat2_` before `self_` in MmBackward0 and BmmBackward0), so the tuple holds the
        // second operand first: its fields drop in order when the node is released. PyTorch
        // saves an op's inputs before its kernel runs, so a checkpointed recomputation that
        // stops at this save never makes the product (Note [checkpoint early stop]).
        let saved = match needs_grad(&[self, other]) {
            true => Some((
                SavedTensor::new_if(self.requires_grad(), other)?,
                SavedTensor::new_if(other.requires_grad(), self)?,
            )),
            false => None,
        };
        let out = self.bmm_raw(other)?;
        if let Some(saved) = saved {
            let (sa, sb) = (self.shape(), other.shape());
            let (col_a, col_b) = (column_major(self), column_major(other));
            record(
                &out,
                name,
                &[self, other],
                true,
                Box::new(move |g, m| {
                    let (keep_b, keep_a) = &saved;
                    // PyTorch's MmBackward0/BmmBackward0 compute the second operand's gradient first.
                    let gb = match (keep_a, m[1]) {
                        (Some(a), true) => Some(mat2_grad(g, a.get()?, col_b)?.sum_to_size(&sb)?),
                        _ => None,
                    };
                    let ga = match (keep_b, m[0]) {
                        (Some(b), true) => Some(mat1_grad(g, b.get()?, col_a)?.sum_to_size(&sa)?),
                        _ => None,
                    };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(out)
    }

    fn dot(&self, other: &Tensor) -> Result<Tensor> {
        let (k, k2) = (self.dims()[0], other.dims()[0]);
        if k != k2 {
            return Err(TensorError::runtime(format!(
                "inconsistent tensor size, expected tensor [{k}] and src [{k2}] to have the same number of elements, but got {k} and {k2} elements respectively"
            )));
        }
        let out = self.empty_same(&[], self.dtype())?;
        let (sa, sb) = (self.layout().strides[0], other.layout().strides[0]);
        let la = Layout {
            shape: vec![1, 1, k],
            strides: vec![0, 0, sa],
            offset: self.layout().offset,
        };
        let lb = Layout {
            shape: vec![1, k, 1],
            strides: vec![0, sb, 0],
            offset: other.layout().offset,
        };
        let lo = Layout::contiguous(&[1, 1, 1]);
        self.backend().matmul(
            self.operand_with(&la),
            other.operand_with(&lb),
            out.operand_with(&lo),
        )?;
        if needs_grad(&[self, other]) {
            let keep_b = SavedTensor::new_if(self.requires_grad(), other)?;
            let keep_a = SavedTensor::new_if(other.requires_grad(), self)?;
            record(
                &out,
                "DotBackward0",
                &[self, other],
                true,
                Box::new(move |g, m| {
                    let ga = match (&keep_b, m[0]) {
                        (Some(b), true) => Some(b.get()?.mul(g)?),
                        _ => None,
                    };
                    let gb = match (&keep_a, m[1]) {
                        (Some(a), true) => Some(a.get()?.mul(g)?),
                        _ => None,
                    };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(out)
    }

    fn mv(&self, other: &Tensor) -> Result<Tensor> {
        let (m, k) = (self.dims()[0], self.dims()[1]);
        let k2 = other.dims()[0];
        if k != k2 {
            return Err(TensorError::runtime(format!(
                "size mismatch, got input ({m}), mat ({m}x{k}), vec ({k2})"
            )));
        }
        let out = self.empty_same(&[m], self.dtype())?;
        let al = self.layout();
        let la = Layout {
            shape: vec![1, m, k],
            strides: vec![0, al.strides[0], al.strides[1]],
            offset: al.offset,
        };
        let lb = Layout {
            shape: vec![1, k, 1],
            strides: vec![0, other.layout().strides[0], 0],
            offset: other.layout().offset,
        };
        let lo = Layout::contiguous(&[1, m, 1]);
        if out.numel() > 0 {
            self.backend().matmul(
                self.operand_with(&la),
                other.operand_with(&lb),
                out.operand_with(&lo),
            )?;
        }
        if needs_grad(&[self, other]) {
            let keep_b = SavedTensor::new_if(self.requires_grad(), other)?;
            let keep_a = SavedTensor::new_if(other.requires_grad(), self)?;
            record(
                &out,
                "MvBackward0",
                &[self, other],
                true,
                Box::new(move |g, mask| {
                    let ga = match (&keep_b, mask[0]) {
                        (Some(b), true) => Some(g.unsqueeze(1)?.mul(&b.get()?.unsqueeze(0)?)?),
                        _ => None,
                    };
                    let gb = match (&keep_a, mask[1]) {
                        (Some(a), true) => Some(a.get()?.t()?.mv(g)?),
                        _ => None,
                    };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(out)
    }
}
