//! Comparisons (`eq ne lt le gt ge`) into bool tensors, and a tensor's truth value (`bool(t)`).

use crate::device::{BinaryOp, Device};

use super::math::result_type_scalar;
use super::{Result, Scalar, Tensor, TensorError};

impl Tensor {
    /// `self op other` elementwise with broadcasting, into a new bool tensor; `op` is one of the
    /// comparisons. Like PyTorch's, the result never requires grad.
    pub fn compare(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        debug_assert!(op.is_comparison());
        if self.device() != other.device() && other.device() == Device::Cpu && other.dim() == 0 {
            // A CPU 0-dim tensor next to a GPU tensor acts as a number, as in PyTorch.
            return self.compare_scalar(other.item()?, op, false);
        }
        if self.device() != other.device() && self.device() == Device::Cpu && self.dim() == 0 {
            return other.compare_scalar(self.item()?, op, true);
        }
        self.binary_raw(other, op)
    }

    /// `self op s` (`s op self` when `scalar_first`) into a new bool tensor.
    pub fn compare_scalar(&self, s: Scalar, op: BinaryOp, scalar_first: bool) -> Result<Tensor> {
        debug_assert!(op.is_comparison());
        // PyTorch compares in the promoted dtype: `float32 > 0.1` compares with 0.1 rounded to
        // float32, so a tensor made from 0.1 is not greater than 0.1. (An integer is compared
        // as it is: `uint8 < 300` is true, not a comparison with 300 wrapped to 44.)
        let promoted = result_type_scalar(self, s);
        let s = if promoted == self.dtype() && promoted.is_float() {
            s.cast(promoted)
        } else {
            s
        };
        self.scalar_raw(op, s, scalar_first)
    }

    /// Python's `bool(t)`: whether a one-element tensor is nonzero; PyTorch's error otherwise.
    pub fn truth(&self) -> Result<bool> {
        match self.numel() {
            1 => Ok(self.item()?.to_f64() != 0.0),
            0 => Err(TensorError::runtime(
                "Boolean value of Tensor with no values is ambiguous",
            )),
            _ => Err(TensorError::runtime(
                "Boolean value of Tensor with more than one value is ambiguous",
            )),
        }
    }
}

impl Tensor {
    /// `self & other` or `self | other` of two bool tensors (PyTorch's bitwise kernels on
    /// bools): one bool tensor, broadcast.
    pub fn bool_logic(&self, other: &Tensor, or: bool) -> Result<Tensor> {
        if self.dtype() != super::DType::Bool || other.dtype() != super::DType::Bool {
            return Err(TensorError::runtime(format!(
                "torchlet: {} runs on bool tensors only yet (no integer bitwise ops)",
                if or { "|" } else { "&" }
            )));
        }
        self.binary_raw(other, if or { BinaryOp::Maximum } else { BinaryOp::Mul })
    }
}
