//! In-place updates as optimizers make them (`add_` with alpha, `lerp_`, `addcmul_`, `addcdiv_`,
//! `maximum`, `uniform_`): no autograd, no allocation, each tensor's version bumped.
//!
//! PyTorch runs `optimizer.step()` under `no_grad` and its in-place kernels allocate nothing, so
//! these write straight into their destination; what an optimizer allocates is exactly the
//! temporaries it makes itself (`tensor::update` is where it cannot allocate by accident).

use crate::device::{BinaryOp, Distribution};

use super::{Result, Scalar, Tensor};

impl Tensor {
    /// `self += alpha * other` (PyTorch's `add_(other, alpha=alpha)`).
    pub fn add_scaled_(&self, other: &Tensor, alpha: f64) -> Result<()> {
        self.binary_into_self(other, BinaryOp::AddScaled { alpha })
    }

    /// `self += weight * (end - self)` (PyTorch's `lerp_(end, weight)`).
    pub fn lerp_(&self, end: &Tensor, weight: f64) -> Result<()> {
        self.binary_into_self(end, BinaryOp::Lerp { weight })
    }

    /// `self += value * t * t` (PyTorch's `addcmul_(t, t, value=value)`).
    pub fn addcmul_same_(&self, t: &Tensor, value: f64) -> Result<()> {
        self.binary_into_self(t, BinaryOp::AddSquared { value })
    }

    /// `self = maximum(self, other)` (PyTorch's `torch.maximum(self, other, out=self)`).
    pub fn maximum_(&self, other: &Tensor) -> Result<()> {
        self.binary_into_self(other, BinaryOp::Maximum)
    }

    /// `self += value * numerator / denominator`, PyTorch's `addcdiv_`, for a `denominator` that
    /// is a temporary of the caller: the quotient is written into it, so nothing is allocated.
    pub fn addcdiv_consuming_(
        &self,
        numerator: &Tensor,
        denominator: &Tensor,
        value: f64,
    ) -> Result<()> {
        if numerator.dims() != denominator.dims() {
            return Err(super::TensorError::runtime(format!(
                "addcdiv_: the numerator's shape {:?} differs from the denominator's {:?}",
                numerator.dims(),
                denominator.dims()
            )));
        }
        if denominator.numel() > 0 {
            self.backend().binary(
                BinaryOp::Div,
                numerator.operand(),
                denominator.operand(),
                denominator.operand(),
            )?;
        }
        denominator.bump_version();
        self.add_scaled_(denominator, value)
    }

    /// `self op= s` with no autograd and no leaf check (an optimizer's scalar updates).
    pub fn scalar_update_(&self, op: BinaryOp, s: f64) -> Result<()> {
        if self.numel() > 0 {
            self.backend().binary_scalar(
                op,
                self.operand(),
                Scalar::Float(s),
                false,
                self.operand(),
            )?;
        }
        self.bump_version();
        Ok(())
    }

    /// Fill with numbers uniform on `[low, high)` (PyTorch's `uniform_`), allocating nothing.
    pub fn uniform_(&self, low: f64, high: f64) -> Result<()> {
        if self.numel() > 0 {
            let seed = super::random::next_seed(self.device());
            let contiguous = self.is_contiguous();
            if !contiguous {
                return Err(super::TensorError::runtime(
                    "uniform_ needs a contiguous tensor",
                ));
            }
            self.backend()
                .random(self.operand(), Distribution::Uniform, seed)?;
            self.scalar_update_(BinaryOp::Mul, high - low)?;
            self.scalar_update_(BinaryOp::Add, low)?;
        }
        self.bump_version();
        Ok(())
    }

    /// Fill with normal samples of this mean and standard deviation (PyTorch's `normal_`),
    /// allocating nothing.
    pub fn normal_(&self, mean: f64, std: f64) -> Result<()> {
        if self.numel() > 0 {
            if !self.is_contiguous() {
                return Err(super::TensorError::runtime(
                    "normal_ needs a contiguous tensor",
                ));
            }
            let seed = super::random::next_seed(self.device());
            self.backend()
                .random(self.operand(), Distribution::Normal, seed)?;
            self.scalar_update_(BinaryOp::Mul, std)?;
            self.scalar_update_(BinaryOp::Add, mean)?;
        }
        self.bump_version();
        Ok(())
    }
}

impl Tensor {
    /// The bytes of this tensor's whole storage, read to the host (no device memory is taken).
    pub fn storage_bytes(&self) -> Result<Vec<u8>> {
        let mut bytes = vec![0u8; self.storage_nbytes()];
        if !bytes.is_empty() {
            self.backend().read_bytes(self.storage_ptr(), &mut bytes)?;
        }
        Ok(bytes)
    }

    /// Write back what [`Tensor::storage_bytes`] read (undoing updates made since).
    pub fn restore_storage_bytes(&self, bytes: &[u8]) -> Result<()> {
        if !bytes.is_empty() {
            self.backend().write_bytes(self.storage_ptr(), bytes)?;
        }
        self.bump_version();
        Ok(())
    }
}

impl Tensor {
    /// `out = op(self)` into memory the caller allocated (a foreach op's preallocated result).
    pub fn unary_into(&self, op: crate::device::UnaryOp, out: &Tensor) -> Result<()> {
        if out.dims() != self.dims() {
            return Err(super::TensorError::runtime(format!(
                "unary_into: output shape {:?} differs from the input's {:?}",
                out.dims(),
                self.dims()
            )));
        }
        if self.numel() > 0 {
            self.backend().unary(op, self.operand(), out.operand())?;
        }
        out.bump_version();
        Ok(())
    }

    /// `self + alpha * other` in new memory (PyTorch's `add(other, alpha=alpha)`), no autograd.
    pub fn add_scaled(&self, other: &Tensor, alpha: f64) -> Result<Tensor> {
        self.binary_raw(other, BinaryOp::AddScaled { alpha })
    }

    /// Cut this tensor from its graph in place (PyTorch's `detach_`): a leaf, not requiring grad.
    pub fn detach_(&self) {
        let node = {
            let mut meta = self.meta();
            meta.requires_grad = false;
            meta.grad_fn.take()
        };
        // The graph goes after the lock is released: dropping it may free tensors.
        drop(node);
    }
}
