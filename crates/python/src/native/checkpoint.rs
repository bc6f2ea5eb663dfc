//! `torch.utils.checkpoint.checkpoint` (`use_reentrant=False`): the function runs in a core
//! checkpoint frame, and backward calls it again through the interpreter that runs `backward()`.
//!
//! Core's frame (see [`torchlet_core::autograd::checkpoint`]) keeps the placeholders; it only knows
//! a closure that runs the function again. The function (a Python callable with its arguments bound,
//! as PyTorch's recompute closure binds them) is registered with [`super::callbacks`] until the
//! frame's graph is gone.

use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use torchlet_core::autograd::checkpoint::Frame;

use super::callbacks::Registration;
use super::Native;

/// `_checkpoint(f)`: `f()` in a new frame; its saves become placeholders that backward fills by
/// calling `f` again.
fn checkpoint(vm: &VirtualMachine, f: PyObjectRef) -> PyResult {
    let registration = Registration::new(f.clone());
    let frame = Frame::new(Box::new(move || {
        registration.call(
            "the checkpointed function, run again by backward",
            |vm, f| f.call((), vm).map(drop),
        )
    }));
    let _forward = frame.enter_forward();
    f.call((), vm)
}

/// The checkpoint functions, by the name `torch.utils.checkpoint` calls them.
pub(crate) const FUNCTIONS: &[(&str, Native)] =
    &[("_checkpoint", |a| checkpoint(a.vm, a.get(0)?.clone()))];
