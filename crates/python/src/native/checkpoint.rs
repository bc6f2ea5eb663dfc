//! `torch.utils.checkpoint.checkpoint` (`use_reentrant=False`): the function runs in a core
//! checkpoint frame, and backward calls it again through the interpreter that runs `backward()`.
//!
//! Core's frame (see [`torchlet_core::autograd::checkpoint`]) keeps the placeholders; it only knows
//! a closure that runs the function again. The function (a Python callable with its arguments bound,
//! as PyTorch's recompute closure binds them) waits in a per-thread table until the frame's graph is
//! gone, and `backward()` lends its interpreter to the recomputation for as long as it runs.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use torchlet_core::autograd::checkpoint::Frame;
use torchlet_core::tensor::{Result, TensorError};

use super::Native;

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The function of each live frame, by id.
    static CALLS: RefCell<HashMap<u64, PyObjectRef>> = RefCell::new(HashMap::new());
    /// The interpreter of the `backward()` running on this thread, if any.
    static INTERPRETER: Cell<Option<*const VirtualMachine>> = const { Cell::new(None) };
}

/// Removes a frame's function from the table when the frame (its graph) goes.
struct Registration(u64);

impl Drop for Registration {
    fn drop(&mut self) {
        let call = CALLS.with(|c| c.borrow_mut().remove(&self.0));
        drop(call);
    }
}

/// Run `f` (a backward) with `vm` lent to any recomputation it triggers.
pub(crate) fn lending_interpreter<R>(vm: &VirtualMachine, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<*const VirtualMachine>);
    impl Drop for Restore {
        fn drop(&mut self) {
            INTERPRETER.with(|c| c.set(self.0));
        }
    }
    let outer = INTERPRETER.with(|c| c.replace(Some(vm as *const VirtualMachine)));
    let _restore = Restore(outer);
    f()
}

/// Call frame `id`'s function again, in the interpreter lent by `backward()`.
fn recompute(id: u64) -> Result<()> {
    let call = CALLS.with(|c| c.borrow().get(&id).cloned());
    let f = call.ok_or_else(|| TensorError::runtime("checkpoint: the function is gone"))?;
    let Some(vm) = INTERPRETER.with(Cell::get) else {
        return Err(TensorError::runtime(
            "checkpoint: backward needs to run the checkpointed function again; call backward() from Python",
        ));
    };
    // SAFETY: set by `lending_interpreter` on this thread from a live reference, and restored
    // before that reference's call returns; the recomputation runs inside that call.
    let vm = unsafe { &*vm };
    let done = super::site::around_callback(|| f.call((), vm));
    done.map(drop).map_err(|e| {
        let mut text = String::new();
        let _ = vm.write_exception(&mut text, &e);
        TensorError::runtime(format!(
            "in the checkpointed function, run again by backward:\n{}",
            text.trim_end()
        ))
    })
}

/// `_checkpoint(f)`: `f()` in a new frame; its saves become placeholders that backward fills by
/// calling `f` again.
fn checkpoint(vm: &VirtualMachine, f: PyObjectRef) -> PyResult {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    CALLS.with(|c| c.borrow_mut().insert(id, f.clone()));
    let registration = Registration(id);
    let frame = Frame::new(Box::new(move || {
        let _keep = &registration;
        recompute(id)
    }));
    let _forward = frame.enter_forward();
    f.call((), vm)
}

/// The checkpoint functions, by the name `torch.utils.checkpoint` calls them.
pub(crate) const FUNCTIONS: &[(&str, Native)] =
    &[("_checkpoint", |a| checkpoint(a.vm, a.get(0)?.clone()))];
