//! Elementwise ops beyond the operators' table: `maximum`/`minimum`, `remainder` and
//! `floor_divide` (Python's `%` and `//`), `clamp_min`/`clamp_max`, `lerp` by a number and
//! `addcmul`, each with PyTorch's backward and its temporaries in PyTorch's order.

use crate::autograd::{needs_grad, record_multi, SavedTensor};
use crate::device::BinaryOp;

use super::{broadcast_shapes, Result, Scalar, Tensor, TensorError};

impl Tensor {
    /// `torch.maximum(self, other)`: the larger of each pair, NaN where either is.
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        self.extreme_of_pair(other, BinaryOp::Maximum, "MaximumBackward0")
    }

    /// `torch.minimum(self, other)`: the smaller of each pair, NaN where either is.
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        self.extreme_of_pair(other, BinaryOp::Minimum, "MinimumBackward0")
    }

    /// maximum/minimum and their backward: each input's gradient is
    /// `where(self == other, grad / 2, grad).masked_fill_(lost, 0)`, `lost` where the other
    /// input won; the other input's gradient first, as PyTorch's generated node computes them.
    fn extreme_of_pair(&self, other: &Tensor, op: BinaryOp, node: &'static str) -> Result<Tensor> {
        let out = self.binary_raw(other, op)?;
        if needs_grad(&[self, other]) {
            let (a, b) = (SavedTensor::new(self)?, SavedTensor::new(other)?);
            let keeps_larger = op == BinaryOp::Maximum;
            record_multi(
                std::slice::from_ref(&out),
                node,
                &[self, other],
                true,
                Box::new(move |grads, mask| {
                    let Some(g) = &grads[0] else {
                        return Ok(Vec::new());
                    };
                    let (a, b) = (a.get()?, b.get()?);
                    // `other` loses where a > b under maximum (a < b under minimum).
                    let (self_lost, other_lost) = if keeps_larger {
                        (BinaryOp::Lt, BinaryOp::Gt)
                    } else {
                        (BinaryOp::Gt, BinaryOp::Lt)
                    };
                    let to_other = if mask[1] {
                        Some(shared_grad(g, a, b, other_lost)?)
                    } else {
                        None
                    };
                    let to_self = if mask[0] {
                        Some(shared_grad(g, a, b, self_lost)?)
                    } else {
                        None
                    };
                    Ok(vec![to_self, to_other])
                }),
            );
        }
        Ok(out)
    }

    /// `torch.remainder(self, other)` (Python's `%`): the remainder with the divisor's sign.
    pub fn remainder(&self, other: &Tensor) -> Result<Tensor> {
        no_gradient(&[self, other], "remainder")?;
        self.binary_raw(other, BinaryOp::Remainder)
    }

    /// `self % s` for a number `s` (`s % self` when `scalar_first`).
    pub fn remainder_scalar(&self, s: Scalar, scalar_first: bool) -> Result<Tensor> {
        no_gradient(&[self], "remainder")?;
        self.scalar_raw(BinaryOp::Remainder, s, scalar_first)
    }

    /// `torch.floor_divide(self, other)` (Python's `//`): the quotient rounded down.
    pub fn floor_divide(&self, other: &Tensor) -> Result<Tensor> {
        no_gradient(&[self, other], "floor_divide")?;
        self.binary_raw(other, BinaryOp::FloorDivide)
    }

    /// `self // s` for a number `s` (`s // self` when `scalar_first`).
    pub fn floor_divide_scalar(&self, s: Scalar, scalar_first: bool) -> Result<Tensor> {
        no_gradient(&[self], "floor_divide")?;
        self.scalar_raw(BinaryOp::FloorDivide, s, scalar_first)
    }

    /// `torch.lerp(self, end, weight)` for a number `weight`: `self + weight * (end - self)`.
    pub fn lerp(&self, end: &Tensor, weight: f64) -> Result<Tensor> {
        let out = self.binary_raw(end, BinaryOp::Lerp { weight })?;
        if needs_grad(&[self, end]) {
            record_multi(
                std::slice::from_ref(&out),
                "LerpBackward0",
                &[self, end],
                false,
                Box::new(move |grads, mask| {
                    let Some(g) = &grads[0] else {
                        return Ok(Vec::new());
                    };
                    let to_end = if mask[1] {
                        Some(g.mul_scalar(Scalar::Float(weight))?)
                    } else {
                        None
                    };
                    let to_self = if mask[0] {
                        Some(g.mul_scalar(Scalar::Float(1.0 - weight))?)
                    } else {
                        None
                    };
                    Ok(vec![to_self, to_end])
                }),
            );
        }
        Ok(out)
    }

    /// `torch.addcmul(self, t1, t2, value)`: `self + value * t1 * t2` in one output (PyTorch's
    /// single kernel: the product is formed in the result, no temporary).
    pub fn addcmul(&self, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
        super::check_interrupt()?;
        if t1.dtype() != self.dtype() || t2.dtype() != self.dtype() {
            return Err(TensorError::not_implemented(
                "torchlet: addcmul of tensors of different dtypes is not supported yet; convert them to one dtype first",
            ));
        }
        let shape = broadcast_shapes(&broadcast_shapes(self.dims(), t1.dims())?, t2.dims())?;
        let out = self.empty_same(&shape, self.dtype())?;
        let b = out.backend().clone();
        let (x, y, z) = (self.expand(&shape)?, t1.expand(&shape)?, t2.expand(&shape)?);
        b.binary(BinaryOp::Mul, y.operand(), z.operand(), out.operand())?;
        b.binary_scalar(
            BinaryOp::Mul,
            out.operand(),
            Scalar::Float(value),
            false,
            out.operand(),
        )?;
        b.binary(BinaryOp::Add, x.operand(), out.operand(), out.operand())?;
        if needs_grad(&[self, t1, t2]) {
            let (s1, s2) = (SavedTensor::new(t1)?, SavedTensor::new(t2)?);
            record_multi(
                std::slice::from_ref(&out),
                "AddcmulBackward0",
                &[self, t1, t2],
                true,
                Box::new(move |grads, mask| {
                    let Some(g) = &grads[0] else {
                        return Ok(Vec::new());
                    };
                    let (t1, t2) = (s1.get()?, s2.get()?);
                    let scaled_grad = |t: &Tensor| -> Result<Tensor> {
                        let scaled = t.mul_scalar(Scalar::Float(value))?;
                        g.mul(&scaled)
                    };
                    let to_t2 = if mask[2] {
                        Some(scaled_grad(t1)?)
                    } else {
                        None
                    };
                    let to_t1 = if mask[1] {
                        Some(scaled_grad(t2)?)
                    } else {
                        None
                    };
                    let to_self = if mask[0] { Some(g.clone()) } else { None };
                    Ok(vec![to_self, to_t1, to_t2])
                }),
            );
        }
        Ok(out)
    }
}

/// `where(a == b, g / 2, g).masked_fill_(a lost b, 0)`: the half gradient first, then the tie
/// mask, the choice and the loser mask (PyTorch evaluates `where`'s arguments last first), the
/// masks and the half freed with the expression.
fn shared_grad(g: &Tensor, a: &Tensor, b: &Tensor, lost: BinaryOp) -> Result<Tensor> {
    let half = g.div_scalar(Scalar::Int(2))?;
    let tie = a.compare(b, BinaryOp::Eq)?;
    let chosen = Tensor::where_(&tie, &half, g)?;
    let losing = a.compare(b, lost)?;
    chosen.masked_fill_(&losing, Scalar::Int(0))?;
    drop((losing, tie, half));
    Ok(chosen)
}

/// The refusal of a gradient torchlet does not compute for `op`.
fn no_gradient(inputs: &[&Tensor], op: &str) -> Result<()> {
    if needs_grad(inputs) {
        return Err(TensorError::not_implemented(format!(
            "torchlet: the gradient of {op} is not supported yet; compute it under torch.no_grad() or on .detach()"
        )));
    }
    Ok(())
}
