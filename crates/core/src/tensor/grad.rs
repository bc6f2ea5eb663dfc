//! Autograd state on a tensor: requires_grad, `.grad`, `grad_fn`, `backward`.

use std::sync::Arc;

use crate::autograd::Node;

use super::{Result, Tensor, TensorError};

impl Tensor {
    /// Whether gradients flow to or through this tensor.
    pub fn requires_grad(&self) -> bool {
        self.meta().requires_grad
    }

    /// Make a leaf require grad (or not), as `t.requires_grad = b`.
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        if !self.is_leaf() {
            return Err(TensorError::runtime(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
            ));
        }
        if requires_grad && !self.dtype().is_float() {
            return Err(TensorError::runtime(
                "only Tensors of floating point and complex dtype can require gradients",
            ));
        }
        if requires_grad && self.is_inference() && !crate::autograd::is_inference_mode() {
            return Err(TensorError::runtime(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.",
            ));
        }
        self.meta().requires_grad = requires_grad;
        if requires_grad {
            self.mark_role(torchlet_alloc::Role::Parameter);
        }
        Ok(())
    }

    /// Tell the allocator what this tensor's memory holds (the breakdown at each peak).
    pub(crate) fn mark_role(&self, role: torchlet_alloc::Role) {
        self.inner.storage.set_role(role);
    }

    /// The accumulated gradient of a leaf.
    pub fn grad(&self) -> Option<Tensor> {
        self.meta().grad.clone()
    }

    /// Replace `.grad` (`None` frees it), checking it fits this tensor as PyTorch does.
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            if g.device() != self.device() {
                return Err(TensorError::runtime(
                    "assigned grad has data located on a different device",
                ));
            }
            if g.dtype() != self.dtype() {
                return Err(TensorError::runtime(
                    "assigned grad has data of a different type",
                ));
            }
            if g.dims() != self.dims() {
                return Err(TensorError::runtime(
                    "assigned grad has data of a different size",
                ));
            }
        }
        self.set_grad_unchecked(grad);
        Ok(())
    }

    pub(crate) fn set_grad_unchecked(&self, grad: Option<Tensor>) {
        if let Some(g) = &grad {
            g.mark_role(torchlet_alloc::Role::Gradient);
        }
        let old = std::mem::replace(&mut self.meta().grad, grad);
        // The old gradient is freed after the lock is released.
        drop(old);
    }

    /// `.grad += g` without recording (gradient accumulation).
    pub(crate) fn add_grad_in_place(&self, g: &Tensor) -> Result<()> {
        let _mode = crate::autograd::no_grad();
        self.binary_into_self(g, crate::device::BinaryOp::Add)
    }

    /// The node that made this tensor, if it was recorded.
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        self.meta().grad_fn.clone()
    }

    /// The name of `grad_fn`, e.g. "MulBackward0".
    pub fn grad_fn_name(&self) -> Option<String> {
        self.meta().grad_fn.as_ref().map(|n| n.name().to_string())
    }

    /// Whether the tensor was made by the user rather than recorded by an op.
    pub fn is_leaf(&self) -> bool {
        self.meta().grad_fn.is_none()
    }

    pub(crate) fn set_history(&self, node: Arc<Node>, output_nr: usize) {
        let mut m = self.meta();
        m.requires_grad = true;
        m.grad_fn = Some(node);
        m.output_nr = output_nr;
    }

    /// Compute gradients of this scalar with respect to the leaves that require grad.
    pub fn backward(&self, retain_graph: bool) -> Result<()> {
        super::check_interrupt()?;
        crate::autograd::backward(self, retain_graph)
    }

    /// `self.backward(gradient)`: the pass starts from `gradient`, shaped as `self`.
    pub fn backward_with(&self, gradient: &Tensor, retain_graph: bool) -> Result<()> {
        super::check_interrupt()?;
        crate::autograd::backward_from(self, Some(gradient), retain_graph)
    }

    /// The same data, cut from the graph (shares memory).
    pub fn detach(&self) -> Result<Tensor> {
        Ok(self.data_handle())
    }
}
